//! [`RunRecord`]: what the store keeps of a job's last claimed tick (a JSON value in the
//! backend's record of the job's name), and [`RunState`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader_core::{LockBackend, LockName, corrupt_record};
use serde::{Deserialize, Serialize};

use crate::error::ScheduleError;

use crate::schedule::millis_since_epoch;

/// Where a job's last claimed tick stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunState {
    /// Claimed and started; not finished (yet, or ever: a runner that died, an abandoned
    /// run).
    Running,
    /// The job returned `Ok`.
    Succeeded,
    /// The job returned an error.
    Failed,
    /// The job panicked.
    Panicked,
    /// The job ran past its timeout.
    TimedOut,
    /// The job's lease was lost while it ran (its result is not trusted).
    LeaseLost,
}

impl RunState {
    /// A short label for logs, metrics and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Succeeded => "succeeded",
            RunState::Failed => "failed",
            RunState::Panicked => "panicked",
            RunState::TimedOut => "timed_out",
            RunState::LeaseLost => "lease_lost",
        }
    }
}

/// A job's record in the store: its last claimed tick and how that run went. A claim is a
/// compare-and-set of this record from the version read to the next, so a tick is claimed
/// once, fleet-wide, whatever the nodes' clocks say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// The claimed tick, in milliseconds since the Unix epoch.
    pub tick_ms: u64,
    /// Where its run stands.
    pub state: RunState,
    /// The node that claimed it (its elector's node id).
    pub node: String,
    /// The fencing token of the job's lock the run held.
    pub fencing_token: u64,
    /// When the run started, by the runner's clock, in ms since the epoch.
    pub started_ms: u64,
    /// When it finished, by the runner's clock, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<u64>,
    /// The job's schedule in its text form (`cron … in …` or `every …`), for tools that
    /// tell the next tick.
    pub schedule: String,
    /// How many runs of this job were claimed through this record.
    #[serde(default)]
    pub runs: u64,
}

impl RunRecord {
    /// The claimed tick.
    pub fn tick(&self) -> SystemTime {
        at_millis(self.tick_ms)
    }

    /// When the run started.
    pub fn started_at(&self) -> SystemTime {
        at_millis(self.started_ms)
    }

    /// When it finished, if it did.
    pub fn finished_at(&self) -> Option<SystemTime> {
        self.finished_ms.map(at_millis)
    }

    /// Whether `other` is the same claim: the same tick, claimed by the same node under
    /// the same lock acquisition.
    pub(crate) fn same_claim(&self, other: &RunRecord) -> bool {
        (self.tick_ms, self.fencing_token, &self.node)
            == (other.tick_ms, other.fencing_token, &other.node)
    }

    /// The record as the store keeps it.
    pub(crate) fn to_json(&self) -> String {
        // A struct of numbers and strings always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The record from the store's value.
    ///
    /// # Errors
    ///
    /// The JSON error, for a value this crate did not write.
    pub fn from_json(value: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(value)
    }
}

/// The instant `ms` milliseconds after the epoch.
pub(crate) fn at_millis(ms: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or(UNIX_EPOCH)
}

/// `at` in whole milliseconds since the epoch (0 before it, saturating far after).
pub(crate) fn to_millis(at: SystemTime) -> u64 {
    millis_since_epoch(at).map_or(0, |ms| u64::try_from(ms).unwrap_or(u64::MAX))
}

/// The record of the job whose lock key is `key` (an elector's
/// [`lock_key`](leader_blocking::LeaderElector::lock_key) of the job's name), or `None`
/// if it never ran: what the CLI's `leader schedule` shows.
///
/// # Errors
///
/// The backend's error, and a permanent one for a record this crate did not write.
///
/// # Examples
///
/// ```
/// use leader_core::{InMemoryBackend, LockName};
/// use leader_schedule::read_run_record;
///
/// let backend = InMemoryBackend::new();
/// assert_eq!(read_run_record(&backend, &LockName::new("nightly")?)?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_run_record<B: LockBackend + ?Sized>(
    backend: &B,
    key: &LockName,
) -> Result<Option<RunRecord>, ScheduleError> {
    let Some(stored) = backend.read_record(key)? else {
        return Ok(None);
    };
    RunRecord::from_json(&stored.value)
        .map(Some)
        .map_err(|err| corrupt_record("schedule", key, format!("not a job record: {err}")).into())
}
