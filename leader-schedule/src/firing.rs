//! [`Firing`]: one node's firing of one tick, as a state machine that does no I/O. Under
//! the job's lock the shell reads the record, the machine plans; the shell writes each
//! claim it asks for, runs the job, writes the outcome; a claim that meets another
//! write (a conflict) sends the machine back to reading.

use std::collections::VecDeque;
use std::time::SystemTime;

use leader_core::{
    Clock, Error, LeaseContext, LockName, RecordWriteOutcome, Shutdown, StoredRecord,
    corrupt_record,
};

use crate::config::JobConfig;
use crate::plan::{self, PlannedRun, RunKind};
use crate::record::{RunRecord, RunState};

/// How many times a firing re-reads after a conflicting write before it gives up (writes
/// conflict only when something besides the job's lock holder writes the record).
const MAX_READS: u32 = 3;

/// What the shell does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Read the job's record and hand it to [`Firing::on_read`].
    Read,
    /// Write `value` over version `expected` and hand the answer to [`Firing::on_written`].
    Write {
        /// The version the write expects to find (`None`: no record).
        expected: Option<u64>,
        /// The record's new value.
        value: String,
    },
    /// Run the job for this tick and hand its outcome to [`Firing::on_ran`].
    Run(PlannedRun),
    /// The firing is over; take [`Firing::into_report`].
    Done,
}

/// What the shell saw when it hands the machine an answer: the node's wall clock, and
/// whether a run may still start (the job's lease is held, the scheduler is not shutting
/// down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The node's wall clock.
    pub now: SystemTime,
    /// Whether the job's lease is lost.
    pub lease_lost: bool,
    /// Whether the scheduler is shutting down.
    pub shutting_down: bool,
}

impl Seen {
    /// What the shell sees now: `clock`'s wall time, `lease` and `shutdown`.
    pub(crate) fn now(clock: &dyn Clock, lease: &LeaseContext, shutdown: &Shutdown) -> Self {
        Seen {
            now: clock.now(),
            lease_lost: lease.is_lost(),
            shutting_down: shutdown.is_triggered(),
        }
    }

    /// Whether a run may start now: never on a lost lease, nor after shutdown.
    fn may_start(self) -> bool {
        !self.lease_lost && !self.shutting_down
    }
}

/// What a firing did: for spans and metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FiringReport {
    /// The runs made: tick, why, how it ended.
    pub runs: Vec<(SystemTime, RunKind, RunState)>,
    /// Ticks skipped as missed.
    pub missed: u64,
    /// The tick had been claimed already.
    pub claimed_elsewhere: bool,
    /// The tick came while the previous run still went on.
    pub busy: bool,
    /// An outcome could not be recorded: the record had moved on (another claim).
    pub outcome_unrecorded: bool,
    /// Runs of the plan that did not start because the job's lease was lost or the
    /// scheduler was shutting down (the ticks not claimed are left to the next holder; a
    /// claim written just before stays `running`, as a runner that died leaves it).
    pub unstarted: usize,
}

/// The phase between two steps.
#[derive(Debug)]
enum Phase {
    Reading,
    Claiming { run: PlannedRun, claim: RunRecord },
    Running { run: PlannedRun, claim: RunRecord },
    Finishing { run: PlannedRun, state: RunState },
    Over,
}

/// One firing of `fired` by `node`, holding the job's lock with `fencing_token`.
#[derive(Debug)]
pub struct Firing<'a> {
    config: &'a JobConfig,
    key: &'a LockName,
    node: &'a str,
    fencing_token: u64,
    fired: SystemTime,
    /// The job's record when the node fired, before it asked for the lock, if it said a
    /// run was in progress.
    running_at_fire: Option<RunRecord>,
    /// The record last read or written, and its version.
    version: Option<u64>,
    record: Option<RunRecord>,
    pending: VecDeque<PlannedRun>,
    phase: Phase,
    reads: u32,
    report: FiringReport,
}

impl<'a> Firing<'a> {
    /// A firing; its first step is [`Step::Read`]. `running_at_fire` is the job's record
    /// read when the node fired (before it asked for the lock), if it was `running`: see
    /// [`running_at_fire`].
    pub fn new(
        config: &'a JobConfig,
        key: &'a LockName,
        node: &'a str,
        fencing_token: u64,
        fired: SystemTime,
        running_at_fire: Option<RunRecord>,
    ) -> (Self, Step) {
        let firing = Firing {
            config,
            key,
            node,
            fencing_token,
            fired,
            running_at_fire,
            version: None,
            record: None,
            pending: VecDeque::new(),
            phase: Phase::Reading,
            reads: 0,
            report: FiringReport::default(),
        };
        (firing, Step::Read)
    }

