//! The scheduler's decisions, as code that does no I/O: when a node fires a tick, which
//! runs a firing makes given the job's record, and the records it writes. The blocking and
//! async shells only wait, take the job's lock, read and write the record and run the job.

use std::time::{Duration, SystemTime};

use crate::config::{Delivery, JobConfig, MissedTicks};
use crate::record::{RunRecord, RunState, to_millis};
use crate::schedule::Schedule;

/// The most missed ticks a firing counts on a cron schedule (counted by walking its
/// ticks; a fixed rate's are counted exactly): a per-second pattern down for a week has
/// 600,000, and the count stops here.
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
pub struct PlannedRun {
    /// The tick it runs.
    pub tick: SystemTime,
    /// Why it runs.
    pub kind: RunKind,
}

/// What a firing does, decided under the job's lock from the record read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Plan {
    /// The runs to claim and make, oldest tick first.
    pub(crate) runs: Vec<PlannedRun>,
    /// Ticks no node ran, which this firing does not run (skipped by the policy, or busy
    /// then): every such tick is counted once, by the firing that claims a later one.
    pub(crate) missed: u64,
    /// The tick fired was claimed already (by another node, or before a restart).
    pub(crate) claimed_elsewhere: bool,
    /// The tick came while the job's previous run was still going: skipped, not queued.
    pub(crate) busy: bool,
}

/// When a node fires the next tick after `after`: the tick and the wall-clock instant to
/// fire it (the tick plus `jitter`).
pub fn next_firing(
    config: &JobConfig,
    after: SystemTime,
    jitter: Duration,
) -> Option<(SystemTime, SystemTime)> {
    let tick = config.schedule().next_after(after)?;
    Some((tick, tick.checked_add(jitter).unwrap_or(tick)))
}

/// Where a node's timetable goes on from once its firing of `tick` ended at `now`: the
/// next firing is for the first tick after both. The ticks that passed while the firing
/// went on are not fired late one by one: the next firing counts them from the record
/// (busy, or missed by the policy). Both shells plan from here.
pub fn after_firing(tick: SystemTime, now: SystemTime) -> SystemTime {
    tick.max(now)
}

/// The tick a node starting at `now` is on: the last one at or before `now`, however long
/// ago (the record read under the lock then says which ticks before it were missed). A
/// firing of it applies the missed-tick and delivery policies at once, instead of at the
/// next tick (which, for a weekly job, is days away). `None` when neither policy looks
/// back.
pub fn startup_tick(config: &JobConfig, now: SystemTime) -> Option<SystemTime> {
    let wants_probe =
        config.missed_ticks() != MissedTicks::Skip || config.delivery() == Delivery::AtLeastOnce;
    if !wants_probe {
        return None;
    }
    config.schedule().last_at_or_before(now)
}

