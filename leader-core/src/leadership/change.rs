//! [`LeaderChange`]: one change of who holds a lock, as an observer saw it.

use std::fmt;
use std::time::SystemTime;

use crate::spi::state::LeaderLease;

/// What happened to a lock between two looks at it.
///
/// An observer reads the lock's record; the store does not keep a history, so each kind
/// is what the difference between two reads shows (see each variant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// The first look: who held the lock when the observer started (`holder` is `None`
    /// when it was free). Every observer yields this first, once per slot.
    Initial,
    /// A new holder, or the same node holding again under a new fencing token.
    Acquired,
    /// The holder went before its lease ran out: released by its holder, or freed by an
    /// operator's force release. The stores keep no record of which, so an observer cannot
    /// tell the two apart.
    Released,
    /// The holder went once its lease had run out (judged on this node's clock, when the
    /// read that showed it gone was answered, against the expiry the store reported): it
    /// stopped renewing. A lease released within its
    /// minimum lease time stays until that time and shows as expired unless the backend
    /// sent a release notification.
    Expired,
}

impl ChangeKind {
    /// `initial`, `acquired`, `released` or `expired`: for logs, JSON and metric labels.
    ///
    /// ```
    /// assert_eq!(leader_core::ChangeKind::Expired.as_str(), "expired");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Initial => "initial",
            ChangeKind::Acquired => "acquired",
            ChangeKind::Released => "released",
            ChangeKind::Expired => "expired",
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change of a lock's holder, as an observer (`observe` on an elector) saw it.
///
/// Renewals are no change: a holder that keeps renewing shows once, as `Acquired` (or in
/// the `Initial` change).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{ChangeKind, LeaderChange, LeaderLease};
///
/// let now = SystemTime::now();
/// let holder = LeaderLease::new("node-a", now, now + Duration::from_secs(30), 7);
/// let change = LeaderChange::new(ChangeKind::Acquired, "nightly", 0, Some(holder), now);
/// assert_eq!(change.to_string(), "nightly acquired by node-a (token 7)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderChange {
    /// What happened.
    pub kind: ChangeKind,
    /// The lock, as the caller names it (a group's slot `i ≥ 1` as `name#i`).
    pub lock_name: String,
    /// The slot of a leader group (0 for a single lock).
    pub slot: u32,
    /// The new holder (`Initial`, `Acquired`), or the one that went (`Released`,
    /// `Expired`); `None` only for the `Initial` look at a free lock.
    pub holder: Option<LeaderLease>,
    /// When the observer saw it (this node's clock): when the read that showed it was
    /// answered, or when a release notification came.
    pub seen_at: SystemTime,
}

impl LeaderChange {
    /// A change, as an observer builds it.
    pub fn new(
        kind: ChangeKind,
        lock_name: impl Into<String>,
        slot: u32,
        holder: Option<LeaderLease>,
        seen_at: SystemTime,
    ) -> Self {
        LeaderChange {
            kind,
            lock_name: lock_name.into(),
            slot,
            holder,
            seen_at,
        }
    }
}

impl fmt::Display for LeaderChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.kind, &self.holder) {
            (ChangeKind::Initial, None) => write!(f, "{} free", self.lock_name),
            (ChangeKind::Initial, Some(holder)) => write!(
                f,
                "{} held by {} (token {})",
                self.lock_name, holder.leader_id, holder.fencing_token
            ),
            (ChangeKind::Acquired, Some(holder)) => write!(
                f,
                "{} acquired by {} (token {})",
                self.lock_name, holder.leader_id, holder.fencing_token
            ),
            (kind, Some(holder)) => write!(
                f,
                "{} {kind} (was {}, token {})",
                self.lock_name, holder.leader_id, holder.fencing_token
            ),
            (kind, None) => write!(f, "{} {kind}", self.lock_name),
        }
    }
}