    /// The record read, as the shell saw things then.
    ///
    /// # Errors
    ///
    /// A permanent backend error for a record this crate did not write (it is left as it
    /// is: fail closed, no run), or after repeated conflicts.
    pub fn on_read(&mut self, stored: Option<StoredRecord>, seen: Seen) -> Result<Step, Error> {
        self.reads += 1;
        let record = match &stored {
            Some(stored) => Some(RunRecord::from_json(&stored.value).map_err(|err| {
                corrupt_record("schedule", self.key, format!("not a job record: {err}"))
            })?),
            None => None,
        };
        self.version = stored.map(|s| s.version);
        let plan = plan::plan(
            self.config,
            record.as_ref(),
            self.running_at_fire.as_ref(),
            self.fired,
            seen.now,
        );
        self.record = record;
        self.report.missed = plan.missed;
        self.report.claimed_elsewhere = plan.claimed_elsewhere;
        self.report.busy = plan.busy;
        self.pending = plan.runs.into();
        Ok(self.claim_next(seen))
    }

    /// The answer to the last [`Step::Write`], as the shell saw things then.
    ///
    /// # Errors
    ///
    /// After repeated conflicts, a transient backend error naming the job.
    pub fn on_written(&mut self, outcome: RecordWriteOutcome, seen: Seen) -> Result<Step, Error> {
        let phase = std::mem::replace(&mut self.phase, Phase::Over);
        match (phase, outcome) {
            (Phase::Claiming { run, claim }, RecordWriteOutcome::Written { version }) => {
                self.version = Some(version);
                if !seen.may_start() {
                    // Claimed, but the lease was lost (or shutdown came) meanwhile: the
                    // run does not start, and the claim stays `running`.
                    self.stop(1);
                    return Ok(Step::Done);
                }
                self.phase = Phase::Running { run, claim };
                Ok(Step::Run(run))
            }
            (Phase::Claiming { .. }, _) => {
                if self.reads >= MAX_READS {
                    return Err(conflicts(self.key));
                }
                self.phase = Phase::Reading;
                Ok(Step::Read)
            }
            (Phase::Finishing { run, state }, RecordWriteOutcome::Written { version }) => {
                self.version = Some(version);
                self.report.runs.push((run.tick, run.kind, state));
                Ok(self.claim_next(seen))
            }
            (Phase::Finishing { run, state }, _) => {
                // Another claim moved the record on (this run's lease was lost meanwhile):
                // the outcome stays unrecorded and the rest of the plan is stale.
                self.report.runs.push((run.tick, run.kind, state));
                self.report.outcome_unrecorded = true;
                self.pending.clear();
                Ok(Step::Done)
            }
            (phase, _) => {
                self.phase = phase;
                Ok(Step::Done)
            }
        }
    }

    /// The job's run for the claimed tick ended in `state` at `now`.
    pub fn on_ran(&mut self, state: RunState, now: SystemTime) -> Step {
        match std::mem::replace(&mut self.phase, Phase::Over) {
            Phase::Running { run, claim } => {
                let done = plan::finish(&claim, state, now);
                let value = done.to_json();
                self.record = Some(done);
                self.phase = Phase::Finishing { run, state };
                Step::Write {
                    expected: self.version,
                    value,
                }
            }
            other => {
                self.phase = other;
                Step::Done
            }
        }
    }

    /// What the firing did.
    pub fn into_report(self) -> FiringReport {
        self.report
    }

    /// The firing stops with `claimed` runs claimed and not started, and the rest of its
    /// plan unclaimed.
    fn stop(&mut self, claimed: usize) {
        self.report.unstarted = claimed + self.pending.len();
        self.pending.clear();
        self.phase = Phase::Over;
    }

    fn claim_next(&mut self, seen: Seen) -> Step {
        if !self.pending.is_empty() && !seen.may_start() {
            self.stop(0);
            return Step::Done;
        }
        let now = seen.now;
        let Some(run) = self.pending.pop_front() else {
            self.phase = Phase::Over;
            return Step::Done;
        };
        let claim = plan::claim(
            self.config,
            self.record.as_ref(),
            &run,
            self.node,
            self.fencing_token,
            now,
        );
        let value = claim.to_json();
        self.phase = Phase::Claiming { run, claim };
        Step::Write {
            expected: self.version,
            value,
        }
    }
}

/// The job's record read when a node fires a tick, before it asks for the job's lock
/// (`read`: the store's answer), as [`Firing::new`] takes it: the record if it says a run
/// is in progress. A read that failed, or a record this crate did not write, counts as no
/// run in progress: the firing goes on, and its read under the lock fails closed.
pub fn running_at_fire(read: Result<Option<StoredRecord>, Error>) -> Option<RunRecord> {
    let stored = read.ok()??;
    let record = RunRecord::from_json(&stored.value).ok()?;
    (record.state == RunState::Running).then_some(record)
}

