//! The host's clocks, in the microseconds the tables store.
//!
//! Expiry is decided on the host's monotonic clock (`CLOCK_MONOTONIC` on Linux): every
//! process of the host reads the same clock, and no step of the wall clock (an NTP step, a
//! `date -s`, a resumed VM's correction) moves it. It is the clock the electors' deadlines
//! run on too (`std::time::Instant`), so a holder and the file never disagree about how
//! much of a lease is left, not even across a suspend of the host (which neither counts).
//! It starts again at zero when the host boots, so each instant is stored with the boot it
//! counts from (the kernel's boot id), and a row written under another boot has expired.
//!
//! The wall clock is only read to report times (`acquired_at`, `expires_at`: now on the
//! wall clock plus the time from now to the instant) and to floor fencing tokens, which
//! must keep growing across reboots (the monotonic clock does not).
//!
//! Elsewhere (macOS, Windows, the BSDs) both jobs fall back to the wall clock, with the
//! weakness documented in the crate docs: a forward step of the host's wall clock expires
//! the leases in the file early.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader_core::kit::Deadline;

use crate::error::OpError;

/// The host's clocks, and the boot the monotonic one counts from (read once, at open).
#[derive(Debug, Clone)]
pub(crate) struct HostClock {
    boot: Arc<str>,
}

impl HostClock {
    /// The clocks of this boot.
    ///
    /// # Errors
    ///
    /// When the boot id cannot be read: without it a reboot could not be told apart.
    pub(crate) fn new() -> std::io::Result<Self> {
        Ok(HostClock {
            boot: imp::boot_id()?.into(),
        })
    }

    /// The boot the monotonic clock counts from: the kernel's boot id.
    pub(crate) fn boot(&self) -> &str {
        &self.boot
    }

    /// Both clocks, now.
    pub(crate) fn now(&self) -> Result<Now, OpError> {
        Ok(Now {
            at: imp::monotonic_micros().ok_or(OpError::Clock)?,
            wall: SystemTime::now(),
        })
    }
}

/// One reading of the host's clocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    /// Microseconds on the monotonic clock of this boot: what the tables store.
    pub(crate) at: i64,
    wall: SystemTime,
}

impl Now {
    /// The instant `lease` from now, if both the tables (`i64` microseconds) and the
    /// reported `SystemTime` can hold it.
    pub(crate) fn after(&self, lease: Duration) -> Result<i64, OpError> {
        i64::try_from(lease.as_micros())
            .ok()
            .and_then(|micros| self.at.checked_add(micros))
            .filter(|_| self.wall.checked_add(lease).is_some())
            .ok_or(OpError::LeaseTooLong(leader_core::LeaseTooLong::new(lease)))
    }

    /// A stored instant on the wall clock: now there, plus the time from now to it.
    pub(crate) fn wall_time(&self, at: i64) -> Result<SystemTime, OpError> {
        let out_of_range = OpError::Corrupt("a time out of range");
        let ahead = at.checked_sub(self.at).ok_or(out_of_range)?;
        let by = Duration::from_micros(ahead.unsigned_abs());
        let wall = if ahead >= 0 {
            self.wall.checked_add(by)
        } else {
            self.wall.checked_sub(by)
        };
        wall.ok_or(OpError::Corrupt("a time out of range"))
    }

    /// The wall clock in microseconds since the Unix epoch: the least fencing token a new
    /// holder gets, so that tokens keep growing across reboots and lost counters.
    pub(crate) fn token_floor(&self) -> Result<i64, OpError> {
        self.wall
            .duration_since(UNIX_EPOCH)
            .ok()
            .and_then(|since| i64::try_from(since.as_micros()).ok())
            .ok_or(OpError::Clock)
    }
}

/// An instant on the host's monotonic clock of this boot, in the microseconds the tables
/// store: the clock the read/write locks' rules (`leader_core::kit::SharedRecord`) decide
/// expiry on. A stored instant of another boot is never made one of these: its record has
/// expired (`shared`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Micros(pub(crate) i64);

