//! [`BlockingTenantPoller`]: the tenant poller on a [`ThreadPoolLeaderElector`].

use std::future::{Future, ready};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_blocking::{Acquired, Finished, LeaderElector, ThreadPoolLeaderElector};
use leader_core::{Clock, Error, LockBackend};

use crate::error::TenantError;
use crate::job::TenantJob;
use crate::poller::Core;
use crate::poller::config::PollerConfig;
use crate::poller::cycle::{Tried, drive};
use crate::poller::lanes::Lanes;
use crate::poller::releases::Releases;
use crate::report::CycleReport;
use crate::source::TenantSource;
use leader_core::Shutdown;
use leader_core::TenantId;

/// Runs a job for every tenant once per interval, each under its tenant's lock, on the
/// worker threads of a [`ThreadPoolLeaderElector`].
///
/// Start one per instance of the service, all with the same [`PollerConfig`]: for each
/// tenant, one instance runs the job in each cycle and the others skip it (see
/// [`PollerConfig`]'s "Exactly once per cycle"). The jobs run in at most
/// [`concurrency`](PollerConfig::with_concurrency) tasks on the pool at once (by default
/// the pool's worker count), each running one waiting job after another, so a worker that
/// ends a job starts the next without a hand-over; the calling thread tries the batches and
/// otherwise only waits. A lane keeps its worker until no job waits, so while a cycle runs
/// it may occupy `concurrency` workers and other work on the same pool waits behind it:
/// give a poller a pool of its own, or a concurrency below the pool's size, if the pool
/// serves anything else. One tenant's error or panic is that tenant's outcome and never
/// stops the cycle.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_blocking::ThreadPoolLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseContext};
/// use leader_tenant::{BlockingTenantPoller, OutcomeKind, PollerConfig, Shutdown, TenantId};
///
/// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 4)?;
/// let config = PollerConfig::new("sync-invoices", Duration::from_millis(50)).with_concurrency(4);
/// let tenants = || vec!["acme", "globex", "initech"];
/// let job = |tenant: TenantId, _lease: &LeaseContext| Ok::<_, std::io::Error>(format!("synced {tenant}"));
/// let poller = BlockingTenantPoller::new(&pool, config, tenants, job)?;
///
/// let shutdown = Shutdown::new();
/// poller.run(&shutdown, |report| {
///     assert_eq!(report.count(OutcomeKind::Elected), 3);
///     shutdown.trigger(); // one cycle is enough here
/// });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct BlockingTenantPoller<B, S, J> {
    pool: ThreadPoolLeaderElector<B>,
    core: Core<S>,
    job: Arc<J>,
}

