//! The clock seam of the in-memory backend.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

/// A source of wall-clock time for [`InMemoryBackend`](crate::InMemoryBackend).
pub trait Clock: Send + Sync + Debug {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// `true` when this clock is the system's wall clock (lets the backend read it once
    /// where it would otherwise read both it and the system clock).
    fn is_system_clock(&self) -> bool {
        false
    }
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn is_system_clock(&self) -> bool {
        true
    }
}

/// A clock that only moves when told to, so tests can expire leases without sleeping.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{Clock, ManualClock};
///
/// let clock = ManualClock::new(SystemTime::UNIX_EPOCH);
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), SystemTime::UNIX_EPOCH + Duration::from_secs(5));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<SystemTime>>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: SystemTime) -> Self {
        ManualClock {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock();
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock()
    }
}
