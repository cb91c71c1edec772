//! The model store: the records of one lock's slots (one slot for a lock, several for a
//! leader group), their fencing counters, expiry on the store's own clock, and the data
//! loss of each [`Profile`] — what the backends' contract suite checks of every real
//! store, written small enough to run millions of times.
//!
//! It answers the calls an elector makes (acquire, extend, release) as the backends do:
//! an owner's repeated acquire renews what it holds (a retried request whose answer was
//! lost takes nothing twice); a record past its expiry is free; extend and release
//! succeed only for the owner of a live record. A group's acquire tries its slots in the
//! request's order, the caller's own slot first, in one step — or, for a store whose
//! slots are separate calls (a backend that tries one slot per call, as a third-party
//! backend may), one slot per step ([`ModelStore::try_slot`]), with no own-slot check
//! across slots.
//!
//! It also keeps a scheduled job's run record (`records.rs`): versioned, written only by
//! compare-and-set.

mod records;

use std::collections::VecDeque;

use leader_core::OwnerToken;

use crate::plan::Profile;

mod listing;
mod tenants;

pub use listing::PAGE;

/// The holder's record of one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The slot.
    pub slot: u32,
    /// The acquisition's owner token.
    pub owner: OwnerToken,
    /// The holder's node.
    pub node: u32,
    /// Its fencing token.
    pub token: u64,
    /// When it expires, on the store's clock, µs.
    pub expires: u64,
}

/// A call the store answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Take one of `slots` (tried in that order; one slot for a lock), or renew the one
    /// the owner holds, for `lease_us`.
    Acquire {
        /// The acquisition's owner token.
        owner: OwnerToken,
        /// The caller's node.
        node: u32,
        /// The lease asked for.
        lease_us: u64,
        /// The slots, in the order they are tried.
        slots: Vec<u32>,
    },
    /// Extend the owner's live lease on `slot` by `lease_us` from now.
    Extend {
        /// The owner token.
        owner: OwnerToken,
        /// The slot.
        slot: u32,
        /// The lease asked for.
        lease_us: u64,
    },
    /// Free the owner's lease on `slot`.
    Release {
        /// The owner token.
        owner: OwnerToken,
        /// The slot.
        slot: u32,
    },
    /// A tenant poller's batched acquire: each `(owner, slot)` tried on its own, as
    /// [`ModelStore::try_slot`] does, answered with [`Answer::Batch`] in their order.
    AcquireBatch {
        /// The caller's node.
        node: u32,
        /// The lease asked for.
        lease_us: u64,
        /// The requests: each its own owner token and slot (tenant).
        tries: Vec<(OwnerToken, u32)>,
    },
    /// A batched extend: each `(owner, slot)` extended on its own by `lease_us`.
    ExtendBatch {
        /// The lease asked for.
        lease_us: u64,
        /// The leases.
        leases: Vec<(OwnerToken, u32)>,
    },
    /// A batched release: each `(owner, slot)` freed on its own.
    ReleaseBatch {
        /// The leases.
        leases: Vec<(OwnerToken, u32)>,
    },
    /// Read the job's record.
    ReadRecord,
    /// Write the job's record over version `expected` (`None`: only if there is none).
    WriteRecord {
        /// The version the write expects.
        expected: Option<u64>,
        /// The new value.
        value: String,
    },
    /// List the live records of `slots` (a ranked campaign's membership records: what a
    /// backend's listing of the prefix `<key>#rank:` answers), one page after `after`.
    List {
        /// The records (lock indices) the prefix covers.
        slots: Vec<u32>,
        /// The previous page's cursor: the last index it covered.
        after: Option<u32>,
    },
}

/// The store's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Acquired (or renewed by its owner): the record.
    Acquired(Record),
    /// Every slot held by other owners: the first held slot's record.
    Held(Record),
    /// Extended until `expires` (store clock).
    Extended {
        /// The new expiry.
        expires: u64,
    },
    /// Released.
    Released,
    /// The caller holds nothing (expired, released, taken by another).
    NotHeld,
    /// A batch's answers, one per item in order.
    Batch(Vec<Answer>),
    /// One item of a batch failed with a transient error (the batch skipped a row
    /// another session held locked, one key's reply was lost): see
    /// [`ModelStore::with_partial_batches`].
    Failed,
    /// The job's record: its version and value (`None`: there is none).
    Record(Option<(u64, String)>),
    /// The record was written; it has `version` now.
    RecordWritten {
        /// The new version.
        version: u64,
    },
    /// The record's version was not the one expected: nothing changed.
    RecordConflict,
    /// One page of the live records a listing asked for, in slot order.
    Listed {
        /// The page's records.
        records: Vec<Record>,
        /// The next page's cursor (the last index this page covered), `None` when this
        /// is the last page.
        next: Option<u32>,
    },
}

