//! Orphans: acquisitions a node gave up (answered late or not at all, a release that
//! failed), released in the background in rounds, as `leader-blocking`'s orphan releases
//! do, with the engine's `Orphan` deciding when to try again and when to stop.

use std::time::Instant;

use leader_core::__private::Orphan;
use leader_core::{Error, OwnerToken, ReleaseOutcome};

use super::{Effect, Node, Purpose, Timer};
use crate::store::Call;

/// An orphan being released, and this round's answers.
#[derive(Debug)]
pub(super) struct PendingOrphan {
    id: u64,
    orphan: Orphan,
    /// This round's answers so far, one per lease in order.
    answers: Vec<Result<ReleaseOutcome, Error>>,
}

impl Node<'_> {
    /// Takes `orphan` into the background releases: its first release goes out now.
    /// `owner` is what the orphan gives up, if the node holds nothing else with it: the
    /// store must not keep a lock for it past a few round trips (the world checks).
    pub(super) fn adopt(
        &mut self,
        orphan: Orphan,
        owner: Option<OwnerToken>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        if let Some(owner) = owner {
            fx.push(Effect::Abandoned { owner });
        }
        self.next_id += 1;
        let id = self.next_id;
        self.orphans.push(PendingOrphan {
            id,
            orphan,
            answers: Vec::new(),
        });
        self.release_orphan(id, now, t, fx);
    }

    pub(super) fn release_orphan(&mut self, id: u64, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(pending) = self.orphans.iter().find(|o| o.id == id) else {
            return;
        };
        // The next lease of this round.
        let Some(lease) = pending.orphan.leases().get(pending.answers.len()) else {
            return;
        };
        let call = Call::Release {
            owner: lease.owner,
            slot: self.slot_of(&lease.key),
        };
        self.send(Purpose::Orphan(id), call, now, t, fx);
    }

    pub(super) fn orphan_answered(
        &mut self,
        id: u64,
        answer: Result<ReleaseOutcome, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(i) = self.orphans.iter().position(|o| o.id == id) else {
            return;
        };
        let pending = &mut self.orphans[i];
        let ends_round = Orphan::ends_round(&answer);
        pending.answers.push(answer);
        if !ends_round && pending.answers.len() < pending.orphan.leases().len() {
            // The round goes on with the next lease (the shells release them in turn).
            self.release_orphan(id, now, t, fx);
            return;
        }
        let answers = std::mem::take(&mut pending.answers);
        match pending.orphan.after_releases(&answers, now) {
            Some(delay) => fx.push(Effect::Wake {
                at: now + delay,
                timer: Timer::OrphanDue(id),
            }),
            None => {
                self.orphans.swap_remove(i);
            }
        }
    }
}
