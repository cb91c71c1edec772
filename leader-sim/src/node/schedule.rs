//! A node that runs a scheduled job: what `leader-schedule`'s blocking shell does, around
//! its I/O-free plan and `Firing` (`leader_schedule::__private`). The timetable waits on
//! the node's wall clock for the next tick; a firing reads the job's record, takes the
//! job's lock (the job loop's `Attempts`, `LeaseTracker` and renewals, with the options
//! the shell gives a job's lock), and under it drives the `Firing` machine: read the
//! record, write each claim, run the job (a simulated duration, sometimes longer than the
//! tick's interval or the lease), write its outcome. A lost lease is the firing's only
//! news of it: no run starts after it, one in progress goes on to its end. Then the lock
//! is released and the next firing planned. Every decision is the scheduler's code; this
//! file does the I/O and the timers, and writes each run down (`tick-ran`).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leader_core::{Error, RecordWriteOutcome, StoredRecord};
use leader_history::What;
use leader_schedule::__private::{
    Firing, MAX_SLEEP, Seen, Step, after_firing, job_elector, next_firing, run_state,
    running_at_fire, startup_tick, wait_time_until,
};
use leader_schedule::{Delivery, JobConfig, MissedTicks, RunKind, RunRecord, Schedule};

use super::{Effect, Node, Purpose, Setup, State, Timer};
use crate::plan::Scheduled;
use crate::store::{Answer, Call};

/// Where the nodes' wall clocks start, µs since the Unix epoch (2026): every offset and
/// step of a plan leaves them well after the epoch.
const WALL_BASE_US: i128 = 1_767_000_000_000_000;

/// The scheduled job a node runs: its config (the plan's rate and policies, the plan's
/// lease as the job's).
#[derive(Debug)]
pub(crate) struct Job {
    config: JobConfig,
}

impl Setup {
    /// This setup running `scheduled` (if any): the job's lock takes the options the
    /// shell gives it (a wait of the clock-skew bound, the job's lease, no minimum lease,
    /// renewed while it runs).
    pub(crate) fn scheduling(mut self, scheduled: Option<&Scheduled>) -> Setup {
        let Some(scheduled) = scheduled else {
            return self;
        };
        let Ok(schedule) = Schedule::every(Duration::from_millis(scheduled.every_ms.max(10)))
        else {
            return self;
        };
        let missed = match scheduled.catch_up {
            0 => MissedTicks::Skip,
            max => MissedTicks::CatchUp { max },
        };
        let delivery = if scheduled.at_least_once {
            Delivery::AtLeastOnce
        } else {
            Delivery::AtMostOnce
        };
        let config = JobConfig::new(schedule)
            .with_clock_skew(Duration::from_millis(scheduled.clock_skew_ms))
            .with_lease_time(self.options.lease_time())
            .with_missed_ticks(missed)
            .with_delivery(delivery);
        self.options = job_elector(&self.options, &config);
        self.keepalive = leader_core::__private::Keepalive::from_options(&self.options);
        self.schedule = Some(Job { config });
        self
    }
}

/// The scheduler's state on a node: its timetable and the firing in progress.
#[derive(Debug, Default)]
pub(crate) struct Sched<'a> {
    /// The number of the timetable's current wait (a later wait cancels a timer).
    wait: u64,
    /// The next firing planned: (when, by the wall clock; its tick).
    due: Option<(SystemTime, SystemTime)>,
    /// The tick being fired.
    tick: Option<SystemTime>,
    /// The record read as the node fired, if it said a run was in progress.
    running_at_fire: Option<RunRecord>,
    /// The firing machine, while the node holds the job's lock.
    firing: Option<Firing<'a>>,
    /// The number of the run in progress (a later run cancels a timer).
    run: u64,
    /// Whether a run is in progress.
    running: bool,
    /// When the last write of the record was sent, true µs (a run's claim).
    last_write: u64,
}

impl Sched<'_> {
    /// Whether a firing drives the lock's action now.
    pub(super) fn firing_on(&self) -> bool {
        self.firing.is_some()
    }
}

