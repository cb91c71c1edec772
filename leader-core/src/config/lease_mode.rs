//! [`LeaseMode`]: how a must-run lock guard keeps its lease.

use std::time::Duration;

use crate::config::options::LeaderElectionOptions;
use crate::engine::keepalive::Keepalive;
use crate::error::OptionsError;

/// How a lock guard (`acquire` / `with_lock` on the electors) keeps its lease.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::LeaseMode;
///
/// let renewed = LeaseMode::watchdog(); // 30 s lease, renewed every 10 s while the guard lives
/// let fixed = LeaseMode::Fixed(Duration::from_secs(300)); // hard expiry, never renewed
/// assert_eq!(renewed, LeaseMode::Watchdog { timeout: Duration::from_secs(30) });
/// # let _ = fixed;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseMode {
    /// A lease of `timeout`, renewed every `timeout / 3` while the guard lives. If the
    /// process dies the lock frees itself within `timeout`.
    Watchdog {
        /// The lease length (and the longest a crashed holder blocks others).
        timeout: Duration,
    },
    /// A lease with a hard expiry: never renewed. When it runs out while the guard is
    /// still held, the guard reports the loss.
    Fixed(Duration),
}

impl LeaseMode {
    /// The default watchdog timeout.
    pub const DEFAULT_WATCHDOG_TIMEOUT: Duration = Duration::from_secs(30);

    /// [`LeaseMode::Watchdog`] with the default 30 s timeout.
    pub fn watchdog() -> Self {
        LeaseMode::Watchdog {
            timeout: Self::DEFAULT_WATCHDOG_TIMEOUT,
        }
    }

    /// The lease length this mode asks for.
    pub fn lease_time(&self) -> Duration {
        match *self {
            LeaseMode::Watchdog { timeout } => timeout,
            LeaseMode::Fixed(lease) => lease,
        }
    }

    /// `options` with this mode's lease, validated, and the keepalive it implies.
    ///
    /// # Errors
    ///
    /// An [`OptionsError`] when the lease is invalid (zero, too long, below `min_lease_time`).
    pub fn apply(
        &self,
        options: &LeaderElectionOptions,
    ) -> Result<(LeaderElectionOptions, Keepalive), OptionsError> {
        let options = options
            .clone()
            .with_lease_time(self.lease_time())
            .with_auto_extend(matches!(self, LeaseMode::Watchdog { .. }));
        options.validate()?;
        let keepalive = Keepalive::from_options(&options);
        Ok((options, keepalive))
    }
}

impl Default for LeaseMode {
    fn default() -> Self {
        LeaseMode::watchdog()
    }
}
