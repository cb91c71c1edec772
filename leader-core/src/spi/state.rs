//! Best-effort snapshots of who leads a lock.

use std::time::SystemTime;

/// Whether a lock is held right now (as far as a snapshot can tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockStatus {
    /// Nobody holds the lock.
    Empty,
    /// Somebody holds an unexpired lease.
    Occupied,
}

/// The holder of a lock, as recorded in the backend.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderLease {
    /// The holder's node id.
    pub leader_id: String,
    /// When the holder acquired the lock.
    pub acquired_at: SystemTime,
    /// When the lease runs out unless renewed.
    pub expires_at: SystemTime,
    /// The fencing token of the holder's acquisition.
    pub fencing_token: u64,
}

impl LeaderLease {
    /// A holder record.
    pub fn new(
        leader_id: impl Into<String>,
        acquired_at: SystemTime,
        expires_at: SystemTime,
        fencing_token: u64,
    ) -> Self {
        LeaderLease {
            leader_id: leader_id.into(),
            acquired_at,
            expires_at,
            fencing_token,
        }
    }
}

/// A best-effort snapshot of a lock: who leads it, since when, until when.
///
/// It may be stale the moment it is returned; never use it to decide whether to run
/// (use `run_if_leader` for that). Backends never report an expired lease here.
///
/// # Examples
///
/// ```
/// use leader_core::{LeaderState, LockStatus};
/// let state = LeaderState::empty("nightly");
/// assert_eq!(state.status(), LockStatus::Empty);
/// assert!(state.leader().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderState {
    lock_name: String,
    leader: Option<LeaderLease>,
}

impl LeaderState {
    /// A snapshot of a free lock.
    pub fn empty(lock_name: impl Into<String>) -> Self {
        LeaderState {
            lock_name: lock_name.into(),
            leader: None,
        }
    }

    /// A snapshot of a held lock.
    pub fn occupied(lock_name: impl Into<String>, leader: LeaderLease) -> Self {
        LeaderState {
            lock_name: lock_name.into(),
            leader: Some(leader),
        }
    }

    /// The lock's name, as the caller named it (without any tenant prefix when the
    /// snapshot came from a tenant-scoped elector).
    pub fn lock_name(&self) -> &str {
        &self.lock_name
    }

    /// [`LockStatus::Occupied`] when there is a leader.
    pub fn status(&self) -> LockStatus {
        match self.leader {
            Some(_) => LockStatus::Occupied,
            None => LockStatus::Empty,
        }
    }

    /// The current holder, if any.
    pub fn leader(&self) -> Option<&LeaderLease> {
        self.leader.as_ref()
    }

    /// The same snapshot under another name (used by tenant scoping to strip its prefix).
    pub fn with_lock_name(self, lock_name: impl Into<String>) -> Self {
        LeaderState {
            lock_name: lock_name.into(),
            leader: self.leader,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn extreme_times_print_without_panicking() {
        let far = UNIX_EPOCH + Duration::from_micros(u64::MAX);
        let before = UNIX_EPOCH - Duration::from_secs(86_400 * 365 * 3000);
        let lease = LeaderLease::new("node-a", before, far, u64::MAX);
        let state = LeaderState::occupied("job", lease.clone());
        let text = format!("{state:?} {lease:#?}");
        assert!(
            text.contains("node-a") && text.contains("18446744073709551615"),
            "{text}"
        );
    }
}
