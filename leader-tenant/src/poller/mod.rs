//! The tenant pollers: every interval, each tenant's job under that tenant's lock.
//!
//! The plain parts are shared: [`config`] (settings and derived elector options),
//! [`schedule`] (when cycles start) and [`cycle`] (one cycle: bounded concurrency,
//! isolation, the report). [`blocking`] and [`nonblocking`] only say how one tenant is run
//! and how to wait.

pub(crate) mod blocking;
pub(crate) mod config;
#[cfg(feature = "serde")]
mod config_serde;
pub(crate) mod cycle;
pub(crate) mod lanes;
pub(crate) mod releases;
pub(crate) mod schedule;

#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
pub(crate) mod nonblocking;

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use leader_core::{Clock, Error, LeaderElectionOptions, SystemClock};

use crate::error::TenantError;
use crate::source::TenantSource;
use config::PollerConfig;
use cycle::{CycleRun, Plan};
use leader_core::Shutdown;
use schedule::{Schedule, Tick};

/// What both pollers hold besides their elector and job: the settings, the source, the
/// elector's own options and the clock that numbers cycles.
pub(crate) struct Core<S> {
    run: Arc<RunOptions>,
    concurrency: usize,
    source: S,
}

/// The settings, the elector's own options and the clock: what one tenant's run options
/// are computed from. Shared (an `Arc`) with the workers' tasks that compute them.
#[derive(Debug, Clone)]
pub(crate) struct RunOptions {
    config: PollerConfig,
    base_options: LeaderElectionOptions,
    clock: Arc<dyn Clock>,
}

impl RunOptions {
    /// The elector options of one tenant's run in cycle `cycle`, acquiring now: its minimum
    /// lease lasts until shortly before the cycle ends (see [`PollerConfig`]). Call it
    /// right before acquiring: the minimum lease is counted from the acquisition.
    pub(crate) fn at(&self, cycle: u64) -> LeaderElectionOptions {
        let min_lease = self.config.min_lease_at(cycle, self.clock.now());
        self.config.elector_options(&self.base_options, min_lease)
    }
}

impl<S> fmt::Debug for Core<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("run", &self.run)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl<S: TenantSource> Core<S> {
    /// Checks `config`, and that the elector is not tenant-scoped already (the poller
    /// scopes it per tenant, and scopes do not nest). `default_concurrency` applies when
    /// `config` sets none.
    pub(crate) fn new(
        config: PollerConfig,
        source: S,
        base_options: &LeaderElectionOptions,
        elector_prefix: Option<&str>,
        default_concurrency: usize,
    ) -> Result<Self, TenantError> {
        config.validate()?;
        if let Some(prefix) = elector_prefix {
            return Err(Error::AlreadyScoped {
                prefix: prefix.to_owned(),
            }
            .into());
        }
        Ok(Core {
            concurrency: config.concurrency().unwrap_or(default_concurrency).max(1),
            run: Arc::new(RunOptions {
                config,
                base_options: base_options.clone(),
                clock: Arc::new(SystemClock),
            }),
            source,
        })
    }

    pub(crate) fn set_clock(&mut self, clock: impl Clock + 'static) {
        Arc::make_mut(&mut self.run).clock = Arc::new(clock);
    }

    /// How tenants' run options are computed (see [`RunOptions::at`]).
    pub(crate) fn run_options(&self) -> &Arc<RunOptions> {
        &self.run
    }

    pub(crate) fn config(&self) -> &PollerConfig {
        &self.run.config
    }

    /// How many tenants may be in flight at once: the configured number or the poller's
    /// default.
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// This cycle's tenants, read from the source now.
    pub(crate) fn plan(&self) -> Plan {
        Plan::read(&self.source)
    }

    /// The settings of cycle `cycle` (`None`: the cycle running now).
    pub(crate) fn cycle_run<'a>(
        &'a self,
        cycle: Option<u64>,
        shutdown: Option<&'a Shutdown>,
    ) -> CycleRun<'a> {
        let cycle = cycle.unwrap_or_else(|| {
            schedule::cycle_at(self.run.clock.now(), self.run.config.interval())
        });
        CycleRun {
            started_at: self.run.clock.now(),
            cycle,
            free_at: self.run.config.free_at(cycle),
            clock: self.run.clock.as_ref(),
            job_name: self.run.config.job_name(),
            concurrency: self.concurrency,
            acquire_batch: self.run.config.acquire_batch(),
            mode: self.run.config.shutdown_mode(),
            shutdown,
        }
    }

    pub(crate) fn schedule(&self) -> Schedule {
        Schedule::new(self.run.config.interval())
    }

    /// The next tick of `schedule`, with a warning when cycles were missed.
    pub(crate) fn next_tick(&self, schedule: &mut Schedule) -> Tick {
        next_tick(schedule, self.run.clock.now())
    }
}

fn next_tick(schedule: &mut Schedule, now: SystemTime) -> Tick {
    let tick = schedule.next(now);
    if tick.missed > 0 {
        tracing::warn!(
            cycle = tick.cycle,
            missed = tick.missed,
            "the previous cycle overran its interval; cycles were skipped"
        );
    }
    tick
}
