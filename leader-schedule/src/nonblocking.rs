//! [`AsyncScheduler`]: the async shell. One future drives every job: each waits for its
//! ticks on a timer and fires them through the job's lock and record, as the blocking
//! shell does on threads.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use futures_util::FutureExt;
use leader_async::AsyncLeaderElector;
use leader_core::{
    AsyncLockBackend, BoxError, Clock, Error, LeaderRunResult, LeaseContext, LockName, RecordWrite,
    Shutdown, SystemClock,
};

use crate::config::{JobConfig, OnShutdown};
use crate::context::JobContext;
use crate::error::ScheduleError;
use crate::firing::{Firing, FiringReport, Seen, Step, running_at_fire};
use crate::job::{JobNames, jitter, job_elector, run_state, wait_time_until};
use crate::plan::{self, PlannedRun};
use crate::record::{RunRecord, RunState};
use crate::telemetry::{self, Ending};

type JobFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;
type AsyncJob = Arc<dyn Fn(JobContext) -> JobFuture + Send + Sync>;

struct Job<B> {
    name: Arc<str>,
    key: LockName,
    config: JobConfig,
    elector: AsyncLeaderElector<B>,
    action: AsyncJob,
}

/// The async [`Scheduler`](crate::Scheduler): the same jobs, ticks, claims and records,
/// with async jobs, on tokio, async-std or smol. [`run`](Self::run) is one future that
/// drives every job; spawn it on your runtime (or await it) until a [`Shutdown`] fires.
///
/// A job's timeout drops its future (which releases the job's lock), and so does
/// shutdown for a job set to [`OnShutdown::Abandon`].
///
/// # Examples
///
/// ```
/// use leader_async::AsyncLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, Shutdown};
/// use leader_schedule::{AsyncScheduler, JobConfig, Schedule};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let mut scheduler = AsyncScheduler::new(elector);
/// scheduler.add("rebalance", JobConfig::new(Schedule::cron("*/5 * * * *")?), |run| async move {
///     println!("rebalancing for {:?} under token {}", run.tick(), run.fencing_token());
///     Ok(())
/// })?;
/// let shutdown = Shutdown::new();
/// shutdown.trigger();
/// scheduler.run(&shutdown).await;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncScheduler<B> {
    elector: AsyncLeaderElector<B>,
    clock: Arc<dyn Clock>,
    jobs: Vec<Job<B>>,
    names: JobNames,
}

impl<B> std::fmt::Debug for AsyncScheduler<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let jobs: Vec<&str> = self.jobs.iter().map(|job| &*job.name).collect();
        f.debug_struct("AsyncScheduler")
            .field("jobs", &jobs)
            .finish_non_exhaustive()
    }
}

