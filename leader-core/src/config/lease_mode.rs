//! [`LeaseMode`]: how a must-run lock guard keeps its lease. (`LeaseMode::apply`, which
//! builds the engine's `Keepalive`, is written in `engine/keepalive.rs`.)

use std::time::Duration;

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
}

impl Default for LeaseMode {
    fn default() -> Self {
        LeaseMode::watchdog()
    }
}
