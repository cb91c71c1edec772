//! The rules of a read/write lock's record, written once ([`SharedRecord`]): what a
//! backend's script, statement or transaction does in one step, as a function of the
//! record and the store's time.
//!
//! A store that can read a record, decide and write it back atomically (a transaction, a
//! critical section) runs these rules as they are: the in-memory and SQLite backends do.
//! The server backends write them in their own language (Lua, SQL, an aggregation
//! pipeline, an etcd transaction) and are held to the same contract checks.

use std::time::{Duration, Instant, SystemTime};

use crate::spi::lease::OwnerToken;
use crate::spi::shared::Role;

/// A point on the clock a store decides expiry on: an [`Instant`], a [`SystemTime`], or a
/// store's own count (microseconds of a monotonic clock, say, in a newtype).
pub trait Deadline: Copy + Ord {
    /// `self + by`, or `None` when the clock cannot hold it.
    fn after(self, by: Duration) -> Option<Self>;
}

impl Deadline for Instant {
    fn after(self, by: Duration) -> Option<Self> {
        self.checked_add(by)
    }
}

impl Deadline for SystemTime {
    fn after(self, by: Duration) -> Option<Self> {
        self.checked_add(by)
    }
}

/// A holder in the record: a reader or the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedHolder<T> {
    /// The acquisition's owner token.
    pub owner: OwnerToken,
    /// The holder's node id.
    pub node: String,
    /// Its fencing token.
    pub token: u64,
    /// When it acquired.
    pub acquired: T,
    /// When its hold runs out unless renewed.
    pub expires: T,
    /// Released, kept until its minimum lease is over: no longer its owner's to renew or
    /// release, and not the owner's hold when it asks again.
    pub released: bool,
}

impl<T: Deadline> SharedHolder<T> {
    fn is_for(&self, owner: OwnerToken) -> bool {
        self.owner == owner && !self.released
    }
}

/// A waiting writer's intent: new readers are refused until it lapses or the writer gets
/// in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent<T> {
    /// The waiting writer's owner token.
    pub owner: OwnerToken,
    /// Its node id.
    pub node: String,
    /// When the intent lapses unless the writer asks again.
    pub expires: T,
}

/// A read/write lock's record: the rules of the `SharedLockBackend` contract (see
/// [`SharedLockBackend`](crate::SharedLockBackend)'s `# Contract`) as plain functions of the record
/// and the store's time `now`.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::kit::{SharedAnswer, SharedAsk, SharedRecord};
/// use leader_core::{OwnerToken, Role};
///
/// let now = Instant::now();
/// let lease = now + Duration::from_secs(10);
/// let ask = |role, owner| SharedAsk {
///     role,
///     owner: OwnerToken::from_u128(owner),
///     node: "n1",
///     expires: lease,
///     max_readers: 8,
///     token_floor: 0,
/// };
/// let mut record = SharedRecord::default();
/// assert!(matches!(record.acquire(ask(Role::Read, 1), now), SharedAnswer::Acquired(_)));
/// // A writer waits for the reader, and holds new readers out meanwhile.
/// assert_eq!(record.acquire(ask(Role::Write, 2), now), SharedAnswer::Queued);
/// assert_eq!(record.acquire(ask(Role::Read, 3), now), SharedAnswer::Held);
/// assert!(record.release(Role::Read, OwnerToken::from_u128(1), Duration::ZERO, now));
/// match record.acquire(ask(Role::Write, 2), now) {
///     SharedAnswer::Acquired(writer) => assert_eq!(writer.token, 2),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedRecord<T> {
    /// The last fencing token handed out.
    pub counter: u64,
    /// The writer, if any.
    pub writer: Option<SharedHolder<T>>,
    /// The readers, in the order they came.
    pub readers: Vec<SharedHolder<T>>,
    /// A waiting writer's intent, if any.
    pub intent: Option<Intent<T>>,
}

impl<T> Default for SharedRecord<T> {
    fn default() -> Self {
        SharedRecord {
            counter: 0,
            writer: None,
            readers: Vec::new(),
            intent: None,
        }
    }
}

/// One acquire, as the record sees it.
#[derive(Debug, Clone, Copy)]
pub struct SharedAsk<'a, T> {
    /// Read or write.
    pub role: Role,
    /// The acquisition's owner token.
    pub owner: OwnerToken,
    /// The caller's node id.
    pub node: &'a str,
    /// When the hold (or a writer's intent) runs out: now plus the lease, which the
    /// caller has checked the clock can hold.
    pub expires: T,
    /// For a read: the most readers the lock may have with this one.
    pub max_readers: u32,
    /// The least token a grant may take (a store whose counter can be lost passes its
    /// clock here; 0 elsewhere).
    pub token_floor: u64,
}

