//! [`Keepalive`]: how a held lease is kept alive and let go.

use std::time::{Duration, Instant};

use crate::config::lease_mode::LeaseMode;
use crate::config::options::LeaderElectionOptions;
use crate::engine::renewal_schedule::RenewalSchedule;
use crate::error::OptionsError;
use crate::spi::lease::Lease;
use crate::spi::request::Renewal;

/// How an elector keeps a held lease alive and releases it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// The lease length asked for at each renewal.
    pub lease_time: Duration,
    /// `Some(interval)`: renew every `interval`; `None`: let the lease run out.
    pub renew_every: Option<Duration>,
    /// Take timestamps from the backend's clock.
    pub use_db_time: bool,
    /// Keep the lock until `acquired_at + min_lease_time` on release.
    pub min_lease_time: Duration,
}

impl Keepalive {
    /// What `options` ask for: renew every `lease_time / 3` when `auto_extend` is set.
    pub fn from_options(options: &LeaderElectionOptions) -> Self {
        Keepalive {
            lease_time: options.lease_time(),
            renew_every: options.auto_extend().then(|| options.renew_interval()),
            use_db_time: options.use_db_time(),
            min_lease_time: options.min_lease_time(),
        }
    }

    /// The renewal of `lease` these settings ask for: the lease time and clock go from the
    /// options to the store as this one value.
    pub fn renewal<'a>(&self, lease: &'a Lease) -> Renewal<'a> {
        Renewal::new(lease, self.lease_time).with_db_time(self.use_db_time)
    }

    /// The renewals of a lease whose acquire request was sent at `sent_at`: `None` when it
    /// is not renewed.
    pub fn schedule(&self, sent_at: Instant) -> Option<RenewalSchedule> {
        self.renew_every
            .map(|interval| RenewalSchedule::new(sent_at, interval))
    }
}

// Written here rather than beside `LeaseMode` because it builds the engine's `Keepalive`:
// this way the configuration imports nothing from the engine.
impl LeaseMode {
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
