//! The etcd leases this backend grants: [`Grant`], the guard of the lease one call
//! granted, and the decisions of what becomes of it when the call ends ([`Settle`]) and
//! of how a background revoke is tried again ([`Tries`]). The calls themselves are made
//! in [`revoke`](crate::revoke).
//!
//! A call grants a lease, then sends the transactions that may put a lock on it. However
//! the call ends — answered, failed, or cut (its future dropped when the operation
//! timeout ran out, or its answer lost on the way) — a lease with no lock on it is
//! revoked, so that none outlives its call for its whole TTL:
//!
//! | the call ended | the lease | what is done |
//! |---|---|---|
//! | before the grant answered | may exist (the grant may have landed, or land later) | revoked; "not found" is tried again a few times |
//! | after answers that put no lock on it | unused | revoked |
//! | while a transaction that may put a lock on it was unanswered | unknown | voided, then revoked, unless a lock is on it |
//! | after an answer that put a lock on it | in use | kept; a released lock kept on it for its minimum lease is revoked when that ends |
//!
//! **Voiding** makes the unknown case safe. One transaction puts the lease's void key
//! ([`Keys::void`]) on the lease only while none of the call's lock keys is on it, and
//! every transaction that puts a lock on a lease holds only while that lease's void key
//! does not exist ([`OnLease::not_void`]). Once voided, no transaction of the cut call can
//! land on the lease, however late it arrives, and the revoke drops nobody's lock.
//! Revoking without it could delete a lock its holder still counts on: an extend whose
//! answer was lost may have moved the holder's lock onto the new lease, or may still do
//! so after the revoke was decided.
//!
//! Lease ids are chosen here (63 random bits) rather than by etcd, so that a grant whose
//! answer never came can still be revoked.

use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, Txn};
use tokio::runtime::Handle;

use crate::error::OpError;
use crate::keys::Keys;
use crate::ops::Answer;

/// How long a background revoke is tried again at most while the cluster does not answer
/// (less when the lease ends sooner on its own).
const PATIENCE: Duration = Duration::from_secs(60 * 60);
/// The first pause before a revoke is tried again; each next one is twice as long.
const FIRST_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two tries.
const LONGEST_PAUSE: Duration = Duration::from_secs(30);
/// How many times a lease whose grant never answered is revoked again after etcd said it
/// does not exist: the grant may still be on its way (some 8 s with the pauses above).
const NOT_FOUND_TRIES: u32 = 5;

/// The lease a transaction puts locks on: its id, and the key that voids it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OnLease {
    /// The etcd lease id.
    pub(crate) id: i64,
    /// Its void key ([`Keys::void`]).
    pub(crate) void: Vec<u8>,
}

impl OnLease {
    /// The lease `id` in `keys`' layout.
    pub(crate) fn new(keys: &Keys, id: i64) -> Self {
        OnLease {
            id,
            void: keys.void(id),
        }
    }

    /// The compare under which a transaction may put a lock on this lease: it is not void.
    pub(crate) fn not_void(&self) -> Compare {
        Compare::create_revision(self.void.clone(), CompareOp::Equal, 0)
    }
}

/// A fresh lease id: 63 random bits, never 0 (etcd's "no lease").
pub(crate) fn new_lease_id() -> i64 {
    let bits = leader_core::OwnerToken::random().as_u128();
    let id = i64::try_from(bits & u128::from(i64::MAX.unsigned_abs())).unwrap_or(i64::MAX);
    id.max(1)
}

/// What a call has done with its lease so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// The grant was sent and has not answered: the lease may exist.
    Asked,
    /// Granted, and no lock is on it.
    Unused,
    /// A transaction that may put a lock on it was sent and has not answered.
    Sent,
    /// A lock is on it.
    Used,
    /// Nothing of this call's is there: the grant never left this host, or etcd refused
    /// the id as another's.
    NotOurs,
}

/// What becomes of a lease when its call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settle {
    /// Nothing to do: a lock is on it, or it is not ours.
    Keep,
    /// Revoke it now. `granted`: whether its grant answered (if not, "not found" may only
    /// mean "not yet").
    Revoke { granted: bool },
    /// Void it unless one of the call's locks is on it, then revoke it; a lock on it is
    /// kept, and revoked at `free_at` if given.
    VoidThenRevoke { free_at: Option<Instant> },
    /// Revoke it at this instant: the minimum lease of the released lock kept on it ends.
    RevokeAt(Instant),
}