/// One lock (or group) on a store with `profile`'s semantics.
#[derive(Debug, Clone)]
pub struct ModelStore {
    profile: Profile,
    records: Vec<Option<Record>>,
    /// The last token handed out, per slot (Redis: the counter key; SQL: the counter
    /// column); etcd's revision is one for the store (slot 0's entry).
    counters: Vec<u64>,
    /// Past states, newest last, for a roll-back (Redis only): (store time, records,
    /// counters).
    past: VecDeque<(u64, Vec<Option<Record>>, Vec<u64>)>,
    /// Planted in the store, not the engine: a new token is the caller's clock reading.
    token_from_client_clock: bool,
    /// Batches: which items fail on their own, and the grants (see `tenants.rs`).
    batches: tenants::Batches,
    /// The job's run record: version and value.
    record: Option<(u64, String)>,
    /// Its past states, newest last, for a roll-back (Redis only): (store time, record).
    record_past: VecDeque<(u64, Option<(u64, String)>)>,
    /// Planted in the store: a listing answers no record (see [`listing`]).
    listing_misses_records: bool,
}

/// How much history a roll-back can reach, in writes.
const PAST_KEPT: usize = 64;

impl ModelStore {
    /// An empty store with `slots` slots (1 for a lock).
    pub fn new(profile: Profile, slots: u32) -> Self {
        let slots = slots.max(1) as usize;
        ModelStore {
            profile,
            records: vec![None; slots],
            counters: vec![0; slots],
            past: VecDeque::new(),
            token_from_client_clock: false,
            batches: tenants::Batches::default(),
            record: None,
            record_past: VecDeque::new(),
            listing_misses_records: false,
        }
    }

    /// A defective store whose new tokens are the caller's clock in µs (a backend that
    /// took the token from the client's clock).
    pub fn with_token_from_client_clock(mut self) -> Self {
        self.token_from_client_clock = true;
        self
    }

    /// The live records at store time `now`.
    pub fn holders(&self, now: u64) -> impl Iterator<Item = &Record> {
        self.records
            .iter()
            .flatten()
            .filter(move |r| r.expires > now)
    }

    fn live(&self, slot: u32, now: u64) -> Option<Record> {
        self.records
            .get(slot as usize)
            .cloned()
            .flatten()
            .filter(|r| r.expires > now)
    }

    /// Answers `call` at store time `now` (µs); `client_us` is the caller's clock reading
    /// sent with it. An acquire is one step: the owner's live slot first, then the first
    /// free one in order.
    pub fn answer(&mut self, call: Call, now: u64, client_us: u64) -> Answer {
        match call {
            Call::Acquire {
                owner,
                node,
                lease_us,
                slots,
            } => {
                let own = slots
                    .iter()
                    .copied()
                    .find(|&s| self.live(s, now).is_some_and(|r| r.owner == owner));
                let free = slots.iter().copied().find(|&s| self.live(s, now).is_none());
                match own.or(free) {
                    Some(slot) => self.try_slot(slot, owner, node, lease_us, now, client_us),
                    None => {
                        let first = slots.first().copied().unwrap_or(0);
                        match self.live(first, now) {
                            Some(held) => Answer::Held(held),
                            None => Answer::NotHeld,
                        }
                    }
                }
            }
            Call::Extend {
                owner,
                slot,
                lease_us,
            } => match self.live(slot, now) {
                Some(mut held) if held.owner == owner => {
                    held.expires = now.saturating_add(lease_us);
                    let expires = held.expires;
                    self.write(now, slot, Some(held));
                    Answer::Extended { expires }
                }
                _ => Answer::NotHeld,
            },
            Call::Release { owner, slot } => match self.live(slot, now) {
                Some(held) if held.owner == owner => {
                    self.write(now, slot, None);
                    Answer::Released
                }
                _ => Answer::NotHeld,
            },
            batch @ (Call::AcquireBatch { .. }
            | Call::ExtendBatch { .. }
            | Call::ReleaseBatch { .. }) => self.answer_batch(batch, now, client_us),
            Call::ReadRecord => self.read_record(),
            Call::WriteRecord { expected, value } => self.write_record(expected, value, now),
            Call::List { slots, after } => {
                let (records, next) = self.list(&slots, after, now);
                Answer::Listed { records, next }
            }
        }
    }

    /// One slot's acquire: renewed for its owner, taken if free, else `Held`.
    pub fn try_slot(
        &mut self,
        slot: u32,
        owner: OwnerToken,
        node: u32,
        lease_us: u64,
        now: u64,
        client_us: u64,
    ) -> Answer {
        match self.live(slot, now) {
            Some(mut held) if held.owner == owner => {
                held.expires = now.saturating_add(lease_us);
                self.write(now, slot, Some(held.clone()));
                Answer::Acquired(held)
            }
            Some(held) => Answer::Held(held),
            None => {
                let token = self.next_token(slot, now, client_us);
                let record = Record {
                    slot,
                    owner,
                    node,
                    token,
                    expires: now.saturating_add(lease_us),
                };
                self.write(now, slot, Some(record.clone()));
                self.batches.granted(&record);
                Answer::Acquired(record)
            }
        }
    }

