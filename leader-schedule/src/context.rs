//! [`JobContext`]: what a running job is told about its run.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use leader_core::{LeaseContext, Shutdown};

use crate::config::{JobConfig, OnShutdown};
use crate::plan::{PlannedRun, RunKind};

/// What a running job knows about its run: the tick, why it runs, the fencing token of the
/// job's lock (pass it along with writes that storage can fence), and whether it should
/// stop (lease lost, timed out, shutting down).
#[derive(Debug, Clone)]
pub struct JobContext {
    pub(crate) job: Arc<str>,
    pub(crate) tick: SystemTime,
    pub(crate) kind: RunKind,
    pub(crate) lease: LeaseContext,
    pub(crate) deadline: Option<Instant>,
    pub(crate) shutdown: Shutdown,
    /// The job is set to [`OnShutdown::Abandon`](crate::OnShutdown::Abandon).
    pub(crate) abandons: bool,
}

impl JobContext {
    /// The context of `run` of the job `job` (set up by `config`), started at `started`
    /// under `lease`: both shells build it here.
    pub(crate) fn for_run(
        job: &Arc<str>,
        config: &JobConfig,
        run: &PlannedRun,
        lease: &LeaseContext,
        shutdown: &Shutdown,
        started: Instant,
    ) -> Self {
        JobContext {
            job: Arc::clone(job),
            tick: run.tick,
            kind: run.kind,
            lease: lease.clone(),
            deadline: config.timeout().map(|timeout| started + timeout),
            shutdown: shutdown.clone(),
            abandons: config.on_shutdown() == OnShutdown::Abandon,
        }
    }

    /// The job's name.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The tick this run is for: its scheduled instant, not when it started.
    pub fn tick(&self) -> SystemTime {
        self.tick
    }

    /// Why it runs: on time, a missed tick caught up, or an unfinished tick run again.
    pub fn kind(&self) -> RunKind {
        self.kind
    }

    /// The fencing token of the job's lock for this run: greater than every earlier
    /// run's, on every backend.
    pub fn fencing_token(&self) -> u64 {
        self.lease.fencing_token()
    }

    /// The lease of the job's lock, renewed while the job runs.
    pub fn lease(&self) -> &LeaseContext {
        &self.lease
    }

    /// Whether the run passed its timeout (a blocking job should stop; an async job's
    /// future is dropped at the timeout).
    pub fn is_timed_out(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the scheduler is shutting down (a long job may stop at a safe point; its
    /// run is recorded with the outcome it returns).
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.is_triggered()
    }

    /// Whether the job should stop now: its lease was lost, it timed out, or the
    /// scheduler is shutting down and the job is set to be abandoned then.
    pub fn should_stop(&self) -> bool {
        self.lease.is_lost() || self.is_timed_out() || (self.abandons && self.is_shutting_down())
    }
}