/// What becomes of a lease in `state` when its call ends; `free_at` when the call kept a
/// released lock on it until then.
pub(crate) fn settle(state: Use, free_at: Option<Instant>) -> Settle {
    match state {
        Use::Asked => Settle::Revoke { granted: false },
        Use::Unused => Settle::Revoke { granted: true },
        Use::Sent => Settle::VoidThenRevoke { free_at },
        Use::Used => free_at.map_or(Settle::Keep, Settle::RevokeAt),
        Use::NotOurs => Settle::Keep,
    }
}

/// The guard of the lease one call granted (or asked for): the call says what its
/// transactions did with it, and when the guard is dropped — the call answered, failed,
/// or was cut — a lease with no lock on it is revoked in the background (see the module
/// docs).
pub(crate) struct Grant {
    on: OnLease,
    ttl: i64,
    state: Use,
    /// The lock keys the call's transactions may put on the lease.
    locks: Vec<Vec<u8>>,
    /// When the released lock the call keeps on the lease is freed.
    free_at: Option<Instant>,
    /// When the lease ends on its own at the latest.
    ends: Instant,
    client: Client,
    runtime: Handle,
}

impl Grant {
    /// A lease of `ttl` seconds about to be asked for, on which the call may put the
    /// locks `locks`; revoked when dropped unless told otherwise.
    pub(crate) fn asked(
        keys: &Keys,
        ttl: i64,
        locks: Vec<Vec<u8>>,
        client: Client,
        runtime: Handle,
    ) -> Self {
        let now = Instant::now();
        let lives = Duration::from_secs(ttl.unsigned_abs()).min(PATIENCE);
        Grant {
            on: OnLease::new(keys, new_lease_id()),
            ttl,
            state: Use::Asked,
            locks,
            free_at: None,
            ends: now.checked_add(lives).unwrap_or(now),
            client,
            runtime,
        }
    }

    /// The lease, for the transactions.
    pub(crate) fn on(&self) -> &OnLease {
        &self.on
    }

    /// The TTL asked for, in seconds.
    pub(crate) fn ttl(&self) -> i64 {
        self.ttl
    }

    /// Another id, after etcd refused this one as another's lease.
    pub(crate) fn other_id(&mut self, keys: &Keys) {
        self.on = OnLease::new(keys, new_lease_id());
        self.state = Use::Asked;
    }

    /// The grant answered: the lease exists, and no lock is on it yet.
    pub(crate) fn granted(&mut self) {
        self.state = Use::Unused;
    }

    /// Nothing of this call's is at etcd under this id: nothing to revoke.
    pub(crate) fn not_ours(&mut self) {
        self.state = Use::NotOurs;
    }

    /// A released lock kept on this lease is freed at `at` (the lease is revoked then).
    pub(crate) fn free_at(&mut self, at: Instant) {
        self.free_at = Some(at);
    }

    /// A transaction answered: it put a lock on the lease (`used`) or not.
    pub(crate) fn answered(&mut self, used: bool) {
        self.state = if used { Use::Used } else { Use::Unused };
    }

    /// Sends `txn`, which may put a lock on the lease: until it answers, a cut call leaves
    /// the lease to be voided before it is revoked. A request that never left this host
    /// put nothing on it.
    pub(crate) async fn send(&mut self, txn: Txn) -> Result<Answer, OpError> {
        self.state = Use::Sent;
        match self.client.kv_client().txn(txn).await {
            Ok(answer) => Ok(Answer::read(answer)),
            Err(err) => {
                let err = OpError::from(err);
                if err.never_sent() {
                    self.state = Use::Unused;
                }
                Err(err)
            }
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let settle = settle(self.state, self.free_at);
        if settle == Settle::Keep {
            return;
        }
        let task = crate::revoke::settle(
            self.client.clone(),
            self.on.clone(),
            std::mem::take(&mut self.locks),
            settle,
            self.ends,
        );
        // A runtime shutting down drops the task: the lease then ends with its TTL.
        drop(self.runtime.spawn(task));
    }
}

/// What one background try answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tried {
    /// Done: revoked, or the answer settles it.
    Done,
    /// etcd has no such lease.
    NotFound,
    /// It failed; `transient` when trying again may help.
    Failed { transient: bool },
}

