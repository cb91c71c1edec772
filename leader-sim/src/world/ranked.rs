//! Ranked campaigns in the world: resignations as they strike, and the ranked liveness
//! check (`Outcome::rank_ignored`).
//!
//! The check: when nothing has disturbed the run for [`RANKED_SETTLE_LEASES`] leases — no
//! fault span of any kind (a node paused, killed, cut off or slowed, a message lost, held
//! back or duplicated, data lost), no resignation, and every candidate campaigning since
//! before that — the lock must be held, and by a candidate of the best live rank unless
//! its holder does not preempt. Why that window is enough, with no fault: a dead
//! candidate's record and lock run out within a lease; a live one's record is renewed
//! every heartbeat (a standby's rounds are at most a heartbeat apart); a preempting
//! leader surveys after every renewal (a heartbeat) and hands over when its survey sees a
//! better rank; the best candidate's next round (a heartbeat, or at once when the store
//! notifies) finds no better rank and takes the free lock; a worse standby that took the
//! lock on a survey made before the best's record was written is preempted in turn, at
//! most once more; a restarted candidate's new record is written within a heartbeat of its
//! old one running out. That is a lease and about six heartbeats plus a few round trips (a
//! few ms); the window is a lease and eight heartbeats.

use super::{Ev, World};

/// How long the run must have been quiet before the ranked check judges, in heartbeats
/// (a fifth of a lease each): a lease and eight.
pub const RANKED_SETTLE_HEARTBEATS: u64 = 13;

impl World<'_> {
    /// The plan's resignation of node `node` (fault `i`): a paused node resigns when it
    /// goes on (its application's thread is frozen too); a node that is down has nothing
    /// to resign.
    pub(super) fn resign(&mut self, i: usize, node: u32) {
        let n = node as usize % self.nodes.len();
        let faults = self.faults_of[n];
        if faults.down {
            return;
        }
        if faults.paused_until > self.t {
            self.push(faults.paused_until, Ev::Fault(i));
            return;
        }
        self.resigned_at = Some(self.t);
        self.drive(n, |node, t, fx| node.resign(t, fx));
    }

    /// How often the ranked check runs: every heartbeat (a fifth of a lease).
    pub(super) fn ranked_check_every(&self) -> u64 {
        (self.plan.lease_ms * 1_000 / 5).max(1)
    }

    fn settle_us(&self) -> u64 {
        self.ranked_check_every() * RANKED_SETTLE_HEARTBEATS
    }

    /// The ranked liveness check at the current time (see the module's docs).
    pub(super) fn check_ranked(&mut self) {
        self.push(self.t + self.ranked_check_every(), Ev::CheckRanked);
        let window = self.settle_us();
        let Some(from) = self.t.checked_sub(window) else {
            return;
        };
        let disturbed = self
            .spans
            .iter()
            .any(|f| f.end >= from && f.start <= self.t)
            || self.resigned_at.is_some_and(|at| at >= from);
        if disturbed {
            return;
        }
        // Every candidate, up and campaigning since before the window.
        let mut candidates = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            if self.faults_of[n].down {
                continue;
            }
            if let Some((since, rank, preempt)) = node.candidate() {
                if since > from {
                    return;
                }
                candidates.push((n, rank, preempt));
            }
        }
        let Some(best) = candidates.iter().map(|c| c.1).max() else {
            return;
        };
        self.ranked_checks += 1;
        let now = self.store_clock.local_us(self.t);
        let holder = self
            .store
            .holders(now)
            .find(|r| r.slot == 0)
            .map(|r| r.node);
        let t = self.t;
        match holder {
            None => self.rank_ignored.push(format!(
                "at {t} µs nobody held the lock, with no fault since {from} µs (best live rank {best})"
            )),
            Some(node) => match candidates.iter().find(|c| c.0 == node as usize) {
                None => self.rank_ignored.push(format!(
                    "at {t} µs node {node}, not a candidate, held the lock, with no fault since {from} µs"
                )),
                Some(&(_, rank, true)) if rank < best => self.rank_ignored.push(format!(
                    "at {t} µs node {node} (rank {rank}, preempting) held the lock below the live rank {best}, with no fault since {from} µs"
                )),
                Some(_) => {}
            },
        }
    }
}