/// The runs a firing of `fired` makes at `now` (the node's wall clock), holding the job's
/// lock, given the record read (`None`: the job never ran anywhere) and the claim that was
/// in progress when the node fired (`running_at_fire`: the record read just before the
/// node asked for the lock, when it said `running`).
///
/// - A tick at or before the record's tick was claimed already: nothing to run.
/// - A tick fired while a run was in progress is **busy**: skipped, never queued behind
///   that run. In progress means what the store said when the node fired (its record was
///   `running`), not a comparison of the tick with the end of that run by its runner's
///   clock: another node's clock may be off by as much as the skew bound either way. A
///   claim still `running` now, under this node's lock, was left by a runner that lost
///   the lock (it died): it is not in progress.
/// - Under [`Delivery::AtLeastOnce`], a record still `running` (its runner lost the lock)
///   or ended on a lost lease (its result is not trusted) is run again first.
/// - Ticks between the record's and `fired` ran on no node: each is counted once, here,
///   in [`Plan::missed`] unless this firing runs it. `fired` itself is missed too when it
///   fires later than [`JobConfig::on_time_within`]. The missed-tick policy then skips
///   them, runs the latest once, or runs each (the latest `max`) of those that came after
///   the record's run ended (by its runner's clock, less the skew bound, so that a runner
///   whose clock is fast does not hide ticks): those before came while it ran (busy) and
///   are never caught up.
pub(crate) fn plan(
    config: &JobConfig,
    record: Option<&RunRecord>,
    running_at_fire: Option<&RunRecord>,
    fired: SystemTime,
    now: SystemTime,
) -> Plan {
    let mut plan = Plan::default();
    let on_time = now
        .duration_since(fired)
        .map_or(true, |late| late <= config.on_time_within());
    let kind = if on_time {
        RunKind::OnTime
    } else {
        RunKind::Missed
    };
    let Some(record) = record else {
        if on_time || config.missed_ticks() != MissedTicks::Skip {
            plan.runs.push(PlannedRun { tick: fired, kind });
        } else {
            plan.missed = 1;
        }
        return plan;
    };
    let last = record.tick();
    if fired <= last && !claim_tick_twice() {
        plan.claimed_elsewhere = true;
        return plan;
    }
    if let Some(seen) = running_at_fire.filter(|seen| seen.tick() < fired) {
        let abandoned = record.same_claim(seen) && record.state == RunState::Running;
        if !abandoned {
            plan.busy = true;
            return plan;
        }
    }
    let unfinished = matches!(record.state, RunState::Running | RunState::LeaseLost);
    if config.delivery() == Delivery::AtLeastOnce && unfinished {
        plan.runs.push(PlannedRun {
            tick: last,
            kind: RunKind::Rerun,
        });
    }

    // The ticks strictly between the record's and `fired` ran nowhere: counted here, once.
    // Those before the end of the record's run came while it ran (busy): they are never
    // caught up. By its runner's clock, less the skew bound, so that a runner whose clock
    // is fast does not make ticks after its run look busy.
    let schedule = config.schedule();
    let between = schedule.count_between(last, fired, COUNT_LIMIT);
    let ran_until = record
        .finished_at()
        .unwrap_or_else(|| record.started_at())
        .checked_sub(config.clock_skew())
        .unwrap_or(last);
    let busy_until = ran_until.max(last);
    plan.apply_missed_ticks(
        config,
        between,
        busy_until,
        PlannedRun { tick: fired, kind },
    );
    plan
}

/// Whether the simulator planted `ClaimTickTwice` (feature `__defects`): the plan then
/// ignores that the record's tick was claimed already. Without the feature, `false`, and
/// the check compiles to nothing.
#[inline]
fn claim_tick_twice() -> bool {
    #[cfg(feature = "__defects")]
    {
        leader_core::__private::is_planted(leader_core::__private::Defect::ClaimTickTwice)
    }
    #[cfg(not(feature = "__defects"))]
    {
        false
    }
}

impl Plan {
    /// The missed-tick policy, given the `between` ticks that ran nowhere before `fired`
    /// (the tick this firing is for, missed itself when it is not on time) and the end of
    /// the record's run (`busy_until`: ticks before it came while it ran).
    fn apply_missed_ticks(
        &mut self,
        config: &JobConfig,
        between: u64,
        busy_until: SystemTime,
        fired: PlannedRun,
    ) {
        let on_time = fired.kind == RunKind::OnTime;
        match config.missed_ticks() {
            MissedTicks::Skip => {
                self.missed = between + u64::from(!on_time);
                if on_time {
                    self.runs.push(fired);
                }
            }
            MissedTicks::RunOnce => {
                self.missed = between;
                self.runs.push(fired);
            }
            MissedTicks::CatchUp { max } => {
                // The latest `max` missed ticks run, oldest first, and `fired` itself; the
                // older ones stay missed.
                let caught_up = latest_ticks(config.schedule(), fired.tick, busy_until, max);
                self.missed = between.saturating_sub(caught_up.len() as u64);
                self.runs
                    .extend(caught_up.into_iter().rev().map(|tick| PlannedRun {
                        tick,
                        kind: RunKind::Missed,
                    }));
                self.runs.push(fired);
            }
        }
    }
}