impl<'a> Node<'a> {
    fn job(&self) -> Option<&'a Job> {
        self.setup.schedule.as_ref()
    }

    /// The node's wall clock at true time `t`.
    fn wall(&self, t: u64) -> SystemTime {
        let us = WALL_BASE_US + self.clock.wall_signed_us(t);
        UNIX_EPOCH + Duration::from_micros(u64::try_from(us.max(0)).unwrap_or(u64::MAX))
    }

    /// The scheduler starts: it fires the tick it is on at once when a policy looks back
    /// (`startup_tick`), else plans the first tick after now.
    pub(super) fn schedule_start(&mut self, t: u64, fx: &mut Vec<Effect>) {
        let Some(job) = self.job() else { return };
        let now = self.clock.instant(t);
        let wall = self.wall(t);
        match startup_tick(&job.config, wall) {
            Some(tick) => self.fire(tick, now, t, fx),
            None => self.plan_after(wall, now, t, fx),
        }
    }

    /// Plans the first tick after `after` (no jitter: the plan's job has none), and waits
    /// for it.
    fn plan_after(&mut self, after: SystemTime, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(job) = self.job() else { return };
        self.sched.due = next_firing(&job.config, after, Duration::ZERO);
        self.sched.wait += 1;
        self.timetable(self.sched.wait, now, t, fx);
    }

    /// The timetable looks at the wall clock: the planned firing is due, or it sleeps
    /// toward it (at most `MAX_SLEEP`, so that a step of the clock is seen).
    pub(super) fn timetable(&mut self, wait: u64, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        if wait != self.sched.wait || !matches!(self.state, State::Idle) {
            return;
        }
        let Some((at, tick)) = self.sched.due else {
            return;
        };
        match wait_time_until(self.wall(t), at) {
            Some(sleep) => fx.push(Effect::Wake {
                at: now + sleep.min(MAX_SLEEP),
                timer: Timer::Fire(wait),
            }),
            None => {
                self.sched.due = None;
                self.fire(tick, now, t, fx);
            }
        }
    }

    /// Fires `tick`: reads the job's record first (whether a run is in progress, by the
    /// store), then asks for the lock.
    fn fire(&mut self, tick: SystemTime, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        self.sched.tick = Some(tick);
        self.send(Purpose::Peek, Call::ReadRecord, now, t, fx);
    }

    /// The read as the node fired was answered (or failed): the lock is asked for.
    pub(super) fn peeked(
        &mut self,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        if !matches!(self.state, State::Idle) || self.sched.tick.is_none() {
            return;
        }
        let read = answer.map(|answer| match answer {
            Answer::Record(Some((version, value))) => Some(StoredRecord::new(version, value)),
            _ => None,
        });
        self.sched.running_at_fire = running_at_fire(read);
        self.begin_acquiring(now, t, fx);
    }

    /// The lock is held: the firing begins (its first step reads the record).
    pub(super) fn firing_begins(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let (Some(job), Some(tick), State::Holding(held)) =
            (self.job(), self.sched.tick, &self.state)
        else {
            return;
        };
        let token = held.tracker.lease().fencing_token;
        let (firing, step) = Firing::new(
            &job.config,
            &self.setup.key,
            self.setup.options.node_id(),
            token,
            tick,
            self.sched.running_at_fire.take(),
        );
        self.sched.firing = Some(firing);
        self.step(step, now, t, fx);
    }

    /// What the firing sees now: the wall clock, and whether the lease is lost (as the
    /// lease context says: marked lost, or past its deadline).
    fn seen(&self, now: Instant, t: u64) -> Seen {
        let lease_lost = match &self.state {
            State::Holding(held) => held.lost || held.tracker.is_lost_at(now),
            _ => true,
        };
        Seen {
            now: self.wall(t),
            lease_lost,
            shutting_down: false,
        }
    }

    /// Does the firing's next step.
    fn step(&mut self, step: Step, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        match step {
            Step::Read => {
                self.send(Purpose::Record, Call::ReadRecord, now, t, fx);
            }
            Step::Write { expected, value } => {
                self.sched.last_write = t;
                self.send(
                    Purpose::Record,
                    Call::WriteRecord { expected, value },
                    now,
                    t,
                    fx,
                );
            }
            Step::Run(run) => {
                let State::Holding(held) = &self.state else {
                    return;
                };
                let tick = run
                    .tick
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                fx.push(Effect::Log(What::TickRan {
                    lock: 0,
                    tick,
                    token: held.tracker.lease().fencing_token,
                    claimed: Some(self.sched.last_write),
                    rerun: run.kind == RunKind::Rerun,
                }));
                self.sched.run += 1;
                self.sched.running = true;
                let took = self.work();
                fx.push(Effect::Wake {
                    at: now + took,
                    timer: Timer::RunDone(self.sched.run),
                });
            }
            Step::Done => self.firing_ends(now, t, fx),
        }
    }

    /// The run in progress is over: how it ended (the lease lost meanwhile, or not) goes
    /// to the firing, which writes the outcome.
    pub(super) fn run_done(&mut self, run: u64, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        if run != self.sched.run || !self.sched.running {
            return;
        }
        self.sched.running = false;
        let lost = self.seen(now, t).lease_lost;
        let state = run_state(Ok(Ok(())), false, lost);
        let wall = self.wall(t);
        let Some(firing) = self.sched.firing.as_mut() else {
            return;
        };
        let step = firing.on_ran(state, wall);
        self.step(step, now, t, fx);
    }

    /// A record call of the firing was answered (or failed: the firing fails, as the
    /// shell's `?` on the backend's error ends its action).
    pub(super) fn record_answered(
        &mut self,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let seen = self.seen(now, t);
        let Some(firing) = self.sched.firing.as_mut() else {
            return;
        };
        let next = match answer {
            Ok(Answer::Record(stored)) => {
                firing.on_read(stored.map(|(v, value)| StoredRecord::new(v, value)), seen)
            }
            Ok(Answer::RecordWritten { version }) => {
                firing.on_written(RecordWriteOutcome::Written { version }, seen)
            }
            Ok(Answer::RecordConflict) => {
                firing.on_written(RecordWriteOutcome::Conflict { current: None }, seen)
            }
            // Not an answer to a record call.
            Ok(_) => Ok(Step::Done),
            Err(err) => Err(err),
        };
        match next {
            Ok(step) => self.step(step, now, t, fx),
            Err(_) => self.firing_ends(now, t, fx),
        }
    }

    /// The firing is over: the action returns, and the lock is released.
    fn firing_ends(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        self.sched.firing = None;
        self.sched.running = false;
        self.finish(now, t, fx);
    }

    /// The firing's lock is given back (or was never had): the timetable plans the tick
    /// after both the one fired and now.
    pub(super) fn firing_over(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        self.sched.firing = None;
        self.sched.running = false;
        let t = self.clock.true_us(now);
        let wall = self.wall(t);
        let after = self
            .sched
            .tick
            .take()
            .map_or(wall, |tick| after_firing(tick, wall));
        self.plan_after(after, now, t, fx);
    }
}
