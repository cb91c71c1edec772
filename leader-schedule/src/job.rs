//! What both shells share about running a job: the names registered, the options of its
//! lock, the jitter drawn per tick, the wait until a wall-clock instant, and how a run's
//! ending maps to a [`RunState`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use leader_core::{BoxError, LeaderElectionOptions};
use rand::Rng;

use crate::config::JobConfig;
use crate::error::ScheduleError;
use crate::record::RunState;

/// The names of a scheduler's jobs: a name is registered once.
#[derive(Debug, Default)]
pub(crate) struct JobNames(HashSet<Arc<str>>);

impl JobNames {
    /// `name`, as the scheduler keeps it, registered now.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::DuplicateJob`] for a name registered already.
    pub(crate) fn register(&mut self, name: &str) -> Result<Arc<str>, ScheduleError> {
        let name: Arc<str> = name.into();
        if self.0.insert(Arc::clone(&name)) {
            Ok(name)
        } else {
            Err(ScheduleError::DuplicateJob {
                job: name.to_string(),
            })
        }
    }
}

/// The longest a shell sleeps at once before it looks at the wall clock again, so that a
/// step of the clock (NTP) moves the next firing with it.
pub const MAX_SLEEP: Duration = Duration::from_secs(10);

/// The options of a job's lock: the elector's node id and clock settings, with a wait of
/// the clock skew (a node firing while another runs a short job waits for it, then reads
/// that the tick ran), the job's lease, renewed while it runs, and no minimum lease.
pub fn job_elector(base: &LeaderElectionOptions, config: &JobConfig) -> LeaderElectionOptions {
    base.clone()
        .with_wait_time(config.clock_skew())
        .with_lease_time(config.lease_time())
        .with_min_lease_time(Duration::ZERO)
        .with_auto_extend(true)
}

/// This firing's jitter: uniform in `[0, config.jitter()]`.
pub(crate) fn jitter(config: &JobConfig) -> Duration {
    let max = config.jitter();
    if max.is_zero() {
        return Duration::ZERO;
    }
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rand::rng().random_range(0..=nanos))
}

/// How long to sleep from `now` toward `at` (at most [`MAX_SLEEP`]); `None` once due.
pub fn wait_time_until(now: SystemTime, at: SystemTime) -> Option<Duration> {
    match at.duration_since(now) {
        Ok(wait) if !wait.is_zero() => Some(wait.min(MAX_SLEEP)),
        _ => None,
    }
}

/// How a run ended: its result (`Err(())` for a panic), whether it passed its timeout,
/// whether its lease was lost meanwhile.
pub fn run_state(
    outcome: Result<Result<(), BoxError>, ()>,
    timed_out: bool,
    lease_lost: bool,
) -> RunState {
    match outcome {
        _ if lease_lost => RunState::LeaseLost,
        Err(()) => RunState::Panicked,
        _ if timed_out => RunState::TimedOut,
        Ok(Ok(())) => RunState::Succeeded,
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "a scheduled run failed");
            RunState::Failed
        }
    }
}