/// How a background revoke (or void) is tried again: with a pause doubling from
/// [`FIRST_PAUSE`] to [`LONGEST_PAUSE`], while the lease would still be there (at most
/// [`PATIENCE`]); "not found" is final for a lease whose grant answered, and tried again
/// [`NOT_FOUND_TRIES`] times for one whose grant may still land.
#[derive(Debug, Clone)]
pub(crate) struct Tries {
    pause: Duration,
    until: Instant,
    not_found_left: u32,
}

impl Tries {
    /// The tries for a lease that ends by `ends` at the latest; `granted`: whether its
    /// grant answered.
    pub(crate) fn new(ends: Instant, granted: bool) -> Self {
        Tries {
            pause: FIRST_PAUSE,
            until: ends,
            not_found_left: if granted { 0 } else { NOT_FOUND_TRIES },
        }
    }

    /// After a try answered `tried` at `now`: the pause before the next try, or `None`
    /// when there is none to make.
    pub(crate) fn after(&mut self, tried: Tried, now: Instant) -> Option<Duration> {
        let again = match tried {
            Tried::Done | Tried::Failed { transient: false } => false,
            Tried::NotFound => {
                let again = self.not_found_left > 0;
                self.not_found_left = self.not_found_left.saturating_sub(1);
                again
            }
            Tried::Failed { transient: true } => now
                .checked_add(self.pause)
                .is_some_and(|at| at < self.until),
        };
        if !again {
            return None;
        }
        let pause = self.pause;
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        Some(pause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_revoked_unless_a_lock_is_on_it_or_it_is_not_ours() {
        let at = Instant::now() + Duration::from_secs(5);
        assert_eq!(settle(Use::Asked, None), Settle::Revoke { granted: false });
        assert_eq!(settle(Use::Unused, None), Settle::Revoke { granted: true });
        assert_eq!(
            settle(Use::Unused, Some(at)),
            Settle::Revoke { granted: true }
        );
        assert_eq!(
            settle(Use::Sent, None),
            Settle::VoidThenRevoke { free_at: None }
        );
        assert_eq!(
            settle(Use::Sent, Some(at)),
            Settle::VoidThenRevoke { free_at: Some(at) }
        );
        assert_eq!(settle(Use::Used, None), Settle::Keep);
        assert_eq!(settle(Use::Used, Some(at)), Settle::RevokeAt(at));
        assert_eq!(settle(Use::NotOurs, Some(at)), Settle::Keep);
    }

    #[test]
    fn lease_ids_are_positive_and_differ() {
        let ids: std::collections::HashSet<i64> = (0..1000).map(|_| new_lease_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| *id > 0));
    }

    #[test]
    fn a_failing_revoke_backs_off_until_the_lease_would_be_gone() {
        let now = Instant::now();
        let mut tries = Tries::new(now + Duration::from_secs(10), true);
        let mut at = now;
        let mut pauses = Vec::new();
        while let Some(pause) = tries.after(Tried::Failed { transient: true }, at) {
            pauses.push(pause);
            at += pause;
        }
        assert_eq!(pauses.first(), Some(&FIRST_PAUSE));
        assert!(
            pauses
                .windows(2)
                .all(|p| p[1] == (p[0] * 2).min(LONGEST_PAUSE))
        );
        assert!(at < now + Duration::from_secs(10), "{pauses:?}");
        assert!(
            at + pauses.last().copied().unwrap_or_default() * 2 >= now + Duration::from_secs(10)
        );
        // The pause never grows past the longest one.
        let mut long = Tries::new(now + PATIENCE, true);
        let last = (0..20)
            .filter_map(|_| long.after(Tried::Failed { transient: true }, now))
            .last();
        assert_eq!(last, Some(LONGEST_PAUSE));
    }

    #[test]
    fn done_and_permanent_failures_stop_and_not_found_is_final_once_granted() {
        let now = Instant::now();
        let ends = now + PATIENCE;
        assert_eq!(Tries::new(ends, true).after(Tried::Done, now), None);
        assert_eq!(
            Tries::new(ends, true).after(Tried::Failed { transient: false }, now),
            None
        );
        assert_eq!(Tries::new(ends, true).after(Tried::NotFound, now), None);
        // A grant that never answered may land after the first revoke: tried again.
        let mut ungranted = Tries::new(ends, false);
        let again = (0..10)
            .filter(|_| ungranted.after(Tried::NotFound, now).is_some())
            .count();
        assert_eq!(again, NOT_FOUND_TRIES as usize);
    }
}
