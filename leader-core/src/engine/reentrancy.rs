//! [`Holds`]: reentrant holds by a key the caller chooses, for one elector's reentrant
//! locks (`ReentrantLocks` in `leader-blocking`, `AsyncReentrantLocks` in `leader-async`).
//!
//! The decisions only; the shells acquire from the store, wait, and release. Holds are
//! counted per lock and per *holder key* (a request id, a job id: whatever the caller's
//! nested code shares), never per thread or task: async code moves between threads, and
//! nested service calls of one request may run on several. So:
//!
//! - a lock this table does not know is acquired from the store ([`Enter::Acquire`]), and
//!   the shell reports the outcome ([`Holds::acquired`]);
//! - the same holder again gets a nested hold of the same lease ([`Enter::Nested`]): no
//!   store call, the same fencing token, and the lease as it is (a nested hold never
//!   shortens or lengthens it), up to the table's limit ([`Error::ReentrancyLimit`]), and
//!   never on a lease that is over ([`Error::LeaseLost`]);
//! - another holder waits in this process until the lock is released here
//!   ([`Enter::Wait`]), then acquires it from the store like any node: in-process
//!   contention never costs a store call while the lock is held here;
//! - each hold ends once ([`Holds::leave`]); the last one releases the lock.

use std::collections::HashMap;

use crate::error::Error;
use crate::name::LockName;

/// The deepest nesting a reentrant lock allows by default: deeper is taken for runaway
/// recursion (a lock taken at every level of a recursive call) and refused.
pub const DEFAULT_REENTRANCY_LIMIT: u32 = 64;

/// The reentrant holds of one elector's reentrant locks, by lock key; `H` is the shell's
/// shared hold (the guard of the lease, behind an `Arc`).
#[derive(Debug)]
pub struct Holds<H> {
    entries: HashMap<LockName, Entry<H>>,
    limit: u32,
}

#[derive(Debug)]
enum Entry<H> {
    /// The holder's first acquisition is on its way to the store.
    Acquiring { holder: String },
    /// Held by `holder`, `count` times.
    Held { holder: String, count: u32, hold: H },
}

/// What to do for a holder that asks for a lock.
#[derive(Debug, PartialEq, Eq)]
pub enum Enter<H> {
    /// The holder holds it already: a nested hold of `hold`, the holder's `count`th.
    Nested {
        /// The lease the holder holds.
        hold: H,
        /// How many holds the holder has now, this one included.
        count: u32,
    },
    /// Nobody holds it here: acquire it from the store, then call [`Holds::acquired`].
    Acquire,
    /// Another holder has it here, or this holder's first acquisition is on its way:
    /// wait until the table changes (or the wait time is over), then ask again.
    Wait,
}

/// What ending a hold leaves to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Leave<H> {
    /// That was the last hold: release the lease (the entry is gone already).
    Release(H),
    /// Other holds remain (`count` of them): keep the lease.
    Keep {
        /// The holds left.
        count: u32,
    },
}

impl<H: Clone> Holds<H> {
    /// An empty table allowing `limit` holds per lock and holder (at least 1).
    pub fn new(limit: u32) -> Self {
        Holds {
            entries: HashMap::new(),
            limit: limit.max(1),
        }
    }

    /// The most holds a holder may have of one lock.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// `holder` asks for `key`: see [`Enter`]. On [`Enter::Acquire`] the table records the
    /// acquisition as on its way until [`acquired`](Self::acquired) reports it; on
    /// [`Enter::Nested`] it counts one more hold. `is_lost` tells whether a held lease is
    /// over (read by the shell from the lease's context).
    ///
    /// # Errors
    ///
    /// [`Error::ReentrancyLimit`] when `holder` holds `key` as many times as the limit
    /// allows, [`Error::LeaseLost`] when it holds it on a lease that is over (no guard is
    /// handed out on one); the holds are unchanged.
    pub fn enter(
        &mut self,
        key: &LockName,
        holder: &str,
        is_lost: impl FnOnce(&H) -> bool,
    ) -> Result<Enter<H>, Error> {
        match self.entries.get_mut(key) {
            None => {
                self.entries.insert(
                    key.clone(),
                    Entry::Acquiring {
                        holder: holder.to_owned(),
                    },
                );
                Ok(Enter::Acquire)
            }
            Some(Entry::Held {
                holder: current,
                count,
                hold,
            }) if current == holder => {
                if is_lost(hold) {
                    return Err(Error::LeaseLost {
                        key: key.as_str().to_owned(),
                    });
                }
                if *count >= self.limit {
                    return Err(Error::ReentrancyLimit {
                        key: key.as_str().to_owned(),
                        limit: self.limit,
                    });
                }
                *count += 1;
                Ok(Enter::Nested {
                    hold: hold.clone(),
                    count: *count,
                })
            }
            Some(_) => Ok(Enter::Wait),
        }
    }

    /// The store's answer to `holder`'s acquisition of `key`: `Some(hold)` when it was
    /// acquired (the holder's first hold), `None` when it was not (the entry goes, and the
    /// waiters may try).
    pub fn acquired(&mut self, key: &LockName, holder: &str, hold: Option<H>) {
        let ours = matches!(
            self.entries.get(key),
            Some(Entry::Acquiring { holder: h }) if h == holder
        );
        if !ours {
            return;
        }
        match hold {
            Some(hold) => {
                self.entries.insert(
                    key.clone(),
                    Entry::Held {
                        holder: holder.to_owned(),
                        count: 1,
                        hold,
                    },
                );
            }
            None => {
                self.entries.remove(key);
            }
        }
    }

