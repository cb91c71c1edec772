//! [`AsyncTenantPoller`]: the tenant poller on an [`AsyncLeaderElector`].

use std::sync::Arc;

use leader_async::{AsyncAcquired, AsyncFinished, AsyncLeaderElector};
use leader_core::{AsyncLockBackend, Clock, LeaderRunResult};

use crate::error::TenantError;
use crate::job::AsyncTenantJob;
use crate::poller::Core;
use crate::poller::config::PollerConfig;
use crate::poller::cycle::{Tried, drive};
use crate::poller::releases::Releases;
use crate::report::CycleReport;
use crate::source::TenantSource;
use leader_core::Shutdown;
use leader_core::TenantId;

/// Runs an async job for every tenant once per interval, each under its tenant's lock,
/// with at most [`concurrency`](PollerConfig::concurrency) tenants in flight.
///
/// The tenants' jobs run concurrently inside the poller's own future (no task is spawned),
/// so the poller works on any runtime and its future is `Send` when the backend, source and
/// job are: spawn it, or await it in a `select!` with your service. Waiting between cycles
/// uses `async-io`'s timer, which needs no particular runtime. One tenant's error or panic
/// is that tenant's outcome and never stops the cycle; see [`PollerConfig`] for the
/// "exactly once per cycle" reasoning shared with
/// [`BlockingTenantPoller`](crate::BlockingTenantPoller).
///
/// # Cancel safety
///
/// Dropping a `run_cycle` or `run` future drops the tenants' jobs in flight; the elector
/// then releases their leases in the background (keeping the minimum lease).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_async::AsyncLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseContext};
/// use leader_tenant::{AsyncTenantPoller, OutcomeKind, PollerConfig, TenantId};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// // A cycle run by hand at any moment: a plain lease, not one kept until the cycle's end
/// // (whose guard skips every tenant in the cycle's last second).
/// let config = PollerConfig::new("sync-invoices", Duration::from_secs(60))
///     .with_concurrency(32)
///     .with_min_lease_time(Duration::ZERO);
/// let job = |tenant: TenantId, _lease: LeaseContext| async move {
///     Ok::<_, std::io::Error>(tenant.as_str().len())
/// };
/// let poller = AsyncTenantPoller::new(&elector, config, || ["acme", "globex"], job)?;
///
/// let report = poller.run_cycle().await;
/// assert_eq!(report.count(OutcomeKind::Elected), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncTenantPoller<B, S, J> {
    backend: Arc<B>,
    core: Core<S>,
    job: J,
}

