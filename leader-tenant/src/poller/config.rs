//! [`PollerConfig`] and [`ShutdownMode`], shared by both pollers.

use std::time::Duration;

use leader_core::{LeaderElectionOptions, LockName};

use crate::error::TenantError;

/// What a poller does with the jobs in flight when its [`Shutdown`](crate::Shutdown) fires.
///
/// Either way no new tenant is started, and every lease is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ShutdownMode {
    /// Wait for the jobs in flight to finish and report them (the default).
    #[default]
    Finish,
    /// Return at once; the jobs in flight are reported as
    /// [`Abandoned`](crate::TenantOutcome::Abandoned). An async job's future is dropped (its
    /// lease is released in the background); a blocking job cannot be stopped, so it runs
    /// to its end on its worker, which then releases its lease.
    Abandon,
}

/// How a poller runs: the job's lock name, the interval, the concurrency, the minimum lease.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `job_name` | (required) | the lock name, scoped per tenant: `tenant:<id>:<job_name>` |
/// | `interval` | (required) | cycles start at every multiple of it since the Unix epoch |
/// | `concurrency` | 8 | tenants in flight at once (async); tasks handed to the pool at once (blocking) |
/// | `min_lease_time` | `interval - interval / 10` | how long a tenant's lock stays taken after its job started |
/// | `shutdown_mode` | [`ShutdownMode::Finish`] | finish or abandon jobs in flight on shutdown |
///
/// # Exactly once per cycle
///
/// Instances of a service do not start their cycles at the same moment, and a job that
/// finishes quickly would free its tenant's lock for a late instance to take and run the
/// job again. So the poller's jobs release with a *minimum lease*: the lock stays taken
/// until `min_lease_time` after it was acquired, and any instance reaching the tenant in
/// that window skips it. Cycles are aligned on multiples of `interval` since the Unix epoch
/// (as cron aligns them), so all instances share cycle boundaries up to their clock skew.
///
/// The default `interval - interval / 10` lets an instance be up to 90% of an interval
/// late and still skip, and leaves 10% of an interval for the next cycle's winner to reach
/// the tenant earlier than this cycle's did (it finds the lock free again). Work that needs
/// more than 90% of an interval to reach every tenant needs a longer interval or more
/// concurrency. `min_lease_time` must not exceed the interval; zero turns the guard off
/// (jobs then may run more than once per cycle).
///
/// The elector's own options are kept (node id, lease time, auto-extend, db time) except
/// that `wait_time` becomes zero (a held tenant lock means "another instance has it", not
/// "wait"), `min_lease_time` becomes the poller's, and `lease_time` is raised to
/// `min_lease_time` if it is shorter. A job that can outlive `lease_time` should run with
/// `auto_extend`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_tenant::{PollerConfig, ShutdownMode};
///
/// let config = PollerConfig::new("sync-invoices", Duration::from_secs(60))
///     .with_concurrency(16)
///     .with_shutdown_mode(ShutdownMode::Abandon);
/// assert_eq!(config.min_lease_time(), Duration::from_secs(54));
/// config.validate()?;
/// # Ok::<(), leader_tenant::TenantError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollerConfig {
    job_name: String,
    interval: Duration,
    concurrency: usize,
    min_lease_time: Option<Duration>,
    shutdown_mode: ShutdownMode,
}

impl PollerConfig {
    /// A configuration for the job `job_name`, run every `interval`.
    pub fn new(job_name: impl Into<String>, interval: Duration) -> Self {
        PollerConfig {
            job_name: job_name.into(),
            interval,
            concurrency: 8,
            min_lease_time: None,
            shutdown_mode: ShutdownMode::Finish,
        }
    }

    /// Sets how many tenants may be in flight at once (at least one). For the blocking
    /// poller, use the pool's worker count: tasks beyond it wait in the pool's queue and
    /// cannot be withdrawn at shutdown.
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Sets the minimum lease (see the type's docs; zero turns the guard off).
    pub fn with_min_lease_time(mut self, min_lease_time: Duration) -> Self {
        self.min_lease_time = Some(min_lease_time);
        self
    }

    /// Sets what happens to the jobs in flight on shutdown.
    pub fn with_shutdown_mode(mut self, shutdown_mode: ShutdownMode) -> Self {
        self.shutdown_mode = shutdown_mode;
        self
    }

    /// The job's lock name, before tenant scoping.
    pub fn job_name(&self) -> &str {
        &self.job_name
    }

    /// The time between cycle starts.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How many tenants may be in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The minimum lease the poller's jobs run with.
    pub fn min_lease_time(&self) -> Duration {
        self.min_lease_time
            .unwrap_or(self.interval - self.interval / 10)
    }

    /// What happens to the jobs in flight on shutdown.
    pub fn shutdown_mode(&self) -> ShutdownMode {
        self.shutdown_mode
    }

    /// Checks the job name, the interval and the minimum lease.
    ///
    /// # Errors
    ///
    /// [`TenantError::Name`], [`TenantError::IntervalTooShort`] or
    /// [`TenantError::MinLeaseAboveInterval`].
    pub fn validate(&self) -> Result<(), TenantError> {
        LockName::new(self.job_name.as_str())?;
        if self.interval < Duration::from_millis(1) {
            return Err(TenantError::IntervalTooShort(self.interval));
        }
        if self.min_lease_time() > self.interval {
            return Err(TenantError::MinLeaseAboveInterval {
                min: self.min_lease_time(),
                interval: self.interval,
            });
        }
        Ok(())
    }

    /// The elector options the poller's jobs run with, derived from `base`.
    pub(crate) fn elector_options(&self, base: &LeaderElectionOptions) -> LeaderElectionOptions {
        let min_lease = self.min_lease_time();
        base.clone()
            .with_wait_time(Duration::ZERO)
            .with_min_lease_time(min_lease)
            .with_lease_time(base.lease_time().max(min_lease))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_options_try_once_and_keep_the_lock_for_the_min_lease() {
        let config = PollerConfig::new("job", Duration::from_secs(100));
        let base = LeaderElectionOptions::default()
            .with_lease_time(Duration::from_secs(30))
            .with_node_id("n1")
            .with_auto_extend(true);
        let derived = config.elector_options(&base);
        assert_eq!(derived.wait_time(), Duration::ZERO);
        assert_eq!(derived.min_lease_time(), Duration::from_secs(90));
        assert_eq!(derived.lease_time(), Duration::from_secs(90));
        assert_eq!(derived.node_id(), "n1");
        assert!(derived.auto_extend());
        assert!(derived.validate().is_ok());
    }

    #[test]
    fn validate_names_each_problem() {
        let ok = PollerConfig::new("job", Duration::from_secs(1));
        assert!(ok.validate().is_ok());
        assert!(matches!(
            PollerConfig::new("", Duration::from_secs(1)).validate(),
            Err(TenantError::Name(_))
        ));
        assert!(matches!(
            PollerConfig::new("job", Duration::ZERO).validate(),
            Err(TenantError::IntervalTooShort(_))
        ));
        assert!(matches!(
            ok.with_min_lease_time(Duration::from_secs(2)).validate(),
            Err(TenantError::MinLeaseAboveInterval { .. })
        ));
        assert_eq!(
            PollerConfig::new("job", Duration::from_secs(1))
                .with_concurrency(0)
                .concurrency(),
            1
        );
    }
}
