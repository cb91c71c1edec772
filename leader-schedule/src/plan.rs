//! The scheduler's decisions, as code that does no I/O: when a node fires a tick, which
//! runs a firing makes given the job's record, and the records it writes. The blocking and
//! async shells only wait, take the job's lock, read and write the record and run the job.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use crate::config::{Delivery, JobConfig, MissedTicks};
use crate::record::{RunRecord, RunState, to_millis};

/// The most missed ticks a firing counts (a per-second job down for a week has 600,000).
const COUNT_LIMIT: u64 = 100_000;

/// Why a run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunKind {
    /// The tick, fired within [`JobConfig::on_time_within`] of its instant.
    OnTime,
    /// A missed tick, run later by the missed-tick policy.
    Missed,
    /// An unfinished tick run again ([`Delivery::AtLeastOnce`]).
    Rerun,
}

impl RunKind {
    /// A short label for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::OnTime => "on_time",
            RunKind::Missed => "missed",
            RunKind::Rerun => "rerun",
        }
    }
}

/// One run a firing makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlannedRun {
    pub(crate) tick: SystemTime,
    pub(crate) kind: RunKind,
}

/// What a firing does, decided under the job's lock from the record read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Plan {
    /// The runs to claim and make, oldest tick first.
    pub(crate) runs: Vec<PlannedRun>,
    /// Ticks no node ran, which this firing does not run (skipped by the policy).
    pub(crate) missed: u64,
    /// The tick fired was claimed already (by another node, or before a restart).
    pub(crate) claimed_elsewhere: bool,
    /// The tick came while the job's previous run was still going: skipped, not queued.
    pub(crate) busy: bool,
}

/// When a node fires the next tick after `after`: the tick and the wall-clock instant to
/// fire it (the tick plus `jitter`).
pub(crate) fn next_firing(
    config: &JobConfig,
    after: SystemTime,
    jitter: Duration,
) -> Option<(SystemTime, SystemTime)> {
    let tick = config.schedule().next_after(after)?;
    Some((tick, tick.checked_add(jitter).unwrap_or(tick)))
}

/// The tick a node starting at `now` is on: the last one at or before `now` within a
/// day's search. A firing of it applies the missed-tick and delivery policies at once,
/// instead of at the next tick (which, for a nightly job, is a day away).
pub(crate) fn startup_tick(config: &JobConfig, now: SystemTime) -> Option<SystemTime> {
    let wants_probe =
        config.missed_ticks() != MissedTicks::Skip || config.delivery() == Delivery::AtLeastOnce;
    if !wants_probe {
        return None;
    }
    config
        .schedule()
        .last_at_or_before(now, Duration::from_secs(24 * 3600))
}

/// The runs a firing of `fired` makes at `now` (the node's wall clock), holding the job's
/// lock, given the record read (`None`: the job never ran anywhere).
///
/// - A tick at or before the record's tick was claimed already: nothing to run. A tick
///   at or before the end of the record's run came while the job was busy: nothing either.
/// - Under [`Delivery::AtLeastOnce`], a record still `running` (its runner lost the lock,
///   since this node holds it now) is run again first.
/// - Ticks between the record's and `fired` that came after its run ended are missed: no
///   node fired them (ticks that came while the run was still going were skipped because
///   the job was busy, not missed). `fired` itself is missed too when it fires later than
///   [`JobConfig::on_time_within`]. The missed-tick policy then skips them, runs the
///   latest once, or runs each.
pub(crate) fn plan(
    config: &JobConfig,
    record: Option<&RunRecord>,
    fired: SystemTime,
    now: SystemTime,
) -> Plan {
    let mut plan = Plan::default();
    let on_time = now
        .duration_since(fired)
        .map_or(true, |late| late <= config.on_time_within());
    let Some(record) = record else {
        if on_time || config.missed_ticks() != MissedTicks::Skip {
            let kind = if on_time {
                RunKind::OnTime
            } else {
                RunKind::Missed
            };
            plan.runs.push(PlannedRun { tick: fired, kind });
        } else {
            plan.missed = 1;
        }
        return plan;
    };
    let last = record.tick();
    if fired <= last {
        plan.claimed_elsewhere = true;
        return plan;
    }
    // The tick came before the previous run ended (by its runner's clock): the job was
    // busy then, and a tick is skipped, never queued, behind a run (this node found the
    // lock free only because its wait for it outlasted that run).
    if record
        .finished_at()
        .is_some_and(|finished| fired <= finished)
    {
        plan.busy = true;
        return plan;
    }
    if config.delivery() == Delivery::AtLeastOnce && record.state == RunState::Running {
        plan.runs.push(PlannedRun {
            tick: last,
            kind: RunKind::Rerun,
        });
    }

    // Ticks strictly between the record's run and `fired` that nobody fired.
    let busy_until = record
        .finished_at()
        .unwrap_or_else(|| record.started_at())
        .max(last);
    let keep = match config.missed_ticks() {
        MissedTicks::CatchUp { max } => max as usize,
        _ => 0,
    };
    let mut missed_ticks = VecDeque::new();
    let mut missed = 0u64;
    let mut cursor = last;
    while let Some(tick) = config.schedule().next_after(cursor) {
        if tick >= fired || missed >= COUNT_LIMIT {
            break;
        }
        if tick > busy_until {
            missed += 1;
            if keep > 0 {
                if missed_ticks.len() == keep {
                    missed_ticks.pop_front();
                }
                missed_ticks.push_back(tick);
            }
        }
        cursor = tick;
    }
    if !on_time {
        missed += 1;
    }

    let kind = if on_time {
        RunKind::OnTime
    } else {
        RunKind::Missed
    };
    match config.missed_ticks() {
        MissedTicks::Skip => {
            plan.missed = missed;
            if on_time {
                plan.runs.push(PlannedRun { tick: fired, kind });
            }
        }
        MissedTicks::RunOnce => plan.runs.push(PlannedRun { tick: fired, kind }),
        MissedTicks::CatchUp { .. } => {
            // Every kept missed tick runs, and `fired` itself; beyond the limit stays missed.
            let made = missed_ticks.len() as u64 + u64::from(!on_time);
            plan.missed = missed.saturating_sub(made);
            plan.runs
                .extend(missed_ticks.into_iter().map(|tick| PlannedRun {
                    tick,
                    kind: RunKind::Missed,
                }));
            plan.runs.push(PlannedRun { tick: fired, kind });
        }
    }
    plan
}