    fn next_token(&mut self, slot: u32, now: u64, client_us: u64) -> u64 {
        let counter_of = if self.profile == Profile::Etcd {
            0
        } else {
            slot as usize
        };
        let Some(counter) = self.counters.get_mut(counter_of) else {
            return 0;
        };
        if self.token_from_client_clock {
            *counter = client_us;
            return client_us;
        }
        match self.profile {
            // max(counter + 1, the server's clock in µs)
            Profile::Redis => *counter = (*counter + 1).max(now),
            Profile::Sql => *counter += 1,
            // The revision the acquisition's write will have (`write` raises it).
            Profile::Etcd => return *counter + 1,
        }
        *counter
    }

    fn write(&mut self, now: u64, slot: u32, record: Option<Record>) {
        if self.profile == Profile::Etcd
            && let Some(revision) = self.counters.first_mut()
        {
            // Every write raises the revision; a token is the revision of its write.
            *revision += 1;
        }
        if self.profile == Profile::Redis {
            if self.past.len() == PAST_KEPT {
                self.past.pop_front();
            }
            self.past
                .push_back((now, self.records.clone(), self.counters.clone()));
        }
        if let Some(place) = self.records.get_mut(slot as usize) {
            *place = record;
        }
    }

    /// Loses every record; on Redis (a restart without persistence) the counters too.
    pub fn lose_all(&mut self) {
        self.records.iter_mut().for_each(|r| *r = None);
        if self.profile == Profile::Redis {
            self.counters.iter_mut().for_each(|c| *c = 0);
            self.past.clear();
        }
        self.lose_record();
    }

    /// Goes back to the state before every write made after store time `since` (a
    /// promoted replica that had not received them). Redis only; elsewhere nothing.
    pub fn roll_back(&mut self, since: u64) {
        if self.profile != Profile::Redis {
            return;
        }
        while self.past.back().is_some_and(|(at, _, _)| *at >= since) {
            if let Some((_, records, counters)) = self.past.pop_back() {
                self.records = records;
                self.counters = counters;
            }
        }
        self.roll_back_record(since);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(store: &mut ModelStore, owner: u128, slots: &[u32], now: u64) -> Answer {
        store.answer(
            Call::Acquire {
                owner: OwnerToken::from_u128(owner),
                node: 0,
                lease_us: 100,
                slots: slots.to_vec(),
            },
            now,
            0,
        )
    }

    #[test]
    fn a_lock_is_held_until_it_expires_and_its_owner_renews_it() {
        let mut store = ModelStore::new(Profile::Sql, 1);
        let Answer::Acquired(first) = acquire(&mut store, 1, &[0], 10) else {
            panic!()
        };
        assert_eq!((first.token, first.expires), (1, 110));
        assert!(matches!(acquire(&mut store, 2, &[0], 50), Answer::Held(_)));
        // The owner's retry renews, same token.
        let Answer::Acquired(again) = acquire(&mut store, 1, &[0], 60) else {
            panic!()
        };
        assert_eq!((again.token, again.expires), (1, 160));
        let Answer::Acquired(next) = acquire(&mut store, 2, &[0], 160) else {
            panic!()
        };
        assert_eq!(next.token, 2);
        let extend = Call::Extend {
            owner: OwnerToken::from_u128(1),
            slot: 0,
            lease_us: 100,
        };
        assert_eq!(store.answer(extend, 170, 0), Answer::NotHeld);
    }

    #[test]
    fn a_group_gives_the_owner_its_own_slot_then_the_first_free_one() {
        let mut store = ModelStore::new(Profile::Sql, 3);
        let Answer::Acquired(a) = acquire(&mut store, 1, &[1, 2, 0], 10) else {
            panic!()
        };
        assert_eq!(a.slot, 1);
        let Answer::Acquired(b) = acquire(&mut store, 2, &[1, 2, 0], 10) else {
            panic!()
        };
        assert_eq!(b.slot, 2);
        // Owner 1 again, trying from slot 0: its own slot 1 wins over the free slot 0.
        let Answer::Acquired(again) = acquire(&mut store, 1, &[0, 1, 2], 20) else {
            panic!()
        };
        assert_eq!(again.slot, 1);
        // One slot per call has no such check: slot 0 is free, so owner 1 takes it too.
        let Answer::Acquired(stray) = store.try_slot(0, OwnerToken::from_u128(1), 0, 100, 20, 0)
        else {
            panic!()
        };
        assert_eq!(stray.slot, 0);
        assert_eq!(
            store
                .holders(20)
                .filter(|r| r.owner == OwnerToken::from_u128(1))
                .count(),
            2
        );
    }

    #[test]
    fn redis_tokens_stay_ahead_after_losing_everything() {
        let mut store = ModelStore::new(Profile::Redis, 1);
        let Answer::Acquired(first) = acquire(&mut store, 1, &[0], 1_000) else {
            panic!()
        };
        store.lose_all();
        let Answer::Acquired(second) = acquire(&mut store, 2, &[0], 1_001) else {
            panic!()
        };
        assert!(second.token > first.token);
        // A roll-back to before the second acquisition frees the lock again.
        store.roll_back(1_001);
        assert!(store.holders(1_002).next().is_none());
    }
}
