//! The model store: one lock's record, its fencing counter, expiry on the store's own
//! clock, and the data loss of each [`Profile`] — what the backends' contract suite checks
//! of every real store, written small enough to run millions of times.
//!
//! It answers the three calls an elector makes of one lock (acquire, extend, release) as
//! the backends do: an owner's repeated acquire renews what it holds (a retried request
//! whose answer was lost takes nothing twice); a record past its expiry is free; extend
//! and release succeed only for the owner of a live record.

use std::collections::VecDeque;

use leader_core::OwnerToken;

use crate::plan::Profile;

/// The holder's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Take the lock (or renew it, for its owner) for `lease_us`.
    Acquire {
        /// The acquisition's owner token.
        owner: OwnerToken,
        /// The caller's node.
        node: u32,
        /// The lease asked for.
        lease_us: u64,
    },
    /// Extend the owner's live lease by `lease_us` from now.
    Extend {
        /// The owner token.
        owner: OwnerToken,
        /// The lease asked for.
        lease_us: u64,
    },
    /// Free the owner's lease.
    Release {
        /// The owner token.
        owner: OwnerToken,
    },
}

/// The store's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Acquired (or renewed by its owner): the record.
    Acquired(Record),
    /// Held by another owner: its record.
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
}

/// One lock on a store with `profile`'s semantics.
#[derive(Debug, Clone)]
pub struct ModelStore {
    profile: Profile,
    record: Option<Record>,
    /// The last token handed out (Redis: the counter key; SQL: the counter column; etcd:
    /// the revision).
    counter: u64,
    /// Past states, newest last, for a roll-back (Redis only): (store time, record,
    /// counter).
    past: VecDeque<(u64, Option<Record>, u64)>,
    /// Planted in the store, not the engine: a new token is the caller's clock reading.
    token_from_client_clock: bool,
}

/// How much history a roll-back can reach, in writes.
const PAST_KEPT: usize = 64;

impl ModelStore {
    /// An empty store.
    pub fn new(profile: Profile) -> Self {
        ModelStore {
            profile,
            record: None,
            counter: 0,
            past: VecDeque::new(),
            token_from_client_clock: false,
        }
    }

    /// A defective store whose new tokens are the caller's clock in µs (a backend that
    /// took the token from the client's clock).
    pub fn with_token_from_client_clock(mut self) -> Self {
        self.token_from_client_clock = true;
        self
    }

    /// The live record at store time `now`, if any.
    pub fn holder(&self, now: u64) -> Option<&Record> {
        self.record.as_ref().filter(|r| r.expires > now)
    }

    /// Answers `call` at store time `now` (µs); `client_us` is the caller's clock reading
    /// sent with it.
    pub fn answer(&mut self, call: Call, now: u64, client_us: u64) -> Answer {
        let live = self.record.clone().filter(|r| r.expires > now);
        match call {
            Call::Acquire {
                owner,
                node,
                lease_us,
            } => match live {
                Some(mut held) if held.owner == owner => {
                    held.expires = now.saturating_add(lease_us);
                    self.write(now, Some(held.clone()));
                    Answer::Acquired(held)
                }
                Some(held) => Answer::Held(held),
                None => {
                    let token = self.next_token(now, client_us);
                    let record = Record {
                        owner,
                        node,
                        token,
                        expires: now.saturating_add(lease_us),
                    };
                    self.write(now, Some(record.clone()));
                    Answer::Acquired(record)
                }
            },
            Call::Extend { owner, lease_us } => match live {
                Some(mut held) if held.owner == owner => {
                    held.expires = now.saturating_add(lease_us);
                    let expires = held.expires;
                    self.write(now, Some(held));
                    Answer::Extended { expires }
                }
                _ => Answer::NotHeld,
            },
            Call::Release { owner } => match live {
                Some(held) if held.owner == owner => {
                    self.write(now, None);
                    Answer::Released
                }
                _ => Answer::NotHeld,
            },
        }
    }

    fn next_token(&mut self, now: u64, client_us: u64) -> u64 {
        if self.token_from_client_clock {
            self.counter = client_us;
            return client_us;
        }
        match self.profile {
            // max(counter + 1, the server's clock in µs)
            Profile::Redis => self.counter = (self.counter + 1).max(now),
            Profile::Sql => self.counter += 1,
            // The revision the acquisition's write will have (`write` raises it).
            Profile::Etcd => return self.counter + 1,
        }
        self.counter
    }

    fn write(&mut self, now: u64, record: Option<Record>) {
        if self.profile == Profile::Etcd {
            // Every write raises the revision; a token is the revision of its write.
            self.counter += 1;
        }
        if self.profile == Profile::Redis {
            if self.past.len() == PAST_KEPT {
                self.past.pop_front();
            }
            self.past
                .push_back((now, self.record.clone(), self.counter));
        }
        self.record = record;
    }

    /// Loses every record; on Redis (a restart without persistence) the counter too.
    pub fn lose_all(&mut self) {
        self.record = None;
        if self.profile == Profile::Redis {
            self.counter = 0;
            self.past.clear();
        }
    }

    /// Goes back to the state before every write made after store time `since` (a
    /// promoted replica that had not received them). Redis only; elsewhere nothing.
    pub fn roll_back(&mut self, since: u64) {
        if self.profile != Profile::Redis {
            return;
        }
        while self.past.back().is_some_and(|(at, _, _)| *at >= since) {
            if let Some((_, record, counter)) = self.past.pop_back() {
                self.record = record;
                self.counter = counter;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(store: &mut ModelStore, owner: u128, now: u64) -> Answer {
        store.answer(
            Call::Acquire {
                owner: OwnerToken::from_u128(owner),
                node: 0,
                lease_us: 100,
            },
            now,
            0,
        )
    }

    #[test]
    fn a_lock_is_held_until_it_expires_and_its_owner_renews_it() {
        let mut store = ModelStore::new(Profile::Sql);
        let Answer::Acquired(first) = acquire(&mut store, 1, 10) else {
            panic!()
        };
        assert_eq!((first.token, first.expires), (1, 110));
        assert!(matches!(acquire(&mut store, 2, 50), Answer::Held(_)));
        // The owner's retry renews, same token.
        let Answer::Acquired(again) = acquire(&mut store, 1, 60) else {
            panic!()
        };
        assert_eq!((again.token, again.expires), (1, 160));
        let Answer::Acquired(next) = acquire(&mut store, 2, 160) else {
            panic!()
        };
        assert_eq!(next.token, 2);
        let extend = Call::Extend {
            owner: OwnerToken::from_u128(1),
            lease_us: 100,
        };
        assert_eq!(store.answer(extend, 170, 0), Answer::NotHeld);
    }

    #[test]
    fn redis_tokens_stay_ahead_after_losing_everything() {
        let mut store = ModelStore::new(Profile::Redis);
        let Answer::Acquired(first) = acquire(&mut store, 1, 1_000) else {
            panic!()
        };
        store.lose_all();
        let Answer::Acquired(second) = acquire(&mut store, 2, 1_001) else {
            panic!()
        };
        assert!(second.token > first.token);
        // A roll-back to before the second acquisition frees the lock again.
        store.roll_back(1_001);
        assert!(store.holder(1_002).is_none());
    }
}
