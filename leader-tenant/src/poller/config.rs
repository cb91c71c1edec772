//! [`PollerConfig`] and [`ShutdownMode`], shared by both pollers.

use std::time::{Duration, SystemTime};

use leader_core::{LeaderElectionOptions, LockName};

use crate::error::TenantError;
use crate::poller::schedule;

/// What a poller does with the jobs in flight when its [`Shutdown`](crate::Shutdown) fires.
///
/// Either way no new tenant is started, and every lease is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
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
/// | `concurrency` | the pool's worker count (blocking), 8 (async) | jobs running at once: in as many tasks on the pool (blocking), as many futures in the cycle's (async) |
/// | `acquire_batch` | 64 | tenants' locks tried in one backend call (see "Batches") |
/// | minimum lease | until the cycle's end, less `cycle_end_guard` | how long a tenant's lock stays taken after its job started |
/// | `cycle_end_guard` | `min(interval / 10, 1 s)` | how long before the cycle's end the lock is freed |
/// | `shutdown_mode` | [`ShutdownMode::Finish`] | finish or abandon jobs in flight on shutdown |
///
/// # Exactly once per cycle
///
/// Cycles are numbered alike on every instance: cycle `n` is the `n`-th whole interval since
/// the Unix epoch, and `run` starts each at its boundary (as cron does). Instances still do
/// not reach a tenant at the same moment (they start at slightly different times, process
/// tenants at different speeds, or are driven by `run_cycle` from schedulers of their own,
/// at any phase), and a job that finishes quickly would free its tenant's lock for a late
/// instance to take and run the job again.
///
/// So the poller's jobs release with a *minimum lease* that lasts until the end of the
/// cycle they ran in, less a small guard: the lock stays taken until then, every instance
/// that reaches the tenant later in the same cycle skips it, and the lock is free again
/// when the next cycle starts, however early in that cycle an instance reaches the tenant.
/// The guard (`min(interval / 10, 1 s)` by default) absorbs clock skew between the instances
/// and the latency of the acquire. A lock won in a batch whose answer comes within the
/// guard before the cycle's end — a cycle that overran by nearly a whole interval, or a
/// store so slow that the answer came after the cycle's locks were freed — does not run
/// its job: another instance may have run it and freed the lock in between. Its outcome is
/// `Skipped` (with a warning in the log), its lock is released, and the next cycle runs it:
/// a tenant may miss a cycle this way, but is not run twice in one. `run` logs overruns.
///
/// The minimum lease is computed per tenant, when its run starts. With
/// [`with_min_lease_time`](Self::with_min_lease_time) it is a fixed duration instead (zero
/// turns the guard off: jobs may then run more than once per cycle).
///
/// The elector's own options are kept (node id, lease time, auto-extend, db time) except
/// that `wait_time` becomes zero (a held tenant lock means "another instance has it", not
/// "wait"), `min_lease_time` becomes the poller's, and `lease_time` is raised to it if
/// shorter. A job that can outlive `lease_time` should run with `auto_extend`.
///
/// # Batches
///
/// A poller tries its tenants' locks [`acquire_batch`](Self::with_acquire_batch) at a time,
/// in one backend call (on Redis one round trip), rather than one call per tenant: of
/// 10,000 tenants on three instances, each instance runs about a third and skips the rest,
/// and a skip then costs a share of a round trip instead of a whole one. The tenants it won
/// wait for a free worker; the next batch is tried only when all of them have started.
///
/// The trade-off is how long a won tenant waits: up to `acquire_batch / concurrency` job
/// durations. Its lease runs from the acquisition: by default it lasts until the cycle's
/// end (see "Exactly once per cycle"), and a tenant whose lease ran out while it waited is
/// tried again on its own before its job runs, so no job runs on an expired lease. A batch
/// answered after the lease's deadline (a paused process, a stalled server) is no win: each
/// of its locks is released, and the tenant's outcome that cycle is the error
/// `LeaseLost` (its job does not run; the next cycle tries it again). If the
/// instance dies, the won tenants that had not started stay locked (and are not run) until
/// their lease ends, at most a batch of them. A won tenant that shutdown stops from
/// starting is released at once, without the minimum lease, for another instance to run.
/// Set `acquire_batch` to 1 for one call per tenant, as near to the job's start as can be.
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any serde format, with
/// fields `job_name` and `interval` (both required), and `concurrency` and `acquire_batch`
/// (each at least 1),
/// `min_lease_time` (a fixed minimum lease), `cycle_end_guard` and `shutdown_mode`
/// (`"finish"` or `"abandon"`), which keep their defaults when left out. Durations are in
/// human form (`"1m"`, `"1m 30s"`, `"250ms"`). An unknown field is an error, and the result
/// is validated: a bad value is a deserialize error carrying the [`TenantError`] message.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_tenant::{PollerConfig, ShutdownMode};
///
/// let config: PollerConfig = toml::from_str(
///     r#"
///     job_name = "sync-invoices"
///     interval = "1m"
///     concurrency = 16
///     shutdown_mode = "abandon"
///     "#,
/// )?;
/// assert_eq!(config.interval(), Duration::from_secs(60));
/// assert_eq!(config.shutdown_mode(), ShutdownMode::Abandon);
/// assert_eq!(config.cycle_end_guard(), Duration::from_secs(1)); // the default
///
/// let bad = toml::from_str::<PollerConfig>(
///     r#"
///     job_name = "sync-invoices"
///     interval = "1m"
///     min_lease_time = "2m"
///     "#,
/// );
/// assert!(bad.unwrap_err().to_string().contains("must not exceed the poll interval"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
/// assert_eq!(config.cycle_end_guard(), Duration::from_secs(1));
/// config.validate()?;
/// # Ok::<(), leader_tenant::TenantError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollerConfig {
    // `pub(super)`: the config file form (`config_serde`) reads and writes them.
    pub(super) job_name: String,
    pub(super) interval: Duration,
    pub(super) concurrency: Option<usize>,
    pub(super) acquire_batch: Option<usize>,
    pub(super) fixed_min_lease: Option<Duration>,
    pub(super) cycle_end_guard: Option<Duration>,
    pub(super) shutdown_mode: ShutdownMode,
}

