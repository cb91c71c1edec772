//! [`Scheduler`]: the blocking shell. The thread that runs it keeps the timetable on the
//! node's wall clock and starts a thread for each firing, which goes through the job's
//! lock and record and ends.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
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
use crate::firing::{Firing, FiringReport, Seen, Step, running_at_fire};
use crate::job::{JobNames, MAX_SLEEP, jitter, job_elector, run_state, wait_time_until};
use crate::plan::{self, PlannedRun};
use crate::record::{RunRecord, RunState};
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
/// its own until a [`Shutdown`] fires. That thread sleeps until the next tick of any job
/// (by this node's wall clock, plus jitter), then fires it on a thread of its own: takes
/// the job's lock
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
    names: JobNames,
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
            names: JobNames::default(),
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
        let name = self.names.register(name)?;
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
    ///
    /// The calling thread keeps the timetable: it sleeps until the next job is due (by
    /// this node's wall clock, followed in steps so that a step of the clock is seen) and
    /// starts a thread for that firing, which ends with it. So the threads are the firings
    /// in progress, not the jobs registered: 1,000 jobs a second apart that each fire in a
    /// few milliseconds keep a handful alive. A job's next tick is planned when its
    /// firing ends, so one job never runs twice at once on a node.
    pub fn run(&self, shutdown: &Shutdown) {
        let (events, timetable) = mpsc::channel();
        // The shutdown as a message, so the timetable wakes for it at once.
        let on_shutdown = events.clone();
        let watched = shutdown.clone();
        let watcher = thread::Builder::new()
            .name("leader-schedule".into())
            .spawn(move || {
                watched.wait_until(far_future());
                let _ = on_shutdown.send(Event::ShutDown);
            });
        if let Err(err) = watcher {
            tracing::error!(error = %err, "could not start the scheduler's shutdown thread");
            return;
        }
        let mut table = Timetable::default();
        let now = self.clock.now();
        for (index, job) in self.jobs.iter().enumerate() {
            match plan::startup_tick(&job.config, now) {
                Some(tick) => self.start(index, tick, shutdown, &events, &mut table),
                None => table.plan(index, job, now),
            }
        }
        loop {
            let wait = table.next_due().map_or(Some(MAX_SLEEP), |due| {
                wait_time_until(self.clock.now(), due)
            });
            let event = match wait {
                Some(wait) => match timetable.recv_timeout(wait) {
                    Ok(event) => Some(event),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => Some(Event::ShutDown),
                },
                None => None,
            };
            match event {
                Some(Event::ShutDown) => break,
                Some(Event::Fired { job: index, tick }) => {
                    table.finished(index);
                    let after = plan::after_firing(tick, self.clock.now());
                    if let Some(job) = self.jobs.get(index) {
                        table.plan(index, job, after);
                    }
                }
                None => {
                    let now = self.clock.now();
                    while let Some((index, tick)) = table.take_due(now) {
                        self.start(index, tick, shutdown, &events, &mut table);
                    }
                }
            }
            if shutdown.is_triggered() {
                break;
            }
        }
        for (index, handle) in table.running.drain() {
            let abandon = self
                .jobs
                .get(index)
                .is_some_and(|job| job.config.on_shutdown() == OnShutdown::Abandon);
            if abandon {
                continue; // left to finish on its own
            }
            if handle.join().is_err() {
                tracing::error!("a firing's thread panicked");
            }
        }
    }

    /// Starts the firing of `tick` of job `index` on a thread of its own, which reports
    /// to `events` when it ends (even by a panic).
    fn start(
        &self,
        index: usize,
        tick: SystemTime,
        shutdown: &Shutdown,
        events: &Sender<Event>,
        table: &mut Timetable,
    ) {
        let Some(planned) = self.jobs.get(index) else {
            return;
        };
        let job = Arc::clone(planned);
        let clock = Arc::clone(&self.clock);
        let shutdown = shutdown.clone();
        let report = Report {
            events: events.clone(),
            job: index,
            tick,
        };
        let spawned = thread::Builder::new()
            .name(format!("leader-schedule:{}", planned.name))
            .spawn(move || {
                let _report = report;
                let _ = fire(&job, &*clock, &shutdown, tick);
            });
        match spawned {
            Ok(handle) => {
                table.running.insert(index, handle);
            }
            Err(err) => {
                // The closure, and its report, are dropped: the job is planned again as
                // after a firing that ended.
                tracing::error!(job = &*planned.name, error = %err, "could not start a firing");
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

/// What wakes the timetable besides a job coming due.
enum Event {
    /// The firing of `tick` of job `job` ended.
    Fired { job: usize, tick: SystemTime },
    /// The scheduler's shutdown fired.
    ShutDown,
}

/// Sent by a firing's thread as it ends, however it ends.
struct Report {
    events: Sender<Event>,
    job: usize,
    tick: SystemTime,
}

impl Drop for Report {
    fn drop(&mut self) {
        let _ = self.events.send(Event::Fired {
            job: self.job,
            tick: self.tick,
        });
    }
}

/// The next firing of each job that is not firing now, soonest first, and the threads of
/// those that are.
#[derive(Default)]
struct Timetable {
    /// (when to fire, job, tick).
    due: BinaryHeap<Reverse<(SystemTime, usize, SystemTime)>>,
    running: HashMap<usize, thread::JoinHandle<()>>,
}

impl Timetable {
    /// Plans job `index`'s first tick after `after`.
    fn plan<B>(&mut self, index: usize, job: &Job<B>, after: SystemTime) {
        match plan::next_firing(&job.config, after, jitter(&job.config)) {
            Some((tick, fire_at)) => self.due.push(Reverse((fire_at, index, tick))),
            None => tracing::warn!(job = &*job.name, "the schedule has no more ticks"),
        }
    }

    /// When the soonest planned firing is due.
    fn next_due(&self) -> Option<SystemTime> {
        self.due.peek().map(|Reverse((at, _, _))| *at)
    }

    /// A firing due by `now`: (job, tick).
    fn take_due(&mut self, now: SystemTime) -> Option<(usize, SystemTime)> {
        if self.next_due()? > now {
            return None;
        }
        self.due
            .pop()
            .map(|Reverse((_, index, tick))| (index, tick))
    }

    /// Job `index`'s firing ended: its thread is done.
    fn finished(&mut self, index: usize) {
        if let Some(handle) = self.running.remove(&index)
            && handle.join().is_err()
        {
            tracing::error!("a firing's thread panicked");
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
    // Whether a run is in progress as the node fires, by the store: see `plan::plan`.
    let running = running_at_fire(job.elector.backend().read_record(&job.key));
    let result = job.elector.run_if_leader_with(&job.name, |lease| {
        fire_held(job, clock, shutdown, tick, running, lease)
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
    running_at_fire: Option<RunRecord>,
    lease: &LeaseContext,
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
                let stored = backend.read_record(&job.key)?;
                firing.on_read(stored, Seen::now(clock, lease, shutdown))?
            }
            Step::Write { expected, value } => {
                let write = RecordWrite::new(&job.key, expected, &value)?;
                let written = backend.write_record(write)?;
                firing.on_written(written, Seen::now(clock, lease, shutdown))?
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
