//! [`Scheduler`]: the blocking shell. A thread per job waits for its ticks on the node's
//! wall clock and fires each through the job's lock and record.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use leader_blocking::LeaderElector;
use leader_core::{
    BoxError, Clock, Error, LeaderRunResult, LeaseContext, LockBackend, LockName, RecordWrite,
    Shutdown, SystemClock,
};

use crate::config::{JobConfig, OnShutdown};
use crate::context::JobContext;
use crate::error::ScheduleError;
use crate::firing::{Firing, FiringReport, Step};
use crate::job::{jitter, job_elector, run_state, wait_time_until};
use crate::plan::{self, PlannedRun};
use crate::record::RunState;
use crate::telemetry::{self, Ending};

type BlockingJob = Arc<dyn Fn(&JobContext) -> Result<(), BoxError> + Send + Sync>;

struct Job<B> {
    name: Arc<str>,
    key: LockName,
    config: JobConfig,
    elector: LeaderElector<B>,
    action: BlockingJob,
}

/// Runs registered jobs on their schedules, each tick on at most one node of the fleet.
///
/// Register jobs with [`add`](Self::add), then call [`run`](Self::run) on a thread of
/// its own until a [`Shutdown`] fires. Each job gets a thread that sleeps until its next
/// tick (by this node's wall clock, plus jitter), then fires it: takes the job's lock
/// (named as the job, inside the elector's tenant scope), reads the job's record, claims
/// the tick by a compare-and-set of the record, runs the job with the lock renewed, and
/// records how the run ended. See the crate docs for why a tick runs at most once.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_blocking::LeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, Shutdown};
/// use leader_schedule::{JobConfig, Schedule, Scheduler};
///
/// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let mut scheduler = Scheduler::new(elector);
/// scheduler.add("nightly-report", JobConfig::new(Schedule::cron("0 0 2 * * *")?), |run| {
///     println!("report for {:?}, fenced by {}", run.tick(), run.fencing_token());
///     Ok(())
/// })?;
/// let shutdown = Shutdown::new();
/// shutdown.trigger(); // a real service triggers it on SIGTERM
/// scheduler.run(&shutdown);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Scheduler<B> {
    elector: LeaderElector<B>,
    clock: Arc<dyn Clock>,
    jobs: Vec<Arc<Job<B>>>,
    names: HashSet<Arc<str>>,
}

impl<B> std::fmt::Debug for Scheduler<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let jobs: Vec<&str> = self.jobs.iter().map(|job| &*job.name).collect();
        f.debug_struct("Scheduler")
            .field("jobs", &jobs)
            .finish_non_exhaustive()
    }
}

impl<B: LockBackend + 'static> Scheduler<B> {
    /// A scheduler whose jobs take their locks through `elector` (its backend, tenant
    /// scope and node id; each job sets its own wait, lease and renewal).
    pub fn new(elector: LeaderElector<B>) -> Self {
        Scheduler {
            elector,
            clock: Arc::new(SystemClock),
            jobs: Vec::new(),
            names: HashSet::new(),
        }
    }

    /// The same scheduler reading the wall clock from `clock` (for tests: a node whose
    /// clock is off).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Registers `job` as `name` on `config`.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Leader`] for a name that is not a valid lock name,
    /// [`ScheduleError::InvalidJob`] for settings out of range,
    /// [`ScheduleError::DuplicateJob`] for a name registered already.
    pub fn add<F>(
        &mut self,
        name: &str,
        config: JobConfig,
        job: F,
    ) -> Result<&mut Self, ScheduleError>
    where
        F: Fn(&JobContext) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        config.validate(name)?;
        let elector = self
            .elector
            .with_options(job_elector(self.elector.options(), &config))?;
        let key = elector.lock_key(name)?;
        let name: Arc<str> = name.into();
        if !self.names.insert(Arc::clone(&name)) {
            return Err(ScheduleError::DuplicateJob {
                job: name.to_string(),
            });
        }
        self.jobs.push(Arc::new(Job {
            name,
            key,
            config,
            elector,
            action: Arc::new(job),
        }));
        Ok(self)
    }

    /// Runs every job on its schedule until `shutdown` fires, then returns once each
    /// running job finished (or, for a job set to [`OnShutdown::Abandon`], at once,
    /// leaving its thread to finish and release the lock).
    pub fn run(&self, shutdown: &Shutdown) {
        let mut threads = Vec::new();
        for job in &self.jobs {
            let on_shutdown = job.config.on_shutdown();
            let job = Arc::clone(job);
            let clock = Arc::clone(&self.clock);
            let shutdown = shutdown.clone();
            let running = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&running);
            let spawned = thread::Builder::new()
                .name(format!("leader-schedule:{}", job.name))
                .spawn(move || job_loop(&job, &*clock, &shutdown, &flag));
            match spawned {
                Ok(handle) => threads.push((handle, running, on_shutdown)),
                Err(err) => tracing::error!(error = %err, "could not start a job thread"),
            }
        }
        shutdown.wait_until(far_future());
        for (handle, running, on_shutdown) in threads {
            if on_shutdown == OnShutdown::Abandon && running.load(Ordering::SeqCst) {
                continue; // left to finish on its own
            }
            if handle.join().is_err() {
                tracing::error!("a job thread panicked");
            }
        }
    }

    /// Fires `name`'s tick `tick` now, as its thread would at that tick: for tests and for
    /// an operator's "run it now" (the tick is claimed like any other, so it runs at most
    /// once). Returns whether this call ran it.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidJob`] for a job not registered, and the backend's error.
    pub fn fire(&self, name: &str, tick: SystemTime) -> Result<bool, ScheduleError> {
        let job = self
            .jobs
            .iter()
            .find(|job| &*job.name == name)
            .ok_or_else(|| ScheduleError::InvalidJob {
                job: name.to_owned(),
                reason: "no job of that name is registered".into(),
            })?;
        let report = fire(job, &*self.clock, &Shutdown::new(), tick)?;
        Ok(report.is_some_and(|r| !r.runs.is_empty()))
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}