impl PollerConfig {
    /// A configuration for the job `job_name`, run every `interval`.
    pub fn new(job_name: impl Into<String>, interval: Duration) -> Self {
        PollerConfig {
            job_name: job_name.into(),
            interval,
            concurrency: None,
            acquire_batch: None,
            fixed_min_lease: None,
            cycle_end_guard: None,
            shutdown_mode: ShutdownMode::Finish,
        }
    }

    /// The async poller's concurrency unless one is set.
    pub const DEFAULT_ASYNC_CONCURRENCY: usize = 8;

    /// Sets how many tenants' jobs may run at once (at least one).
    ///
    /// The blocking poller defaults to its pool's worker count, and more gains nothing: it
    /// runs its jobs in that many tasks on the pool, and a task beyond the workers only
    /// waits in the pool's queue.
    /// The async poller defaults to [`DEFAULT_ASYNC_CONCURRENCY`](Self::DEFAULT_ASYNC_CONCURRENCY).
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = Some(concurrency.max(1));
        self
    }

    /// How many tenants' locks are tried in one backend call unless set.
    pub const DEFAULT_ACQUIRE_BATCH: usize = 64;

    /// Sets how many tenants' locks are tried in one backend call (at least one; see the
    /// type's "Batches").
    pub fn with_acquire_batch(mut self, acquire_batch: usize) -> Self {
        self.acquire_batch = Some(acquire_batch.max(1));
        self
    }

    /// How many tenants' locks are tried in one backend call.
    pub fn acquire_batch(&self) -> usize {
        self.acquire_batch.unwrap_or(Self::DEFAULT_ACQUIRE_BATCH)
    }

    /// Uses a fixed minimum lease instead of "until the cycle's end" (zero turns the
    /// guard against a second run in the same cycle off).
    pub fn with_min_lease_time(mut self, min_lease_time: Duration) -> Self {
        self.fixed_min_lease = Some(min_lease_time);
        self
    }

    /// Sets how long before the cycle's end a tenant's lock is freed (see the type's docs).
    pub fn with_cycle_end_guard(mut self, guard: Duration) -> Self {
        self.cycle_end_guard = Some(guard);
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

    /// How many tenants may be in flight at once, if set (`None`: the poller's default,
    /// see [`with_concurrency`](Self::with_concurrency)).
    pub fn concurrency(&self) -> Option<usize> {
        self.concurrency
    }

    /// How long before the cycle's end a tenant's lock is freed.
    pub fn cycle_end_guard(&self) -> Duration {
        self.cycle_end_guard
            .unwrap_or_else(|| (self.interval / 10).min(Duration::from_secs(1)))
    }

    /// The fixed minimum lease, if one was set.
    pub fn fixed_min_lease_time(&self) -> Option<Duration> {
        self.fixed_min_lease
    }

    /// What happens to the jobs in flight on shutdown.
    pub fn shutdown_mode(&self) -> ShutdownMode {
        self.shutdown_mode
    }

    /// Checks the job name, the interval, the guard and any fixed minimum lease.
    ///
    /// # Errors
    ///
    /// [`TenantError::Name`], [`TenantError::IntervalTooShort`] or
    /// [`TenantError::MinLeaseAboveInterval`] (a fixed minimum lease or a guard longer than
    /// the interval).
    pub fn validate(&self) -> Result<(), TenantError> {
        LockName::new(self.job_name.as_str())?;
        if self.interval < Duration::from_millis(1) {
            return Err(TenantError::IntervalTooShort(self.interval));
        }
        for min in [self.fixed_min_lease, self.cycle_end_guard]
            .into_iter()
            .flatten()
        {
            if min > self.interval {
                return Err(TenantError::MinLeaseAboveInterval {
                    min,
                    interval: self.interval,
                });
            }
        }
        Ok(())
    }

    /// The minimum lease of a run of cycle `cycle` starting at `now`.
    pub(crate) fn min_lease_at(&self, cycle: u64, now: SystemTime) -> Duration {
        if let Some(fixed) = self.fixed_min_lease {
            return fixed;
        }
        self.free_at(cycle)
            .unwrap_or(now)
            .duration_since(now)
            .unwrap_or_default()
            .min(self.interval)
    }

    /// When the locks of cycle `cycle` are freed (a guard before the next cycle starts),
    /// or `None` with a fixed minimum lease. A lock won after then may have been freed
    /// by an instance that already ran this cycle's job: it must not run the job again.
    pub(crate) fn free_at(&self, cycle: u64) -> Option<SystemTime> {
        if self.fixed_min_lease.is_some() {
            return None;
        }
        schedule::cycle_start(cycle.saturating_add(1), self.interval)
            .checked_sub(self.cycle_end_guard())
    }

    /// The elector options of a run with the minimum lease `min_lease`, derived from `base`.
    pub(crate) fn elector_options(
        &self,
        base: &LeaderElectionOptions,
        min_lease: Duration,
    ) -> LeaderElectionOptions {
        base.clone()
            .with_wait_time(Duration::ZERO)
            .with_min_lease_time(min_lease)
            .with_lease_time(base.lease_time().max(min_lease))
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    #[test]
    fn derived_options_try_once_and_keep_the_lock_for_the_min_lease() {
        let config = PollerConfig::new("job", Duration::from_secs(100));
        let base = LeaderElectionOptions::default()
            .with_lease_time(Duration::from_secs(30))
            .with_node_id("n1")
            .with_auto_extend(true);
        let derived = config.elector_options(&base, Duration::from_secs(90));
        assert_eq!(derived.wait_time(), Duration::ZERO);
        assert_eq!(derived.min_lease_time(), Duration::from_secs(90));
        assert_eq!(derived.lease_time(), Duration::from_secs(90));
        assert_eq!(derived.node_id(), "n1");
        assert!(derived.auto_extend());
        assert!(derived.validate().is_ok());
    }

    #[test]
    fn the_min_lease_ends_a_guard_before_the_cycle_does() {
        let config = PollerConfig::new("job", Duration::from_secs(60));
        let at = |secs| UNIX_EPOCH + Duration::from_secs(secs);
        // Cycle 10 runs from 600 s to 660 s; the guard is 1 s.
        assert_eq!(config.min_lease_at(10, at(600)), Duration::from_secs(59));
        assert_eq!(config.min_lease_at(10, at(650)), Duration::from_secs(9));
        assert_eq!(config.min_lease_at(10, at(659)), Duration::ZERO);
        assert_eq!(config.min_lease_at(10, at(700)), Duration::ZERO, "overran");
        assert_eq!(
            config.min_lease_at(10, at(0)),
            Duration::from_secs(60),
            "capped"
        );
        let short = PollerConfig::new("job", Duration::from_millis(500));
        assert_eq!(short.cycle_end_guard(), Duration::from_millis(50));
        let fixed = config.with_min_lease_time(Duration::from_secs(5));
        assert_eq!(fixed.min_lease_at(10, at(650)), Duration::from_secs(5));
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
            ok.clone()
                .with_min_lease_time(Duration::from_secs(2))
                .validate(),
            Err(TenantError::MinLeaseAboveInterval { .. })
        ));
        assert!(matches!(
            ok.with_cycle_end_guard(Duration::from_secs(2)).validate(),
            Err(TenantError::MinLeaseAboveInterval { .. })
        ));
        assert_eq!(
            PollerConfig::new("job", Duration::from_secs(1))
                .with_concurrency(0)
                .concurrency(),
            Some(1)
        );
        assert_eq!(
            PollerConfig::new("job", Duration::from_secs(1)).concurrency(),
            None,
            "unset: each poller picks its own default"
        );
    }
}
