//! Batched calls, for tenant pollers: one acquire, extend or release call about many
//! locks (tenants), each item answered on its own by the rules of its single call, as the
//! backends' `try_acquire_batch`, `extend_batch` and `release_batch` do.
//!
//! A real batch can fail one item alone: PostgreSQL's extend batch skips a row another
//! session holds locked for a moment (a transient error for that lease only, which the
//! engine renews again alone), a Redis pipeline answers each key on its own. With
//! [`ModelStore::with_partial_batches`] one item in `one_in` fails that way: it is not
//! applied, and its answer is [`Answer::Failed`]. The store also keeps every grant it
//! made (a new owner's record), for tests to check a run's acquisitions against.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Answer, Call, ModelStore, Record};

/// The batches' own state.
#[derive(Debug, Clone, Default)]
pub(super) struct Batches {
    /// Items failing alone: the draws, and one in how many.
    partial: Option<(StdRng, u32)>,
    /// Every grant: (slot, token, node).
    grants: Vec<(u32, u64, u32)>,
}

impl Batches {
    pub(super) fn granted(&mut self, record: &Record) {
        self.grants.push((record.slot, record.token, record.node));
    }

    /// Whether the next item fails alone.
    fn fails(&mut self) -> bool {
        match &mut self.partial {
            Some((draws, one_in)) => *one_in > 0 && draws.random_ratio(1, *one_in),
            None => false,
        }
    }
}

impl ModelStore {
    /// A store whose batches fail one item in `one_in` alone (not applied, answered
    /// [`Answer::Failed`]), drawn from `seed`.
    pub fn with_partial_batches(mut self, seed: u64, one_in: u32) -> Self {
        self.batches.partial = Some((StdRng::seed_from_u64(seed), one_in));
        self
    }

    /// Every grant the store made (a record for a new owner), in order: (slot, token,
    /// node).
    pub fn grants(&self) -> &[(u32, u64, u32)] {
        &self.batches.grants
    }

    /// Answers a batched call at store time `now`: [`Answer::Batch`], one answer per item
    /// in order, each item applied on its own as its single call would be.
    pub(super) fn answer_batch(&mut self, call: Call, now: u64, client_us: u64) -> Answer {
        let answers = match call {
            Call::AcquireBatch {
                node,
                lease_us,
                tries,
            } => tries
                .into_iter()
                .map(|(owner, slot)| {
                    if self.batches.fails() {
                        Answer::Failed
                    } else {
                        self.try_slot(slot, owner, node, lease_us, now, client_us)
                    }
                })
                .collect(),
            Call::ExtendBatch { lease_us, leases } => leases
                .into_iter()
                .map(|(owner, slot)| {
                    if self.batches.fails() {
                        Answer::Failed
                    } else {
                        let extend = Call::Extend {
                            owner,
                            slot,
                            lease_us,
                        };
                        self.answer(extend, now, client_us)
                    }
                })
                .collect(),
            Call::ReleaseBatch { leases } => leases
                .into_iter()
                .map(|(owner, slot)| {
                    if self.batches.fails() {
                        Answer::Failed
                    } else {
                        self.answer(Call::Release { owner, slot }, now, client_us)
                    }
                })
                .collect(),
            single => vec![self.answer(single, now, client_us)],
        };
        Answer::Batch(answers)
    }
}

#[cfg(test)]
mod tests {
    use leader_core::OwnerToken;

    use super::*;
    use crate::plan::Profile;

    #[test]
    fn each_item_of_a_batch_is_answered_on_its_own() {
        let mut store = ModelStore::new(Profile::Sql, 3);
        let (a, b) = (OwnerToken::from_u128(1), OwnerToken::from_u128(2));
        store.try_slot(1, b, 1, 100, 0, 0);
        let acquire = Call::AcquireBatch {
            node: 0,
            lease_us: 100,
            tries: vec![(a, 0), (a, 1), (a, 2)],
        };
        let Answer::Batch(answers) = store.answer(acquire, 10, 0) else {
            panic!()
        };
        assert!(matches!(&answers[0], Answer::Acquired(r) if r.slot == 0 && r.token == 1));
        assert!(matches!(&answers[1], Answer::Held(r) if r.owner == b));
        assert!(matches!(&answers[2], Answer::Acquired(r) if r.slot == 2));
        // Three grants: slot 1 to b, slots 0 and 2 to a.
        assert_eq!(store.grants().len(), 3);
        let extend = Call::ExtendBatch {
            lease_us: 100,
            leases: vec![(a, 0), (a, 1)],
        };
        assert_eq!(
            store.answer(extend, 50, 0),
            Answer::Batch(vec![Answer::Extended { expires: 150 }, Answer::NotHeld])
        );
        let release = Call::ReleaseBatch {
            leases: vec![(a, 2), (a, 0)],
        };
        assert_eq!(
            store.answer(release, 60, 0),
            Answer::Batch(vec![Answer::Released, Answer::Released])
        );
        assert_eq!(store.holders(60).count(), 1);
    }

    #[test]
    fn a_partial_batch_fails_items_alone_and_applies_none_of_them() {
        let mut store = ModelStore::new(Profile::Sql, 8).with_partial_batches(7, 2);
        let owner = OwnerToken::from_u128(1);
        let acquire = Call::AcquireBatch {
            node: 0,
            lease_us: 100,
            tries: (0..8).map(|slot| (owner, slot)).collect(),
        };
        let Answer::Batch(answers) = store.answer(acquire, 0, 0) else {
            panic!()
        };
        let failed = answers.iter().filter(|a| **a == Answer::Failed).count();
        assert!((1..8).contains(&failed), "{answers:?}");
        // What failed was not taken; the rest was.
        assert_eq!(store.holders(1).count(), 8 - failed);
    }
}