impl<B: AsyncLockBackend + 'static> AsyncScheduler<B> {
    /// A scheduler whose jobs take their locks through `elector` (its backend, tenant
    /// scope and node id; each job sets its own wait, lease and renewal).
    pub fn new(elector: AsyncLeaderElector<B>) -> Self {
        AsyncScheduler {
            elector,
            clock: Arc::new(SystemClock),
            jobs: Vec::new(),
            names: JobNames::default(),
        }
    }

    /// The same scheduler reading the wall clock from `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Registers `job` as `name` on `config`.
    ///
    /// # Errors
    ///
    /// As [`Scheduler::add`](crate::Scheduler::add).
    pub fn add<F, Fut>(
        &mut self,
        name: &str,
        config: JobConfig,
        job: F,
    ) -> Result<&mut Self, ScheduleError>
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        config.validate(name)?;
        let elector = self
            .elector
            .with_options(job_elector(self.elector.options(), &config))?;
        let key = elector.lock_key(name)?;
        let name = self.names.register(name)?;
        self.jobs.push(Job {
            name,
            key,
            config,
            elector,
            action: Arc::new(move |context| Box::pin(job(context))),
        });
        Ok(self)
    }

    /// Runs every job on its schedule until `shutdown` fires, then returns once each
    /// running job finished (or was dropped, for a job set to [`OnShutdown::Abandon`]).
    pub async fn run(&self, shutdown: &Shutdown) {
        let loops = self
            .jobs
            .iter()
            .map(|job| job_loop(job, &*self.clock, shutdown));
        futures_util::future::join_all(loops).await;
    }

    /// Fires `name`'s tick `tick` now (see [`Scheduler::fire`](crate::Scheduler::fire)).
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidJob`] for a job not registered, and the backend's error.
    pub async fn fire(&self, name: &str, tick: SystemTime) -> Result<bool, ScheduleError> {
        let job = self
            .jobs
            .iter()
            .find(|job| &*job.name == name)
            .ok_or_else(|| ScheduleError::InvalidJob {
                job: name.to_owned(),
                reason: "no job of that name is registered".into(),
            })?;
        let report = fire(job, &*self.clock, &Shutdown::new(), tick).await?;
        Ok(report.is_some_and(|r| !r.runs.is_empty()))
    }
}

async fn job_loop<B: AsyncLockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
) {
    let mut after = clock.now();
    if let Some(tick) = plan::startup_tick(&job.config, after) {
        if fire_until_shutdown(job, clock, shutdown, tick).await {
            return;
        }
        after = plan::after_firing(tick, clock.now());
    }
    while !shutdown.is_triggered() {
        let Some((tick, fire_at)) = plan::next_firing(&job.config, after, jitter(&job.config))
        else {
            tracing::warn!(job = &*job.name, "the schedule has no more ticks");
            shutdown.triggered().await;
            return;
        };
        if sleep_until(clock, fire_at, shutdown).await {
            return;
        }
        if fire_until_shutdown(job, clock, shutdown, tick).await {
            return;
        }
        after = plan::after_firing(tick, clock.now());
    }
}

/// Fires `tick`; for a job set to abandon at shutdown, drops the firing when shutdown
/// fires. `true` if it was dropped.
async fn fire_until_shutdown<B: AsyncLockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    tick: SystemTime,
) -> bool {
    let firing = fire(job, clock, shutdown, tick).map(|_| false);
    match job.config.on_shutdown() {
        OnShutdown::Abandon => {
            futures_lite::future::or(firing, async {
                shutdown.triggered().await;
                true
            })
            .await
        }
        _ => firing.await,
    }
}

/// Sleeps until `at` on `clock`'s wall time; `true` if `shutdown` fired first.
async fn sleep_until(clock: &dyn Clock, at: SystemTime, shutdown: &Shutdown) -> bool {
    while let Some(wait) = wait_time_until(clock.now(), at) {
        if leader_async::sleep_or_shutdown(wait, shutdown).await {
            return true;
        }
    }
    shutdown.is_triggered()
}

async fn fire<B: AsyncLockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    tick: SystemTime,
) -> Result<Option<FiringReport>, Error> {
    let span = telemetry::firing_span(&job.name, tick);
    // Whether a run is in progress as the node fires, by the store: see `plan::plan`.
    let running = running_at_fire(job.elector.backend().read_record(&job.key).await);
    let result = job
        .elector
        .run_if_leader_with(&job.name, |lease| {
            fire_held(job, clock, shutdown, tick, running, lease)
        })
        .await;
    match result {
        Ok(LeaderRunResult::Elected { value, .. }) => {
            telemetry::record(&job.name, &span, Ending::Done(&value));
            Ok(Some(value))
        }
        Ok(LeaderRunResult::ActionFailed(err)) | Err(err) => {
            tracing::warn!(parent: &span, job = &*job.name, error = %err, "the tick could not be fired");
            telemetry::record(&job.name, &span, Ending::Failed);
            Err(err)
        }
        Ok(_) => {
            telemetry::record(&job.name, &span, Ending::Busy);
            Ok(None)
        }
    }
}

async fn fire_held<B: AsyncLockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    tick: SystemTime,
    running_at_fire: Option<RunRecord>,
    lease: LeaseContext,
) -> Result<FiringReport, Error> {
    let backend = job.elector.backend();
    let node = job.elector.options().node_id();
    let (mut firing, mut step) = Firing::new(
        &job.config,
        &job.key,
        node,
        lease.fencing_token(),
        tick,
        running_at_fire,
    );
    loop {
        step = match step {
            Step::Read => {
                let stored = backend.read_record(&job.key).await?;
                firing.on_read(stored, Seen::now(clock, &lease, shutdown))?
            }
            Step::Write { expected, value } => {
                let write = RecordWrite::new(&job.key, expected, &value)?;
                let written = backend.write_record(write).await?;
                firing.on_written(written, Seen::now(clock, &lease, shutdown))?
            }
            Step::Run(run) => {
                let state = run_job(job, clock, shutdown, &lease, run).await;
                firing.on_ran(state, clock.now())
            }
            Step::Done => return Ok(firing.into_report()),
        };
    }
}

async fn run_job<B>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    lease: &LeaseContext,
    run: PlannedRun,
) -> RunState {
    let started = Instant::now();
    let context = JobContext::for_run(&job.name, &job.config, &run, lease, shutdown, started);
    let lateness = clock.now().duration_since(run.tick).unwrap_or_default();
    let action = std::panic::AssertUnwindSafe((job.action)(context)).catch_unwind();
    let state = match job.config.timeout() {
        Some(timeout) => {
            let timed = futures_lite::future::or(action.map(Some), async {
                async_io::Timer::after(timeout).await;
                None
            })
            .await;
            match timed {
                Some(outcome) => run_state(outcome.map_err(|_| ()), false, lease.is_lost()),
                None => RunState::TimedOut,
            }
        }
        None => run_state(action.await.map_err(|_| ()), false, lease.is_lost()),
    };
    telemetry::run_timing(&job.name, state, lateness, started.elapsed());
    state
}
