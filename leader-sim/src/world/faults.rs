//! The plan's faults, as they strike: a node paused, crashed, cut off or slowed, a wall
//! clock stepped, the store's data lost or rolled back; each written down as a fault span
//! the checker reads.

use leader_history::{FaultKind as HistoryFault, FaultSpan, What};

use super::{Ev, World};
use crate::plan::{FaultKind, Profile};

impl World<'_> {
    pub(super) fn fault(&mut self, i: usize) {
        let Some(fault) = self.plan.faults.get(i).copied() else {
            return;
        };
        let t = self.t;
        match fault.kind {
            FaultKind::Pause { node, ms } => {
                let n = node as usize % self.nodes.len();
                self.pause(n, t + ms * 1_000);
            }
            FaultKind::Crash { node, down_ms } => {
                let n = node as usize % self.nodes.len();
                if self.faults_of[n].down {
                    return;
                }
                self.faults_of[n].down = true;
                self.faults_of[n].paused_until = 0;
                self.nodes[n].crash();
                self.log(n, What::NodeStopped);
                let back = t + down_ms * 1_000 + 1;
                self.spans.push(FaultSpan {
                    kind: HistoryFault::Kill { worker: n as u32 },
                    start: t,
                    end: back,
                });
                self.push(back, Ev::Restart { node: n as u32 });
            }
            FaultKind::Partition { node, ms } => {
                let n = node as usize % self.nodes.len();
                let until = t + ms * 1_000;
                let f = &mut self.faults_of[n];
                f.partitioned_until = f.partitioned_until.max(until);
                self.spans.push(FaultSpan {
                    kind: HistoryFault::Blackhole,
                    start: t,
                    end: until,
                });
            }
            FaultKind::SlowLink { node, ms, extra_ms } => {
                let n = node as usize % self.nodes.len();
                let until = t + ms * 1_000;
                let f = &mut self.faults_of[n];
                f.slow_until = f.slow_until.max(until);
                f.slow_extra_us = extra_ms * 1_000;
                self.spans.push(FaultSpan {
                    kind: HistoryFault::Blackhole,
                    start: t,
                    end: until + extra_ms * 1_000,
                });
            }
            FaultKind::LoseAll => {
                self.store.lose_all();
                let kind = match self.plan.profile {
                    Profile::Redis => HistoryFault::Restart { data_lost: true },
                    _ => HistoryFault::Wipe { rows: 1 },
                };
                self.spans.push(FaultSpan {
                    kind,
                    start: t,
                    end: t,
                });
            }
            FaultKind::ClockStep { node, ms } => {
                // Only what a client sends with its calls reads the wall clock: the
                // engine's deadlines are monotonic, which is what this checks.
                let n = node as usize % self.nodes.len();
                self.nodes[n].clock.step_wall(ms.saturating_mul(1_000));
            }
            FaultKind::RollBack { ms } => {
                let now = self.store_clock.local_us(t);
                self.store.roll_back(now.saturating_sub(ms * 1_000));
                self.spans.push(FaultSpan {
                    kind: HistoryFault::Failover { data_lost: true },
                    start: t.saturating_sub(ms * 1_000),
                    end: t,
                });
            }
            FaultKind::Resign { node } => self.resign(i, node),
        }
    }
}
