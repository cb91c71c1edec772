//! The clock seam of the in-memory backend: a wall clock for the times it reports and a
//! monotonic clock for the expiry it decides.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

/// The time source of [`InMemoryBackend`](crate::InMemoryBackend).
///
/// Two readings, for two jobs:
/// - [`now`](Self::now), the wall clock, stamps the `acquired_at` / `expires_at` that leases
///   and snapshots report;
/// - [`monotonic`](Self::monotonic) decides expiry. It never goes back and ignores wall-clock
///   steps (an NTP correction, an operator's `date -s`), so a step can neither cut a holder's
///   lease short (letting a second holder in while the first still believes it holds) nor
///   stretch it.
pub trait Clock: Send + Sync + Debug {
    /// The current wall-clock time.
    fn now(&self) -> SystemTime;

    /// The current reading of the monotonic clock that decides expiry.
    fn monotonic(&self) -> Instant;

    /// `true` when [`now`](Self::now) is the system's wall clock (lets the backend read it
    /// once where it would otherwise read both it and the system clock).
    fn is_system_clock(&self) -> bool {
        false
    }
}

/// The system's clocks: [`SystemTime`] for reports, [`Instant`] for expiry.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn monotonic(&self) -> Instant {
        Instant::now()
    }

    fn is_system_clock(&self) -> bool {
        true
    }
}

/// A clock that only moves when told to, so tests can expire leases without sleeping.
///
/// [`advance`](Self::advance) moves both readings, like time passing;
/// [`set_wall_clock`](Self::set_wall_clock) moves only the wall clock, like an NTP step, so
/// tests can check that a step changes no lease.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{Clock, ManualClock};
///
/// let clock = ManualClock::new(SystemTime::UNIX_EPOCH);
/// let start = clock.monotonic();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), SystemTime::UNIX_EPOCH + Duration::from_secs(5));
/// clock.set_wall_clock(SystemTime::UNIX_EPOCH); // stepped back: expiry does not notice
/// assert_eq!(clock.monotonic() - start, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    readings: Arc<Mutex<Readings>>,
}

#[derive(Debug, Clone, Copy)]
struct Readings {
    wall: SystemTime,
    monotonic: Instant,
}

impl ManualClock {
    /// A clock stopped at wall-clock time `start`.
    pub fn new(start: SystemTime) -> Self {
        ManualClock {
            readings: Arc::new(Mutex::new(Readings {
                wall: start,
                monotonic: Instant::now(),
            })),
        }
    }

    /// Lets `by` pass: both the wall clock and the monotonic clock move forward.
    pub fn advance(&self, by: Duration) {
        let mut readings = self.readings.lock();
        readings.wall += by;
        readings.monotonic += by;
    }

    /// Steps the wall clock to `to` (forward or back) and leaves the monotonic clock alone,
    /// as an NTP correction does.
    pub fn set_wall_clock(&self, to: SystemTime) {
        self.readings.lock().wall = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        self.readings.lock().wall
    }

    fn monotonic(&self) -> Instant {
        self.readings.lock().monotonic
    }
}
