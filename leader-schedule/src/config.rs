//! [`JobConfig`]: how one job is scheduled, and its policies ([`MissedTicks`],
//! [`Delivery`], [`OnShutdown`]).

use std::time::Duration;

use crate::error::ScheduleError;
use crate::schedule::Schedule;

/// What to do with ticks that no node ran because every node was down (or the tick's
/// firing came too late: a node paused past it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissedTicks {
    /// Skip them: count them as missed and wait for the next tick (cron's own behaviour).
    #[default]
    Skip,
    /// Run the job once, at once, for the latest missed tick, then follow the schedule
    /// (systemd's `Persistent=true`, anacron): for a nightly job that must happen each day.
    RunOnce,
    /// Run every missed tick, oldest first, at most `max` of them (the latest ones), then
    /// follow the schedule: for jobs whose ticks each carry their own work. Ticks that came
    /// while the previous run went on are busy, not caught up.
    CatchUp {
        /// The most missed ticks one catch-up runs.
        max: u32,
    },
}

/// What happens to a tick whose run did not finish: its runner died (or was paused past
/// its lease) mid-run, or its lease was lost while it ran (recorded
/// [`RunState::LeaseLost`](crate::RunState::LeaseLost): its result is not trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Delivery {
    /// The tick is not run again: a tick runs at most once, fleet-wide (the default).
    #[default]
    AtMostOnce,
    /// The next node to take the job's lock runs the unfinished tick again before its own.
    /// A runner that was only paused may then finish its run too: pass the run's fencing
    /// token to what the job writes, so storage can refuse the older run's writes.
    AtLeastOnce,
}

/// What a scheduler does with a running job when its shutdown signal fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnShutdown {
    /// Let it finish, record its outcome, release the lock, then return (the default).
    #[default]
    Finish,
    /// Stop waiting for it. An async job's future is dropped (which releases its lock); a
    /// blocking job cannot be stopped from outside, so its thread is left to finish and
    /// release, and the job sees [`JobContext::is_shutting_down`](crate::JobContext::is_shutting_down).
    /// The record of an abandoned run stays `running`; under
    /// [`Delivery::AtLeastOnce`] the next node runs that tick again.
    Abandon,
}

/// How one job is scheduled. Every node that registers the job must give it the same
/// schedule; the other settings are each node's own.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_schedule::{JobConfig, MissedTicks, Schedule};
///
/// let config = JobConfig::new(Schedule::cron("0 0 2 * * *")?.in_zone("Europe/Berlin")?)
///     .with_missed_ticks(MissedTicks::RunOnce)
///     .with_timeout(Duration::from_secs(3600))
///     .with_jitter(Duration::from_millis(200));
/// assert_eq!(config.clock_skew(), Duration::from_secs(1));
/// # Ok::<(), leader_schedule::ScheduleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobConfig {
    schedule: Schedule,
    clock_skew: Duration,
    missed: MissedTicks,
    delivery: Delivery,
    jitter: Duration,
    timeout: Option<Duration>,
    lease_time: Duration,
    on_shutdown: OnShutdown,
}

impl JobConfig {
    /// A job on `schedule`, with the defaults: clocks within 1 s of each other, missed
    /// ticks skipped, at most once per tick, no jitter, no timeout, a 30 s lease renewed
    /// while the job runs, running jobs finished at shutdown.
    pub fn new(schedule: Schedule) -> Self {
        JobConfig {
            schedule,
            clock_skew: Duration::from_secs(1),
            missed: MissedTicks::Skip,
            delivery: Delivery::AtMostOnce,
            jitter: Duration::ZERO,
            timeout: None,
            lease_time: Duration::from_secs(30),
            on_shutdown: OnShutdown::Finish,
        }
    }

    /// The bound on how far apart the nodes' wall clocks may be. A node that fires a tick
    /// while another node holds the job's lock waits up to this long for it, so that a
    /// short run on a node whose clock is ahead does not make the others skip the tick
    /// without looking; and a tick fired more than twice this (plus the jitter) after its
    /// instant counts as missed.
    pub fn with_clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = skew;
        self
    }

    /// The policy for missed ticks.
    pub fn with_missed_ticks(mut self, missed: MissedTicks) -> Self {
        self.missed = missed;
        self
    }

    /// The policy for a tick whose runner died mid-run.
    pub fn with_delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Fire each tick up to this much late, at random, on each node: spreads a fleet's
    /// many jobs of one instant over a window instead of one burst on the store.
    pub fn with_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// The longest a run may take: an async job's future is dropped then (its lock
    /// released); a blocking job sees [`JobContext::is_timed_out`](crate::JobContext::is_timed_out)
    /// and its run is recorded as timed out when it returns.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The lease of the job's lock, renewed every third of it while the job runs. A runner
    /// that dies keeps the job from the other nodes until its lease runs out: keep it
    /// short, well above the store's worst round trip.
    pub fn with_lease_time(mut self, lease: Duration) -> Self {
        self.lease_time = lease;
        self
    }

    /// What shutdown does with a running job.
    pub fn with_on_shutdown(mut self, on_shutdown: OnShutdown) -> Self {
        self.on_shutdown = on_shutdown;
        self
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The bound on the nodes' clock difference.
    pub fn clock_skew(&self) -> Duration {
        self.clock_skew
    }

    /// The missed-tick policy.
    pub fn missed_ticks(&self) -> MissedTicks {
        self.missed
    }

    /// The delivery policy.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// The jitter.
    pub fn jitter(&self) -> Duration {
        self.jitter
    }

    /// The timeout, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The job lock's lease.
    pub fn lease_time(&self) -> Duration {
        self.lease_time
    }

    /// The shutdown policy.
    pub fn on_shutdown(&self) -> OnShutdown {
        self.on_shutdown
    }

    /// How late after its instant a tick may fire and still be on time: twice the clock
    /// skew plus the jitter.
    pub fn on_time_within(&self) -> Duration {
        self.clock_skew
            .saturating_mul(2)
            .saturating_add(self.jitter)
    }

    /// Checks the settings, naming `job` in the error.
    pub(crate) fn validate(&self, job: &str) -> Result<(), ScheduleError> {
        let invalid = |reason: String| ScheduleError::InvalidJob {
            job: job.to_owned(),
            reason,
        };
        let hour = Duration::from_secs(3600);
        if self.clock_skew > hour {
            return Err(invalid(format!(
                "clock_skew {:?} is above an hour",
                self.clock_skew
            )));
        }
        if self.jitter > hour {
            return Err(invalid(format!(
                "jitter {:?} is above an hour",
                self.jitter
            )));
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(invalid("timeout must be above zero".into()));
        }
        if self.lease_time < Duration::from_millis(30) {
            return Err(invalid(format!(
                "lease_time {:?} is below 30 ms",
                self.lease_time
            )));
        }
        if let MissedTicks::CatchUp { max } = self.missed
            && (max == 0 || max > 10_000)
        {
            return Err(invalid(format!(
                "catch-up max {max} is not within 1..=10000"
            )));
        }
        Ok(())
    }
}