/// The latest `max` ticks of `schedule` before `fired` and after `busy_until`, newest
/// first. Found backwards from `fired`: a walk of at most `max` steps, however long ago
/// `busy_until` was.
fn latest_ticks(
    schedule: &Schedule,
    fired: SystemTime,
    busy_until: SystemTime,
    max: u32,
) -> Vec<SystemTime> {
    let mut ticks = Vec::new();
    let mut cursor = fired;
    while ticks.len() < max as usize {
        match schedule.last_before(cursor) {
            Some(tick) if tick > busy_until => {
                ticks.push(tick);
                cursor = tick;
            }
            _ => break,
        }
    }
    ticks
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
            let plan = plan(&config, Some(&done), None, secs(fired), secs(now));
            assert!(
                plan.claimed_elsewhere && plan.runs.is_empty(),
                "{fired}@{now}: {plan:?}"
            );
        }
    }

    #[cfg(feature = "__defects")]
    #[test]
    fn the_planted_defect_claims_a_tick_claimed_already() {
        use leader_core::__private::{Defect, plant};
        let config = every_second();
        let done = record(10, RunState::Succeeded, Some(10));
        let clean = plan(&config, Some(&done), None, secs(10), secs(10));
        assert!(
            clean.claimed_elsewhere && clean.runs.is_empty(),
            "{clean:?}"
        );
        let _planted = plant(&[Defect::ClaimTickTwice]);
        let planted = plan(&config, Some(&done), None, secs(10), secs(10));
        assert_eq!(ticks(&planted), vec![(secs(10), RunKind::OnTime)]);
    }

    #[test]
    fn the_next_tick_runs_on_time_with_nothing_missed() {
        let config = every_second();
        let plan = plan(
            &config,
            Some(&record(10, RunState::Succeeded, Some(10))),
            None,
            secs(11),
            secs(11),
        );
        assert_eq!(ticks(&plan), vec![(secs(11), RunKind::OnTime)]);
        assert_eq!((plan.missed, plan.claimed_elsewhere), (0, false));
    }

    #[test]
    fn ticks_that_came_while_the_job_ran_are_counted_not_caught_up() {
        let config = every_second().with_missed_ticks(MissedTicks::CatchUp { max: 10 });
        // Tick 10 ran until 13.5: ticks 11, 12 and 13 came while it ran (by its clock,
        // less the 0.5 s skew bound: until 13.0).
        let mut long = record(10, RunState::Succeeded, None);
        long.finished_ms = Some(to_millis(secs(13) + Duration::from_millis(500)));
        let plan = plan(&config, Some(&long), None, secs(14), secs(14));
        assert_eq!(ticks(&plan), vec![(secs(14), RunKind::OnTime)]);
        assert_eq!(plan.missed, 3, "no node ran them: counted, once");
        // Its runner's clock was fast: the end it recorded is pulled back by the skew bound,
        // so tick 13 (after the run's real end) is caught up.
        long.finished_ms = Some(to_millis(secs(13) + Duration::from_millis(400)));
        let plan = super::plan(&config, Some(&long), None, secs(14), secs(14));
        assert_eq!(
            ticks(&plan),
            vec![(secs(13), RunKind::Missed), (secs(14), RunKind::OnTime)]
        );
        assert_eq!(plan.missed, 2);
        // A node that fired tick 13 while that run was in progress (its record said
        // `running` then) and waited for the lock through it: busy.
        let mut running = long.clone();
        (running.state, running.finished_ms) = (RunState::Running, None);
        let late = super::plan(
            &config,
            Some(&long),
            Some(&running),
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
        let skip = plan(&base, Some(&last), None, secs(15), secs(15));
        assert_eq!(ticks(&skip), vec![(secs(15), RunKind::OnTime)]);
        assert_eq!(skip.missed, 4);

        let once = plan(
            &base.clone().with_missed_ticks(MissedTicks::RunOnce),
            Some(&last),
            None,
            secs(15),
            secs(15),
        );
        assert_eq!(ticks(&once), vec![(secs(15), RunKind::OnTime)]);
        assert_eq!(once.missed, 4, "run once, and the four before it counted");

        let catch_up = base
            .clone()
            .with_missed_ticks(MissedTicks::CatchUp { max: 2 });
        let plan_c = plan(&catch_up, Some(&last), None, secs(15), secs(15));
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
            None,
            secs(20),
            secs(20) + Duration::from_millis(500),
        );
        assert_eq!(ticks(&fresh), vec![(secs(20), RunKind::OnTime)]);
        // At 22, tick 20 is 2 s old: missed.
        let stale = plan(&base, Some(&last), None, secs(20), secs(22));
        assert!(stale.runs.is_empty());
        assert_eq!(stale.missed, 10);
        let once = plan(
            &base.with_missed_ticks(MissedTicks::RunOnce),
            Some(&last),
            None,
            secs(20),
            secs(22),
        );
        assert_eq!(ticks(&once), vec![(secs(20), RunKind::Missed)]);
    }

    #[test]
    fn an_unfinished_tick_is_run_again_only_at_least_once() {
        let died = record(10, RunState::Running, None);
        let at_most = plan(&every_second(), Some(&died), None, secs(11), secs(11));
        assert_eq!(ticks(&at_most), vec![(secs(11), RunKind::OnTime)]);
        let at_least = every_second().with_delivery(Delivery::AtLeastOnce);
        let plan = plan(&at_least, Some(&died), None, secs(11), secs(11));
        assert_eq!(
            ticks(&plan),
            vec![(secs(10), RunKind::Rerun), (secs(11), RunKind::OnTime)]
        );
    }

    #[test]
    fn the_first_run_ever_claims_the_tick_fired() {
        let first = plan(&every_second(), None, None, secs(5), secs(5));
        assert_eq!(ticks(&first), vec![(secs(5), RunKind::OnTime)]);
        let stale = plan(&every_second(), None, None, secs(5), secs(9));
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
    #[test]
    fn busy_is_what_the_store_said_when_the_tick_was_fired_not_a_runners_clock() {
        let config = every_second();
        // A node whose clock is fast recorded tick 10's end at 11.4 by its clock; the
        // record said `succeeded` when this node fired tick 11: not busy.
        let fast = record(10, RunState::Succeeded, None);
        let mut fast = fast;
        fast.finished_ms = Some(to_millis(secs(11) + Duration::from_millis(400)));
        let plan_fast = plan(&config, Some(&fast), None, secs(11), secs(11));
        assert_eq!(ticks(&plan_fast), vec![(secs(11), RunKind::OnTime)]);
        // A claim `running` when the node fired and still `running` under its lock: its
        // runner lost the lock (died), nothing is in progress.
        let died = record(10, RunState::Running, None);
        let plan_died = plan(&config, Some(&died), Some(&died), secs(11), secs(11));
        assert!(!plan_died.busy, "{plan_died:?}");
        assert_eq!(ticks(&plan_died), vec![(secs(11), RunKind::OnTime)]);
        // The same claim, finished by now: it was in progress when the node fired.
        let finished = record(10, RunState::Succeeded, Some(10));
        let plan_busy = plan(&config, Some(&finished), Some(&died), secs(11), secs(11));
        assert!(plan_busy.busy && plan_busy.runs.is_empty(), "{plan_busy:?}");
    }

    #[test]
    fn at_least_once_reruns_a_tick_that_ended_on_a_lost_lease() {
        let at_least = every_second().with_delivery(Delivery::AtLeastOnce);
        for state in [RunState::Running, RunState::LeaseLost] {
            let unfinished = record(10, state, Some(10));
            let plan = plan(&at_least, Some(&unfinished), None, secs(11), secs(11));
            assert_eq!(
                ticks(&plan),
                vec![(secs(10), RunKind::Rerun), (secs(11), RunKind::OnTime)],
                "{state:?}"
            );
        }
        for state in [RunState::Failed, RunState::TimedOut, RunState::Panicked] {
            let ended = record(10, state, Some(10));
            let plan = plan(&at_least, Some(&ended), None, secs(11), secs(11));
            assert_eq!(ticks(&plan), vec![(secs(11), RunKind::OnTime)], "{state:?}");
        }
    }

    #[test]
    fn a_catch_up_after_a_long_outage_runs_the_latest_ticks_and_counts_the_rest() {
        let catch_up = every_second().with_missed_ticks(MissedTicks::CatchUp { max: 3 });
        // Down for 300,000 ticks: more than the old counting walk ever reached.
        let last = record(10, RunState::Succeeded, Some(10));
        let fired = 10 + 300_001;
        let plan = plan(&catch_up, Some(&last), None, secs(fired), secs(fired));
        assert_eq!(
            ticks(&plan),
            vec![
                (secs(fired - 3), RunKind::Missed),
                (secs(fired - 2), RunKind::Missed),
                (secs(fired - 1), RunKind::Missed),
                (secs(fired), RunKind::OnTime),
            ]
        );
        assert_eq!(plan.missed, 300_000 - 3);
    }

    #[test]
    fn a_node_starting_long_after_the_last_tick_is_on_that_tick() {
        let weekly = JobConfig::new(Schedule::every(Duration::from_secs(7 * 24 * 3600)).unwrap())
            .with_missed_ticks(MissedTicks::RunOnce);
        let monday = UNIX_EPOCH + Duration::from_secs(7 * 24 * 3600 * 2900);
        let wednesday = monday + Duration::from_secs(2 * 24 * 3600);
        assert_eq!(startup_tick(&weekly, wednesday), Some(monday));
        let skip = weekly.with_missed_ticks(MissedTicks::Skip);
        assert_eq!(startup_tick(&skip, wednesday), None);
    }
}