impl<B, S, J> BlockingTenantPoller<B, S, J>
where
    B: LockBackend + 'static,
    S: TenantSource,
    J: TenantJob,
{
    /// A poller running `job` for the tenants of `source` on `pool`'s workers.
    ///
    /// The poller keeps a clone of `pool` (sharing its threads) and runs each tenant with
    /// the elector options described on [`PollerConfig`].
    ///
    /// # Errors
    ///
    /// An invalid `config`, or `TenantError::Elector(Error::AlreadyScoped)` if `pool` is tenant-scoped.
    pub fn new(
        pool: &ThreadPoolLeaderElector<B>,
        config: PollerConfig,
        source: S,
        job: J,
    ) -> Result<Self, TenantError> {
        let base = pool.elector();
        let core = Core::new(
            config,
            source,
            base.options(),
            base.name_prefix(),
            pool.workers(),
        )?;
        Ok(BlockingTenantPoller {
            pool: pool.clone(),
            core,
            job: Arc::new(job),
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
    /// default the pool's worker count.
    pub fn concurrency(&self) -> usize {
        self.core.concurrency()
    }

    /// Runs one cycle now and returns its report.
    pub fn run_cycle(&self) -> CycleReport<J::Output, J::Error> {
        self.cycle(None, None)
    }

    /// Runs one cycle now, stopping early if `shutdown` fires (see
    /// [`ShutdownMode`](crate::ShutdownMode)).
    pub fn run_cycle_until(&self, shutdown: &Shutdown) -> CycleReport<J::Output, J::Error> {
        self.cycle(None, Some(shutdown))
    }

    /// Runs a cycle at every multiple of the interval, handing each report to `on_report`,
    /// until `shutdown` fires. The first cycle starts at the next multiple of the interval.
    pub fn run(
        &self,
        shutdown: &Shutdown,
        mut on_report: impl FnMut(CycleReport<J::Output, J::Error>),
    ) {
        let mut schedule = self.core.schedule();
        while !shutdown.is_triggered() {
            let tick = self.core.next_tick(&mut schedule);
            let deadline = Instant::now()
                .checked_add(tick.wait)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            if shutdown.wait_until(deadline) {
                break;
            }
            on_report(self.cycle(Some(tick.cycle), Some(shutdown)));
        }
    }

    fn cycle(
        &self,
        cycle: Option<u64>,
        shutdown: Option<&Shutdown>,
    ) -> CycleReport<J::Output, J::Error> {
        let run = self.core.cycle_run(cycle, shutdown);
        let releases = Arc::new(Releases::new(run.acquire_batch));
        let report = futures_lite::future::block_on(drive(
            run,
            self.core.plan(),
            |tenants, cycle| {
                Finished::release_all(releases.take());
                ready(self.try_batch(&tenants, cycle))
            },
            |lanes| self.lane(lanes, run.cycle, &releases),
            Acquired::release_all,
        ));
        Finished::release_all(releases.take());
        report
    }

    /// Tries the job's lock of each of `tenants` in one backend call, on the calling
    /// thread, with the options of a run acquiring now.
    fn try_batch(&self, tenants: &[TenantId], cycle: u64) -> Vec<Tried<Acquired<B>>> {
        let backend = Arc::clone(self.pool.elector().backend());
        let answers =
            LeaderElector::with_shared_backend(backend, self.core.run_options().at(cycle)).map(
                |elector| elector.try_acquire_for_tenants(self.core.config().job_name(), tenants),
            );
        match answers {
            Ok(answers) => answers.into_iter().map(Tried::from).collect(),
            Err(error) => Tried::each_alone(tenants, &error),
        }
    }

    /// Starts a lane on a worker: it runs the waiting tenants' jobs one after another (see
    /// [`Lanes`]); the future ends with the lane. Each job runs under `won`, the lock its
    /// batch took, while that is still held (its release joins `releases`); otherwise
    /// (none, or it ran out while waiting) it acquires the lock alone.
    fn lane(
        &self,
        lanes: Arc<Lanes<Acquired<B>, J::Output, J::Error>>,
        cycle: u64,
        releases: &Arc<Releases<Finished<B>>>,
    ) -> impl Future<Output = ()> + use<B, S, J> {
        let name = self.core.config().job_name().to_owned();
        let options = Arc::clone(self.core.run_options());
        let job = Arc::clone(&self.job);
        let releases = Arc::clone(releases);
        let queue = Arc::clone(&lanes);
        let task = self.pool.spawn_with_elector(move |pool_elector| {
            queue.run_blocking(|tenant, won| {
                if let Some(won) = won.filter(|won| !won.is_lost()) {
                    let (outcome, finished) = won.run_unreleased(|lease| job.run(tenant, lease))?;
                    if let Some(due) = releases.add(finished) {
                        Finished::release_all(due);
                    }
                    return Ok(outcome);
                }
                // The options are computed on the worker, right before acquiring: a job that
                // waited for a busy pool still frees its tenant's lock before the cycle ends.
                let backend = Arc::clone(pool_elector.backend());
                let elector = LeaderElector::with_shared_backend(backend, options.at(cycle))?
                    .for_tenant(&tenant)?;
                Ok(elector.run_if_leader_with(&name, |lease| job.run(tenant, lease))?)
            });
            Ok(())
        });
        async move {
            match task {
                // The lane's task answers `Ok(())`: each job's panic is caught as that
                // job's outcome (a panic of the lane's own code would resume here).
                Ok(task) => drop(task.await),
                // The pool refuses work only once it is shut down.
                Err(_) => lanes.not_started(|| TenantError::from(Error::ShutDown)),
            }
        }
    }
}