/// The record's answer to an acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedAnswer<T> {
    /// Granted (or renewed, for an owner that holds it in that role already).
    Acquired(SharedHolder<T>),
    /// Refused.
    Held,
    /// A writer's intent is recorded (or renewed); readers still hold the lock.
    Queued,
}

impl<T: Deadline> SharedRecord<T> {
    /// Drops the holds and the intent that ran out by `now`.
    pub fn prune(&mut self, now: T) {
        if self.writer.as_ref().is_some_and(|w| w.expires <= now) {
            self.writer = None;
        }
        self.readers.retain(|r| r.expires > now);
        if self.intent.as_ref().is_some_and(|i| i.expires <= now) {
            self.intent = None;
        }
    }

    /// Whether nobody holds the lock and no intent is live (as of the last prune): a
    /// store may then drop the record, keeping its counter.
    pub fn is_free(&self) -> bool {
        self.writer.is_none() && self.readers.is_empty() && self.intent.is_none()
    }

    /// Answers `ask` at `now`.
    pub fn acquire(&mut self, ask: SharedAsk<'_, T>, now: T) -> SharedAnswer<T> {
        self.prune(now);
        let other_intent = self.intent.as_ref().is_some_and(|i| i.owner != ask.owner);
        match ask.role {
            Role::Read => {
                // A reader's retried request (its answer lost) renews what it holds, even
                // behind a waiting writer: it is not a new reader.
                if let Some(reader) = self.readers.iter_mut().find(|r| r.is_for(ask.owner)) {
                    reader.expires = ask.expires;
                    return SharedAnswer::Acquired(reader.clone());
                }
                let full = self.readers.len() >= ask.max_readers as usize;
                if self.writer.is_some() || other_intent || full {
                    return SharedAnswer::Held;
                }
                let holder = self.grant(ask, now);
                self.readers.push(holder.clone());
                SharedAnswer::Acquired(holder)
            }
            Role::Write => {
                if let Some(writer) = &mut self.writer {
                    if !writer.is_for(ask.owner) {
                        return SharedAnswer::Held;
                    }
                    writer.expires = ask.expires;
                    return SharedAnswer::Acquired(writer.clone());
                }
                if other_intent {
                    return SharedAnswer::Held;
                }
                if !self.readers.is_empty() {
                    self.intent = Some(Intent {
                        owner: ask.owner,
                        node: ask.node.to_owned(),
                        expires: ask.expires,
                    });
                    return SharedAnswer::Queued;
                }
                self.intent = None;
                let holder = self.grant(ask, now);
                self.writer = Some(holder.clone());
                SharedAnswer::Acquired(holder)
            }
        }
    }

    /// Renews `owner`'s hold in `role` until `expires`: the holder renewed, or `None` when
    /// it holds none.
    pub fn extend(
        &mut self,
        role: Role,
        owner: OwnerToken,
        expires: T,
        now: T,
    ) -> Option<&SharedHolder<T>> {
        self.prune(now);
        let holder = match role {
            Role::Read => self.readers.iter_mut().find(|r| r.is_for(owner)),
            Role::Write => self.writer.as_mut().filter(|w| w.is_for(owner)),
        }?;
        holder.expires = expires;
        Some(holder)
    }

    /// Ends `owner`'s hold in `role` (a writer that gives up waiting: its intent), keeping
    /// a hold until `acquired + min_lease` (marked released): `false` when it had none.
    pub fn release(&mut self, role: Role, owner: OwnerToken, min_lease: Duration, now: T) -> bool {
        self.prune(now);
        let keep = |holder: &mut SharedHolder<T>| {
            let keep_until = holder.acquired.after(min_lease);
            if keep_until.is_none_or(|keep| keep > now) {
                if let Some(keep) = keep_until {
                    holder.expires = holder.expires.min(keep);
                }
                holder.released = true;
                true
            } else {
                false
            }
        };
        match role {
            Role::Read => {
                let Some(at) = self.readers.iter().position(|r| r.is_for(owner)) else {
                    return false;
                };
                if !keep(&mut self.readers[at]) {
                    self.readers.remove(at);
                }
                true
            }
            Role::Write => {
                if let Some(writer) = self.writer.as_mut().filter(|w| w.is_for(owner)) {
                    if !keep(writer) {
                        self.writer = None;
                    }
                    return true;
                }
                if self.intent.as_ref().is_some_and(|i| i.owner == owner) {
                    self.intent = None;
                    return true;
                }
                false
            }
        }
    }

    fn grant(&mut self, ask: SharedAsk<'_, T>, now: T) -> SharedHolder<T> {
        self.counter = self.counter.saturating_add(1).max(ask.token_floor);
        SharedHolder {
            owner: ask.owner,
            node: ask.node.to_owned(),
            token: self.counter,
            acquired: now,
            expires: ask.expires,
            released: false,
        }
    }
}

#[cfg(test)]
mod tests;