    /// One hold of `key` ends: see [`Leave`]. `None` when the table holds no such lock (a
    /// hold ended twice).
    pub fn leave(&mut self, key: &LockName) -> Option<Leave<H>> {
        let Some(Entry::Held { count, .. }) = self.entries.get_mut(key) else {
            return None;
        };
        if *count > 1 {
            *count -= 1;
            return Some(Leave::Keep { count: *count });
        }
        match self.entries.remove(key) {
            Some(Entry::Held { hold, .. }) => Some(Leave::Release(hold)),
            _ => None,
        }
    }

    /// How many holds `key` has here (0: none).
    pub fn holds(&self, key: &LockName) -> u32 {
        match self.entries.get(key) {
            Some(Entry::Held { count, .. }) => *count,
            _ => 0,
        }
    }

    /// The hold of `key` here, if it is held (to name the holder when a wait runs out).
    pub fn held(&self, key: &LockName) -> Option<&H> {
        match self.entries.get(key) {
            Some(Entry::Held { hold, .. }) => Some(hold),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> LockName {
        LockName::new(name).unwrap()
    }

    /// `enter` on a lease that is not over.
    fn enter<H: Clone>(holds: &mut Holds<H>, key: &LockName, holder: &str) -> Enter<H> {
        holds.enter(key, holder, |_| false).unwrap()
    }

    fn limit_of<H: Clone + std::fmt::Debug>(
        holds: &mut Holds<H>,
        key: &LockName,
        holder: &str,
    ) -> u32 {
        match holds.enter(key, holder, |_| false) {
            Err(Error::ReentrancyLimit { limit, .. }) => limit,
            other => panic!("expected ReentrancyLimit, got {other:?}"),
        }
    }

    #[test]
    fn the_same_holder_nests_up_to_the_limit_and_the_last_hold_releases() {
        let ledger = key("ledger");
        let mut holds = Holds::new(3);
        assert_eq!(enter(&mut holds, &ledger, "req-1"), Enter::Acquire);
        // Its own first acquisition is on its way: the same holder waits for it too.
        assert_eq!(enter(&mut holds, &ledger, "req-1"), Enter::Wait);
        holds.acquired(&ledger, "req-1", Some("lease"));
        assert_eq!(
            enter(&mut holds, &ledger, "req-1"),
            Enter::Nested {
                hold: "lease",
                count: 2
            }
        );
        assert_eq!(
            enter(&mut holds, &ledger, "req-1"),
            Enter::Nested {
                hold: "lease",
                count: 3
            }
        );
        assert_eq!(limit_of(&mut holds, &ledger, "req-1"), 3);
        assert_eq!(holds.holds(&ledger), 3);
        assert_eq!(holds.leave(&ledger), Some(Leave::Keep { count: 2 }));
        assert_eq!(holds.leave(&ledger), Some(Leave::Keep { count: 1 }));
        assert_eq!(holds.leave(&ledger), Some(Leave::Release("lease")));
        assert_eq!(holds.leave(&ledger), None);
        assert_eq!(enter(&mut holds, &ledger, "req-2"), Enter::Acquire);
    }

    #[test]
    fn another_holder_waits_until_the_lock_is_released_here() {
        let ledger = key("ledger");
        let mut holds = Holds::new(DEFAULT_REENTRANCY_LIMIT);
        assert_eq!(enter(&mut holds, &ledger, "req-1"), Enter::Acquire);
        assert_eq!(enter(&mut holds, &ledger, "req-2"), Enter::Wait);
        holds.acquired(&ledger, "req-1", Some(1));
        assert_eq!(enter(&mut holds, &ledger, "req-2"), Enter::Wait);
        assert_eq!(holds.held(&ledger), Some(&1));
        // Another lock is another entry.
        assert_eq!(enter(&mut holds, &key("report"), "req-2"), Enter::Acquire);
        assert_eq!(holds.leave(&ledger), Some(Leave::Release(1)));
        assert_eq!(enter(&mut holds, &ledger, "req-2"), Enter::Acquire);
    }

    #[test]
    fn a_failed_acquisition_frees_the_entry_and_a_stale_report_changes_nothing() {
        let ledger = key("ledger");
        let mut holds = Holds::new(0);
        assert_eq!(holds.limit(), 1, "a limit of 0 is taken as 1");
        assert_eq!(enter(&mut holds, &ledger, "req-1"), Enter::Acquire);
        // Another holder's report is not this entry's.
        holds.acquired(&ledger, "req-2", Some(9));
        assert_eq!(holds.holds(&ledger), 0);
        holds.acquired(&ledger, "req-1", None);
        assert_eq!(enter(&mut holds, &ledger, "req-2"), Enter::Acquire);
        holds.acquired(&ledger, "req-2", Some(2));
        assert_eq!(limit_of(&mut holds, &ledger, "req-2"), 1);
        // No hold on a lease that is over; the count stays.
        assert!(matches!(
            holds.enter(&ledger, "req-2", |_| true),
            Err(Error::LeaseLost { .. })
        ));
        assert_eq!(holds.holds(&ledger), 1);
    }
}