fn conflicts(key: &LockName) -> Error {
    leader_core::BackendError::new(
        "schedule",
        key.as_str(),
        leader_core::BackendErrorKind::Transient,
        "the job's record kept changing under its lock holder; the tick is left for later",
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(2_000_000 + s)
    }

    /// The lease held, no shutdown, at `now`.
    fn held(now: SystemTime) -> Seen {
        Seen {
            now,
            lease_lost: false,
            shutting_down: false,
        }
    }

    #[test]
    fn a_first_firing_claims_runs_and_records_the_outcome() {
        let config = JobConfig::new(Schedule::every(Duration::from_secs(1)).unwrap());
        let key = LockName::new("job").unwrap();
        let (mut firing, step) = Firing::new(&config, &key, "node-a", 5, at(1), None);
        assert_eq!(step, Step::Read);
        let Step::Write {
            expected: None,
            value,
        } = firing.on_read(None, held(at(1))).unwrap()
        else {
            panic!("a claim")
        };
        let claim = RunRecord::from_json(&value).unwrap();
        assert_eq!((claim.state, claim.fencing_token), (RunState::Running, 5));
        let Step::Run(run) = firing
            .on_written(RecordWriteOutcome::Written { version: 1 }, held(at(1)))
            .unwrap()
        else {
            panic!("a run")
        };
        assert_eq!(run.tick, at(1));
        let Step::Write {
            expected: Some(1),
            value,
        } = firing.on_ran(RunState::Succeeded, at(2))
        else {
            panic!("the outcome")
        };
        assert_eq!(
            RunRecord::from_json(&value).unwrap().state,
            RunState::Succeeded
        );
        assert_eq!(
            firing
                .on_written(RecordWriteOutcome::Written { version: 2 }, held(at(2)))
                .unwrap(),
            Step::Done
        );
        let report = firing.into_report();
        assert_eq!(
            report.runs,
            vec![(at(1), RunKind::OnTime, RunState::Succeeded)]
        );
    }

    #[test]
    fn a_conflicting_claim_rereads_and_a_corrupt_record_is_refused() {
        let config = JobConfig::new(Schedule::every(Duration::from_secs(1)).unwrap());
        let key = LockName::new("job").unwrap();
        let (mut firing, _) = Firing::new(&config, &key, "node-a", 5, at(1), None);
        firing.on_read(None, held(at(1))).unwrap();
        let conflict = RecordWriteOutcome::Conflict { current: None };
        assert_eq!(
            firing.on_written(conflict, held(at(1))).unwrap(),
            Step::Read
        );
        // Someone claimed tick 1 meanwhile: the re-read finds it, nothing runs.
        let claimed = plan::claim(
            &config,
            None,
            &PlannedRun {
                tick: at(1),
                kind: RunKind::OnTime,
            },
            "node-b",
            4,
            at(1),
        );
        let stored = StoredRecord::new(1, claimed.to_json());
        assert_eq!(
            firing.on_read(Some(stored), held(at(1))).unwrap(),
            Step::Done
        );
        assert!(firing.into_report().claimed_elsewhere);

        let (mut firing, _) = Firing::new(&config, &key, "node-a", 5, at(1), None);
        let err = firing
            .on_read(Some(StoredRecord::new(1, "garbage")), held(at(1)))
            .unwrap_err();
        assert!(!err.is_transient() && err.to_string().contains("not a job record"));
    }
    #[test]
    fn no_run_is_claimed_or_started_once_the_lease_is_lost_or_shutdown_came() {
        let config = JobConfig::new(Schedule::every(Duration::from_secs(1)).unwrap())
            .with_missed_ticks(crate::config::MissedTicks::CatchUp { max: 5 });
        let key = LockName::new("job").unwrap();
        let earlier = plan::claim(
            &config,
            None,
            &PlannedRun {
                tick: at(1),
                kind: RunKind::OnTime,
            },
            "node-b",
            4,
            at(1),
        );
        let done = plan::finish(&earlier, RunState::Succeeded, at(1));
        let stored = || Some(StoredRecord::new(1, done.to_json()));
        for (lease_lost, shutting_down) in [(true, false), (false, true)] {
            let stopped = Seen {
                now: at(5),
                lease_lost,
                shutting_down,
            };
            // Before the first claim: nothing is claimed.
            let (mut firing, _) = Firing::new(&config, &key, "node-a", 5, at(5), None);
            assert_eq!(firing.on_read(stored(), stopped).unwrap(), Step::Done);
            assert_eq!(firing.into_report().unstarted, 4, "ticks 2, 3, 4 and 5");
            // Between a claim and its run: the run does not start.
            let (mut firing, _) = Firing::new(&config, &key, "node-a", 5, at(5), None);
            assert!(matches!(
                firing.on_read(stored(), held(at(5))).unwrap(),
                Step::Write { .. }
            ));
            let written = RecordWriteOutcome::Written { version: 2 };
            assert_eq!(firing.on_written(written, stopped).unwrap(), Step::Done);
            assert_eq!(firing.into_report().unstarted, 4);
            // After a run: the next is not claimed.
            let (mut firing, _) = Firing::new(&config, &key, "node-a", 5, at(5), None);
            firing.on_read(stored(), held(at(5))).unwrap();
            let written = RecordWriteOutcome::Written { version: 2 };
            assert!(matches!(
                firing.on_written(written, held(at(5))).unwrap(),
                Step::Run(_)
            ));
            assert!(matches!(
                firing.on_ran(RunState::LeaseLost, at(5)),
                Step::Write { .. }
            ));
            let written = RecordWriteOutcome::Written { version: 3 };
            assert_eq!(firing.on_written(written, stopped).unwrap(), Step::Done);
            let report = firing.into_report();
            assert_eq!((report.runs.len(), report.unstarted), (1, 3));
        }
    }
}
