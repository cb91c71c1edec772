//! The faults: which kinds a run draws from, the seeded schedule, and injecting one.
//!
//! One fault at a time: the schedule draws a gap (1–3 s), then a kind by weight, then its
//! target and duration, all from one RNG seeded by `--seed`. The times at which faults
//! land still depend on the machine, so a seed fixes the sequence, not the interleaving.

use std::io;
use std::thread;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::checker::FaultSpan;
use crate::event::{FaultKind, describe, now_us};
use crate::orchestrator::Lab;
use crate::worker::{LOCK, worker_of};
use crate::workers::signal;

/// A kind of fault a run may inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// kill -9 a worker, start it again after a moment.
    Kill,
    /// SIGSTOP the current holder for longer than the lease, then SIGCONT.
    Pause,
    /// Restart the lock server (Redis loses its data, MongoDB keeps it).
    Restart,
    /// Drop all traffic at the proxy for a while, then heal.
    Blackhole,
    /// Reset every connection through the proxy.
    Reset,
}

impl Class {
    /// Every kind.
    pub const ALL: [Class; 5] = [
        Class::Kill,
        Class::Pause,
        Class::Restart,
        Class::Blackhole,
        Class::Reset,
    ];

    /// The kind a `--faults` name means.
    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its `--faults` name.
    pub fn name(self) -> &'static str {
        match self {
            Class::Kill => "kill",
            Class::Pause => "pause",
            Class::Restart => "restart",
            Class::Blackhole => "blackhole",
            Class::Reset => "reset",
        }
    }

    /// How often it is drawn, relative to the others.
    fn weight(self) -> u32 {
        match self {
            Class::Pause => 3,
            Class::Kill | Class::Restart | Class::Blackhole => 2,
            Class::Reset => 1,
        }
    }
}

/// The seeded fault schedule.
#[derive(Debug)]
pub struct Schedule {
    rng: StdRng,
    classes: Vec<Class>,
}

impl Schedule {
    /// A schedule drawing from `classes`, seeded by `seed`.
    pub fn new(seed: u64, classes: Vec<Class>) -> Self {
        Schedule {
            rng: StdRng::seed_from_u64(seed),
            classes,
        }
    }

    /// How long to wait before the next fault.
    pub fn gap(&mut self) -> Duration {
        Duration::from_millis(self.rng.random_range(1000..3000))
    }

    /// The next kind of fault, `None` when the run injects none.
    pub fn next_class(&mut self) -> Option<Class> {
        let total: u32 = self.classes.iter().map(|c| c.weight()).sum();
        if total == 0 {
            return None;
        }
        let mut pick = self.rng.random_range(0..total);
        for class in &self.classes {
            if pick < class.weight() {
                return Some(*class);
            }
            pick -= class.weight();
        }
        None
    }

    /// Injects one fault of `class` and waits until it is over.
    ///
    /// # Errors
    ///
    /// When a worker or the lock server cannot be started again, or a signal cannot be
    /// sent: the run cannot go on.
    pub fn inject(&mut self, class: Class, lab: &mut Lab) -> io::Result<FaultSpan> {
        let lease = lab.lease;
        let rng = &mut self.rng;
        let kind = match class {
            Class::Kill => FaultKind::Kill {
                worker: rng.random_range(1..=lab.workers.count()),
            },
            Class::Pause => FaultKind::Pause {
                worker: holder(lab).unwrap_or_else(|| rng.random_range(1..=lab.workers.count())),
            },
            Class::Restart => FaultKind::Restart {
                data_lost: lab.restart_loses_data,
            },
            Class::Blackhole => FaultKind::Blackhole,
            Class::Reset => FaultKind::Reset,
        };
        lab.journal.say(&format!("fault: {}", describe(kind)));
        let start = now_us();
        match kind {
            FaultKind::Kill { worker } => {
                lab.workers.kill(worker, &mut lab.journal);
                thread::sleep(Duration::from_millis(rng.random_range(300..1500)));
                lab.workers.spawn(worker, &mut lab.journal)?;
            }
            FaultKind::Pause { worker } => {
                if let Some(pid) = lab.workers.pid(worker) {
                    signal(pid, "STOP")?;
                    thread::sleep(lease + Duration::from_millis(rng.random_range(500..2000)));
                    signal(pid, "CONT")?;
                }
            }
            FaultKind::Restart { .. } => {
                lab.server.restart()?;
            }
            FaultKind::Blackhole => {
                lab.proxy.blackhole();
                thread::sleep(Duration::from_millis(rng.random_range(1000..4000)));
                lab.proxy.heal();
            }
            FaultKind::Reset => lab.proxy.reset(),
        }
        let span = FaultSpan {
            kind,
            start,
            end: now_us(),
        };
        lab.journal.fault(span)?;
        Ok(span)
    }
}

/// The worker holding the lock now, asked of the lock server directly (not through the
/// proxy), retried for about a second while the lock is free.
fn holder(lab: &Lab) -> Option<u32> {
    for _ in 0..10 {
        let state = lab.observer.state(LOCK).ok();
        if let Some(worker) = state.and_then(|s| s.leader().and_then(|l| worker_of(&l.leader_id))) {
            return Some(worker);
        }
        thread::sleep(Duration::from_millis(100));
    }
    None
}
