//! [`LeaderRunResult`]: the outcome of running an action only if elected.

use crate::spi::lease::Lease;

/// What happened to an action submitted with `run_if_leader_result`.
///
/// The same type comes back from every elector, blocking, thread-pool and async.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{LeaderRunResult, Lease, LockName, OwnerToken};
///
/// let now = SystemTime::now();
/// let lease = Lease::new(LockName::new("job")?, OwnerToken::random(), "node-a", 42, now, now + Duration::from_secs(30));
/// let outcome: LeaderRunResult<u32, String> = LeaderRunResult::elected(7, &lease, false);
/// match &outcome {
///     LeaderRunResult::Elected { value, fencing_token, .. } => assert_eq!((*value, *fencing_token), (7, 42)),
///     LeaderRunResult::Skipped => println!("another node led"),
///     LeaderRunResult::ActionFailed(error) => println!("the job failed: {error}"),
/// }
/// assert!(outcome.is_elected());
/// assert!(!outcome.lease_lost());
/// assert_eq!(outcome.fencing_token(), Some(42));
/// assert_eq!(outcome.map(|v| v * 2).into_value(), Some(14));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "the action may not have run; check whether it was elected"]
pub enum LeaderRunResult<T, E> {
    /// This node held the lock and the action returned `Ok(value)`.
    ///
    /// More fields may be added: match with `..`, build with [`LeaderRunResult::elected`].
    #[non_exhaustive]
    Elected {
        /// What the action returned.
        value: T,
        /// This node's id, as recorded in the lock.
        leader_id: String,
        /// The fencing token of the acquisition the action ran under (tokens increase per
        /// slot of a group: compare them within one slot).
        fencing_token: u64,
        /// The slot of the group this node led in: `0..slots` for a leader group, always 0
        /// for a single lock (a group of one).
        slot: u32,
        /// `true` when the lease was lost before the action returned: its deadline passed
        /// (an action that outlived a lease without `auto_extend`, a renewal answered too
        /// late) or a renewal failed or found the lock gone. Another node may then have run
        /// the job meanwhile; writes fenced with `fencing_token` were refused by storage
        /// that checks it. Also logged at `warn`.
        lease_lost: bool,
    },
    /// Another node held the lock for the whole `wait_time`; the action did not run.
    Skipped,
    /// This node held the lock and the action returned `Err(error)`.
    ActionFailed(E),
}

impl<T, E> LeaderRunResult<T, E> {
    /// An elected outcome: the action returned `value` under `lease`; `lease_lost` tells
    /// whether the lease was lost before it returned.
    pub fn elected(value: T, lease: &Lease, lease_lost: bool) -> Self {
        LeaderRunResult::elected_in_slot(value, lease, 0, lease_lost)
    }

    /// An elected outcome of a leader group: the action returned `value` under `lease`,
    /// which holds `slot` of the group.
    pub fn elected_in_slot(value: T, lease: &Lease, slot: u32, lease_lost: bool) -> Self {
        LeaderRunResult::Elected {
            value,
            leader_id: lease.leader_id.clone(),
            fencing_token: lease.fencing_token,
            slot,
            lease_lost,
        }
    }

    /// `true` if the action ran and succeeded.
    pub fn is_elected(&self) -> bool {
        matches!(self, LeaderRunResult::Elected { .. })
    }

    /// `true` if the action did not run because another node led.
    pub fn is_skipped(&self) -> bool {
        matches!(self, LeaderRunResult::Skipped)
    }

    /// `true` if the action ran and returned an error.
    pub fn is_action_failed(&self) -> bool {
        matches!(self, LeaderRunResult::ActionFailed(_))
    }

    /// The action's value, if it ran and succeeded.
    pub fn value(&self) -> Option<&T> {
        match self {
            LeaderRunResult::Elected { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The action's value, by value.
    pub fn into_value(self) -> Option<T> {
        match self {
            LeaderRunResult::Elected { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The action's error, if it ran and failed.
    pub fn error(&self) -> Option<&E> {
        match self {
            LeaderRunResult::ActionFailed(error) => Some(error),
            _ => None,
        }
    }

    /// The fencing token the action ran under, if elected.
    pub fn fencing_token(&self) -> Option<u64> {
        match self {
            LeaderRunResult::Elected { fencing_token, .. } => Some(*fencing_token),
            _ => None,
        }
    }

    /// The slot of the group the action ran in, if elected (0 for a single lock).
    pub fn slot(&self) -> Option<u32> {
        match self {
            LeaderRunResult::Elected { slot, .. } => Some(*slot),
            _ => None,
        }
    }

    /// `true` if the action ran but its lease was lost before it returned (see
    /// [`LeaderRunResult::Elected::lease_lost`]).
    pub fn lease_lost(&self) -> bool {
        matches!(
            self,
            LeaderRunResult::Elected {
                lease_lost: true,
                ..
            }
        )
    }

    /// Maps the value of an elected outcome.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> LeaderRunResult<U, E> {
        match self {
            LeaderRunResult::Elected {
                value,
                leader_id,
                fencing_token,
                slot,
                lease_lost,
            } => LeaderRunResult::Elected {
                value: f(value),
                leader_id,
                fencing_token,
                slot,
                lease_lost,
            },
            LeaderRunResult::Skipped => LeaderRunResult::Skipped,
            LeaderRunResult::ActionFailed(e) => LeaderRunResult::ActionFailed(e),
        }
    }

    /// Maps the error of a failed action.
    pub fn map_err<F>(self, f: impl FnOnce(E) -> F) -> LeaderRunResult<T, F> {
        match self {
            LeaderRunResult::Elected {
                value,
                leader_id,
                fencing_token,
                slot,
                lease_lost,
            } => LeaderRunResult::Elected {
                value,
                leader_id,
                fencing_token,
                slot,
                lease_lost,
            },
            LeaderRunResult::Skipped => LeaderRunResult::Skipped,
            LeaderRunResult::ActionFailed(e) => LeaderRunResult::ActionFailed(f(e)),
        }
    }

    /// `Ok(Some(value))` if elected, `Ok(None)` if skipped, `Err(error)` if the action failed.
    pub fn into_result(self) -> Result<Option<T>, E> {
        match self {
            LeaderRunResult::Elected { value, .. } => Ok(Some(value)),
            LeaderRunResult::Skipped => Ok(None),
            LeaderRunResult::ActionFailed(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_agree_with_the_variant() {
        let skipped: LeaderRunResult<i32, &str> = LeaderRunResult::Skipped;
        assert!(skipped.is_skipped() && !skipped.is_elected() && skipped.value().is_none());
        assert!(!skipped.lease_lost());
        assert_eq!(skipped.into_result(), Ok(None));

        let failed: LeaderRunResult<i32, &str> = LeaderRunResult::ActionFailed("boom");
        assert!(failed.is_action_failed());
        assert_eq!(failed.error(), Some(&"boom"));
        assert_eq!(failed.map_err(str::len), LeaderRunResult::ActionFailed(4));

        let elected: LeaderRunResult<i32, &str> = LeaderRunResult::Elected {
            value: 1,
            leader_id: "n".into(),
            fencing_token: 9,
            slot: 2,
            lease_lost: true,
        };
        assert_eq!(elected.slot(), Some(2));
        assert!(elected.lease_lost());
        assert_eq!(elected.value(), Some(&1));
        assert_eq!(elected.clone().into_result(), Ok(Some(1)));
        assert_eq!(elected.map(|v| v + 1).into_value(), Some(2));
    }
}