/// The record of a claim of `run` by `node` under the lock with `fencing_token`, written
/// over `previous`.
pub(crate) fn claim(
    config: &JobConfig,
    previous: Option<&RunRecord>,
    run: &PlannedRun,
    node: &str,
    fencing_token: u64,
    now: SystemTime,
) -> RunRecord {
    RunRecord {
        tick_ms: to_millis(run.tick),
        state: RunState::Running,
        node: node.to_owned(),
        fencing_token,
        started_ms: to_millis(now),
        finished_ms: None,
        schedule: config.schedule().to_string(),
        runs: previous.map_or(0, |r| r.runs).saturating_add(1),
    }
}

/// The claim's record once its run ended in `state` at `now`.
pub(crate) fn finish(claimed: &RunRecord, state: RunState, now: SystemTime) -> RunRecord {
    RunRecord {
        state,
        finished_ms: Some(to_millis(now).max(claimed.started_ms)),
        ..claimed.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use std::time::UNIX_EPOCH;

    fn secs(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_000_000 + s)
    }

    fn every_second() -> JobConfig {
        JobConfig::new(Schedule::every(Duration::from_secs(1)).unwrap())
            .with_clock_skew(Duration::from_millis(500))
    }

    fn record(tick: u64, state: RunState, finished: Option<u64>) -> RunRecord {
        RunRecord {
            tick_ms: to_millis(secs(tick)),
            state,
            node: "a".into(),
            fencing_token: 7,
            started_ms: to_millis(secs(tick)),
            finished_ms: finished.map(|f| to_millis(secs(f))),
            schedule: "every 1s".into(),
            runs: 3,
        }
    }

    fn ticks(plan: &Plan) -> Vec<(SystemTime, RunKind)> {
        plan.runs.iter().map(|r| (r.tick, r.kind)).collect()
    }

    #[test]
    fn a_tick_claimed_already_is_not_run_again_whatever_the_clock_says() {
        let config = every_second();
        let done = record(10, RunState::Succeeded, Some(10));
        // A node whose clock is behind fires tick 10 after the run; one that restarted
        // fires it again; an older tick too.
        for (fired, now) in [(10, 10), (10, 11), (9, 12)] {
            let plan = plan(&config, Some(&done), secs(fired), secs(now));
            assert!(
                plan.claimed_elsewhere && plan.runs.is_empty(),
                "{fired}@{now}: {plan:?}"
            );
        }
    }

    #[test]
    fn the_next_tick_runs_on_time_with_nothing_missed() {
        let config = every_second();
        let plan = plan(
            &config,
            Some(&record(10, RunState::Succeeded, Some(10))),
            secs(11),
            secs(11),
        );
        assert_eq!(ticks(&plan), vec![(secs(11), RunKind::OnTime)]);
        assert_eq!((plan.missed, plan.claimed_elsewhere), (0, false));
    }

    #[test]
    fn ticks_that_came_while_the_job_ran_are_busy_not_missed() {
        let config = every_second().with_missed_ticks(MissedTicks::CatchUp { max: 10 });
        // Tick 10 ran until 13.5: ticks 11, 12 and 13 came while it ran.
        let mut long = record(10, RunState::Succeeded, None);
        long.finished_ms = Some(to_millis(secs(13) + Duration::from_millis(500)));
        let plan = plan(&config, Some(&long), secs(14), secs(14));
        assert_eq!(ticks(&plan), vec![(secs(14), RunKind::OnTime)]);
        assert_eq!(plan.missed, 0);
        // A node that waited for the lock through that run fires tick 13 after it: busy.
        let late = super::plan(
            &config,
            Some(&long),
            secs(13),
            secs(13) + Duration::from_millis(600),
        );
        assert!(late.busy && late.runs.is_empty(), "{late:?}");
    }

    #[test]
    fn ticks_missed_while_every_node_was_down_follow_the_policy() {
        let base = every_second();
        let last = record(10, RunState::Succeeded, Some(10));
        // Nodes come back at 15.2 and fire tick 15 (on time); 11..=14 were missed.
        let skip = plan(&base, Some(&last), secs(15), secs(15));
        assert_eq!(ticks(&skip), vec![(secs(15), RunKind::OnTime)]);
        assert_eq!(skip.missed, 4);

        let once = plan(
            &base.clone().with_missed_ticks(MissedTicks::RunOnce),
            Some(&last),
            secs(15),
            secs(15),
        );
        assert_eq!(ticks(&once), vec![(secs(15), RunKind::OnTime)]);

        let catch_up = base
            .clone()
            .with_missed_ticks(MissedTicks::CatchUp { max: 2 });
        let plan_c = plan(&catch_up, Some(&last), secs(15), secs(15));
        assert_eq!(
            ticks(&plan_c),
            vec![
                (secs(13), RunKind::Missed),
                (secs(14), RunKind::Missed),
                (secs(15), RunKind::OnTime)
            ]
        );
        assert_eq!(plan_c.missed, 2, "11 and 12 are beyond the catch-up limit");
    }

    #[test]
    fn a_stale_firing_is_missed_unless_the_policy_runs_it() {
        let base = every_second(); // on time within 1 s
        let last = record(10, RunState::Succeeded, Some(10));
        // A node that starts at 20.5 is on tick 20, fired 0.5 s late: on time.
        let fresh = plan(
            &base,
            Some(&last),
            secs(20),
            secs(20) + Duration::from_millis(500),
        );
        assert_eq!(ticks(&fresh), vec![(secs(20), RunKind::OnTime)]);
        // At 22, tick 20 is 2 s old: missed.
        let stale = plan(&base, Some(&last), secs(20), secs(22));
        assert!(stale.runs.is_empty());
        assert_eq!(stale.missed, 10);
        let once = plan(
            &base.with_missed_ticks(MissedTicks::RunOnce),
            Some(&last),
            secs(20),
            secs(22),
        );
        assert_eq!(ticks(&once), vec![(secs(20), RunKind::Missed)]);
    }

    #[test]
    fn an_unfinished_tick_is_run_again_only_at_least_once() {
        let died = record(10, RunState::Running, None);
        let at_most = plan(&every_second(), Some(&died), secs(11), secs(11));
        assert_eq!(ticks(&at_most), vec![(secs(11), RunKind::OnTime)]);
        let at_least = every_second().with_delivery(Delivery::AtLeastOnce);
        let plan = plan(&at_least, Some(&died), secs(11), secs(11));
        assert_eq!(
            ticks(&plan),
            vec![(secs(10), RunKind::Rerun), (secs(11), RunKind::OnTime)]
        );
    }

    #[test]
    fn the_first_run_ever_claims_the_tick_fired() {
        let first = plan(&every_second(), None, secs(5), secs(5));
        assert_eq!(ticks(&first), vec![(secs(5), RunKind::OnTime)]);
        let stale = plan(&every_second(), None, secs(5), secs(9));
        assert_eq!((stale.runs.len(), stale.missed), (0, 1));
    }

    #[test]
    fn claims_and_outcomes_keep_the_claim_identity() {
        let config = every_second();
        let previous = record(10, RunState::Succeeded, Some(10));
        let run = PlannedRun {
            tick: secs(11),
            kind: RunKind::OnTime,
        };
        let claimed = claim(&config, Some(&previous), &run, "b", 9, secs(11));
        assert_eq!(
            (claimed.state, claimed.runs, claimed.node.as_str()),
            (RunState::Running, 4, "b")
        );
        assert_eq!((claimed.tick(), claimed.fencing_token), (secs(11), 9));
        let done = finish(&claimed, RunState::Failed, secs(12));
        assert_eq!(done.state, RunState::Failed);
        assert_eq!(done.finished_at(), Some(secs(12)));
        assert_eq!(RunRecord::from_json(&done.to_json()).unwrap(), done);
    }
}