impl<B, S, J> AsyncTenantPoller<B, S, J>
where
    B: AsyncLockBackend + 'static,
    S: TenantSource,
    J: AsyncTenantJob,
{
    /// A poller running `job` for the tenants of `source` through `elector`'s backend.
    ///
    /// The poller runs each tenant through an elector on the same backend, with the
    /// options described on [`PollerConfig`].
    ///
    /// # Errors
    ///
    /// An invalid `config`, or `TenantError::Elector(Error::AlreadyScoped)` if `elector` is tenant-scoped.
    pub fn new(
        elector: &AsyncLeaderElector<B>,
        config: PollerConfig,
        source: S,
        job: J,
    ) -> Result<Self, TenantError> {
        let core = Core::new(
            config,
            source,
            elector.options(),
            elector.name_prefix(),
            PollerConfig::DEFAULT_ASYNC_CONCURRENCY,
        )?;
        Ok(AsyncTenantPoller {
            backend: Arc::clone(elector.backend()),
            core,
            job,
        })
    }

    /// Numbers and ends cycles by `clock` instead of the system clock (give it the clock of
    /// an in-memory backend in tests; `run` still waits in real time).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.core.set_clock(clock);
        self
    }

    /// The poller's settings.
    pub fn config(&self) -> &PollerConfig {
        self.core.config()
    }

    /// How many tenants may be in flight at once: the configured concurrency, or by
    /// default [`PollerConfig::DEFAULT_ASYNC_CONCURRENCY`].
    pub fn concurrency(&self) -> usize {
        self.core.concurrency()
    }

    /// Runs one cycle now and returns its report.
    pub async fn run_cycle(&self) -> CycleReport<J::Output, J::Error> {
        self.cycle(None, None).await
    }

    /// Runs one cycle now, stopping early if `shutdown` fires (see
    /// [`ShutdownMode`](crate::ShutdownMode)).
    pub async fn run_cycle_until(&self, shutdown: &Shutdown) -> CycleReport<J::Output, J::Error> {
        self.cycle(None, Some(shutdown)).await
    }

    /// Runs a cycle at every multiple of the interval, handing each report to `on_report`,
    /// until `shutdown` fires. The first cycle starts at the next multiple of the interval.
    pub async fn run(
        &self,
        shutdown: &Shutdown,
        mut on_report: impl FnMut(CycleReport<J::Output, J::Error>),
    ) {
        let mut schedule = self.core.schedule();
        while !shutdown.is_triggered() {
            let tick = self.core.next_tick(&mut schedule);
            if leader_async::sleep_or_shutdown(tick.wait, shutdown).await {
                break;
            }
            on_report(self.cycle(Some(tick.cycle), Some(shutdown)).await);
        }
    }

    async fn cycle(
        &self,
        cycle: Option<u64>,
        shutdown: Option<&Shutdown>,
    ) -> CycleReport<J::Output, J::Error> {
        let run = self.core.cycle_run(cycle, shutdown);
        let releases = Releases::new(run.acquire_batch);
        let report = drive(
            run,
            self.core.plan(),
            |tenants, cycle| self.try_batch(tenants, cycle, &releases),
            |lanes| {
                let releases = &releases;
                async move {
                    lanes
                        .run_async(|tenant, won| self.run_tenant(tenant, won, run.cycle, releases))
                        .await;
                }
            },
            // Each is released in the background as it is dropped.
            drop,
        )
        .await;
        AsyncFinished::release_all(releases.take()).await;
        report
    }

    /// Releases the finished jobs' locks waiting in `releases`, then tries the job's lock
    /// of each of `tenants` in one backend call, with the options of a run acquiring now.
    async fn try_batch(
        &self,
        tenants: Vec<TenantId>,
        cycle: u64,
        releases: &Releases<AsyncFinished<B>>,
    ) -> Vec<Tried<AsyncAcquired<B>>> {
        AsyncFinished::release_all(releases.take()).await;
        let backend = Arc::clone(&self.backend);
        let elector = match AsyncLeaderElector::with_shared_backend(
            backend,
            self.core.run_options().at(cycle),
        ) {
            Ok(elector) => elector,
            Err(error) => return Tried::each_alone(&tenants, &error),
        };
        elector
            .try_acquire_for_tenants(self.core.config().job_name(), &tenants)
            .await
            .into_iter()
            .map(Tried::from)
            .collect()
    }

    /// Runs `tenant`'s job under `won`, the lock its batch took, while that is still held
    /// (its release joins `releases`); otherwise (none, or it ran out while waiting)
    /// acquiring the lock alone.
    async fn run_tenant(
        &self,
        tenant: TenantId,
        won: Option<AsyncAcquired<B>>,
        cycle: u64,
        releases: &Releases<AsyncFinished<B>>,
    ) -> Result<LeaderRunResult<J::Output, J::Error>, TenantError> {
        let job = &self.job;
        if let Some(won) = won.filter(|won| !won.is_lost()) {
            let (outcome, finished) = won.run_unreleased(|lease| job.run(tenant, lease)).await?;
            if let Some(due) = releases.add(finished) {
                AsyncFinished::release_all(due).await;
            }
            return Ok(outcome);
        }
        let backend = Arc::clone(&self.backend);
        let elector =
            AsyncLeaderElector::with_shared_backend(backend, self.core.run_options().at(cycle))?;
        let scoped = elector.for_tenant(&tenant)?;
        let outcome = scoped
            .run_if_leader_with(self.core.config().job_name(), |lease| {
                job.run(tenant, lease)
            })
            .await?;
        Ok(outcome)
    }
}
