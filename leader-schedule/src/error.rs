//! [`ScheduleError`]: the crate's one error enum.

use std::time::Duration;

/// What can go wrong when a schedule or a job is set up. Failures while the scheduler runs
/// (a store that does not answer) are not errors of a call: each tick reports its outcome
/// in spans and metrics, and the scheduler goes on with the next tick.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A cron pattern the parser refused, or a schedule text of neither form.
    #[error("invalid schedule `{pattern}`: {reason}")]
    InvalidCron {
        /// The pattern as given.
        pattern: String,
        /// Why it was refused.
        reason: String,
    },
    /// A time-zone name the IANA database does not have.
    #[error("unknown time zone `{zone}`")]
    UnknownZone {
        /// The name as given.
        zone: String,
    },
    /// A time zone was given to a fixed-rate schedule.
    #[error("a fixed-rate schedule ticks at instants, not local times: it takes no time zone")]
    ZoneOfFixedRate,
    /// A fixed rate out of range.
    #[error(
        "a fixed rate must be a whole number of milliseconds between {min:?} and {max:?}, got {period:?}",
        min = crate::schedule::MIN_PERIOD,
        max = crate::schedule::MAX_PERIOD
    )]
    InvalidPeriod {
        /// The period given.
        period: Duration,
    },
    /// A job setting out of range.
    #[error("job `{job}`: {reason}")]
    InvalidJob {
        /// The job's name.
        job: String,
        /// What is wrong.
        reason: String,
    },
    /// Two jobs of one scheduler have the same name.
    #[error("a job named `{job}` is already registered")]
    DuplicateJob {
        /// The name.
        job: String,
    },
    /// A lock name, option or backend error from the toolkit.
    #[error(transparent)]
    Leader(#[from] leader_core::Error),
}