impl Deadline for Micros {
    fn after(self, by: Duration) -> Option<Self> {
        micros(by).and_then(|by| self.0.checked_add(by)).map(Micros)
    }
}

/// `duration` in microseconds, or `None` beyond what the tables hold.
pub(crate) fn micros(duration: Duration) -> Option<i64> {
    i64::try_from(duration.as_micros()).ok()
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use std::io;

    use rustix::time::{ClockId, clock_gettime};

    /// A random id the kernel draws at each boot.
    const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

    pub(super) fn boot_id() -> io::Result<String> {
        let text = std::fs::read_to_string(BOOT_ID)?;
        let id = text.trim();
        if id.is_empty() || id.len() > 64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{BOOT_ID} holds no boot id"),
            ));
        }
        Ok(id.to_owned())
    }

    /// `CLOCK_MONOTONIC` in microseconds: time since boot, suspends excluded, never
    /// stepped (NTP only slews its rate, for every process alike).
    pub(super) fn monotonic_micros() -> Option<i64> {
        let now = clock_gettime(ClockId::Monotonic);
        now.tv_sec
            .checked_mul(1_000_000)?
            .checked_add(now.tv_nsec / 1_000)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    use std::io;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// Without a boot id, every row counts from one "boot": the Unix epoch.
    #[allow(clippy::unnecessary_wraps)]
    pub(super) fn boot_id() -> io::Result<String> {
        Ok("wall-clock".to_owned())
    }

    /// The wall clock in microseconds since the Unix epoch.
    pub(super) fn monotonic_micros() -> Option<i64> {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        i64::try_from(since.as_micros()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Now {
        HostClock::new().unwrap().now().unwrap()
    }

    #[test]
    fn an_instant_reads_back_as_the_wall_time_it_is_from_now() {
        let now = now();
        assert_eq!(now.wall_time(now.at).unwrap(), now.wall);
        let later = now.after(Duration::from_secs(30)).unwrap();
        assert_eq!(later - now.at, 30_000_000);
        assert_eq!(
            now.wall_time(later).unwrap(),
            now.wall + Duration::from_secs(30)
        );
        assert_eq!(
            now.wall_time(now.at - 1_500_000).unwrap(),
            now.wall - Duration::from_millis(1_500)
        );
    }

    #[test]
    fn a_lease_the_tables_or_a_system_time_cannot_hold_is_an_error() {
        let now = now();
        for lease in [
            Duration::MAX,
            Duration::from_secs(i64::MAX as u64),
            Duration::from_micros(i64::MAX as u64),
        ] {
            assert!(
                matches!(now.after(lease), Err(OpError::LeaseTooLong(l)) if l.lease() == lease),
                "{lease:?}"
            );
        }
        assert!(
            now.after(Duration::from_secs(100 * 366 * 24 * 3600))
                .is_ok()
        );
        // Out of range: an error, not a panic (and no panic at the other end either,
        // whatever range the platform's SystemTime has).
        assert!(now.wall_time(i64::MIN).is_err());
        let _ = now.wall_time(i64::MAX);
    }

    #[test]
    fn the_monotonic_clock_does_not_go_back() {
        let clock = HostClock::new().unwrap();
        let first = clock.now().unwrap().at;
        std::thread::sleep(Duration::from_millis(2));
        assert!(clock.now().unwrap().at >= first + 1_000);
        assert!(!clock.boot().is_empty());
        assert_eq!(micros(Duration::from_millis(3)), Some(3_000));
        assert_eq!(micros(Duration::MAX), None);
        assert_eq!(
            Micros(5).after(Duration::from_millis(1)),
            Some(Micros(1_005))
        );
        assert_eq!(Micros(i64::MAX).after(Duration::from_micros(1)), None);
        assert_eq!(Micros(0).after(Duration::MAX), None);
    }
}