/// One job's thread: wait for the next tick, fire it, repeat until shutdown.
fn job_loop<B: LockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    running: &AtomicBool,
) {
    let mut after = clock.now();
    if let Some(tick) = plan::startup_tick(&job.config, after) {
        running.store(true, Ordering::SeqCst);
        let _ = fire(job, clock, shutdown, tick);
        running.store(false, Ordering::SeqCst);
        after = tick;
    }
    while !shutdown.is_triggered() {
        let Some((tick, fire_at)) = plan::next_firing(&job.config, after, jitter(&job.config))
        else {
            tracing::warn!(job = &*job.name, "the schedule has no more ticks");
            shutdown.wait_until(far_future());
            return;
        };
        if sleep_until(clock, fire_at, shutdown) {
            return;
        }
        running.store(true, Ordering::SeqCst);
        let _ = fire(job, clock, shutdown, tick);
        running.store(false, Ordering::SeqCst);
        // Ticks that passed while this one ran are not fired late: the next firing counts
        // them (busy, or missed) from the record.
        after = tick.max(clock.now());
    }
}

/// Sleeps until `at` on `clock`'s wall time, in steps, so that a step of the clock is
/// followed; `true` if `shutdown` fired first.
fn sleep_until(clock: &dyn Clock, at: SystemTime, shutdown: &Shutdown) -> bool {
    loop {
        let Some(wait) = wait_time_until(clock.now(), at) else {
            return shutdown.is_triggered();
        };
        if shutdown.wait_until(Instant::now() + wait) {
            return true;
        }
    }
}

/// Fires `tick` of `job`: the job's lock, then the firing machine's steps. `Ok(None)` when
/// the lock was busy for the whole wait.
fn fire<B: LockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    tick: SystemTime,
) -> Result<Option<FiringReport>, Error> {
    let span = telemetry::firing_span(&job.name, tick);
    let _entered = span.enter();
    let result = job.elector.run_if_leader_with(&job.name, |lease| {
        fire_held(job, clock, shutdown, tick, lease)
    });
    match result {
        Ok(LeaderRunResult::Elected { value, .. }) => {
            telemetry::record(&job.name, &span, Ending::Done(&value));
            Ok(Some(value))
        }
        Ok(LeaderRunResult::ActionFailed(err)) | Err(err) => {
            tracing::warn!(job = &*job.name, error = %err, "the tick could not be fired");
            telemetry::record(&job.name, &span, Ending::Failed);
            Err(err)
        }
        Ok(_) => {
            telemetry::record(&job.name, &span, Ending::Busy);
            Ok(None)
        }
    }
}

/// The firing's steps, holding the job's lock.
fn fire_held<B: LockBackend + 'static>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    tick: SystemTime,
    lease: &LeaseContext,
) -> Result<FiringReport, Error> {
    let backend = job.elector.backend();
    let node = job.elector.options().node_id();
    let (mut firing, mut step) =
        Firing::new(&job.config, &job.key, node, lease.fencing_token(), tick);
    loop {
        step = match step {
            Step::Read => firing.on_read(backend.read_record(&job.key)?, clock.now())?,
            Step::Write { expected, value } => {
                let write = RecordWrite::new(&job.key, expected, &value)?;
                firing.on_written(backend.write_record(write)?, clock.now())?
            }
            Step::Run(run) => {
                let state = run_job(job, clock, shutdown, lease, run);
                firing.on_ran(state, clock.now())
            }
            Step::Done => return Ok(firing.into_report()),
        };
    }
}

/// Runs the job once for `run`, catching a panic; how it ended.
fn run_job<B>(
    job: &Job<B>,
    clock: &dyn Clock,
    shutdown: &Shutdown,
    lease: &LeaseContext,
    run: PlannedRun,
) -> RunState {
    let started = Instant::now();
    let context = JobContext::for_run(&job.name, &job.config, &run, lease, shutdown, started);
    let lateness = clock.now().duration_since(run.tick).unwrap_or_default();
    let outcome = catch_unwind(AssertUnwindSafe(|| (job.action)(&context)));
    let timed_out = job.config.timeout().is_some_and(|t| started.elapsed() > t);
    let state = run_state(outcome.map_err(|_| ()), timed_out, lease.is_lost());
    telemetry::run_timing(&job.name, state, lateness, started.elapsed());
    state
}
