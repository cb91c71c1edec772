//! A node that runs a job in a loop: what `leader-blocking`'s acquire loop, renewal
//! driver and action runner do, around the engine's `Attempts`, `LeaseTracker` and
//! `RenewalSchedule`. Acquire the lock (within the wait), act for a while with the lease
//! auto-extended (a fenced write at the start and at the end), release, rest.

use std::time::{Duration, Instant, SystemTime};

use leader_core::__private::{Attempts, LeaseTracker, Orphan, Step};
use leader_core::{ExtendOutcome, Lease};
use leader_history::{Answer as HistoryAnswer, What};

use super::{BACKEND, Effect, Held, InFlight, Node, Purpose, State, Timer};
use crate::store::{Answer, Call};

impl Node<'_> {
    /// Asks for the job's lock: the first attempt goes now, the engine's `Attempts` decide
    /// the rest.
    pub(super) fn begin_acquiring(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let attempts = Attempts::new(BACKEND, &self.setup.key, &self.setup.options);
        self.state = State::Acquiring {
            attempts,
            requested: t,
        };
        fx.push(Effect::Log(What::AcquireRequested { lock: 0 }));
        self.attempt(now, t, fx);
    }

    pub(super) fn attempt(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let State::Acquiring { attempts, .. } = &self.state else {
            return;
        };
        let request = attempts.request().request;
        let call = Call::Acquire {
            owner: request.owner,
            node: self.id,
            lease_us: self.lease_us(),
            slots: vec![0],
        };
        self.send(Purpose::Acquire, call, now, t, fx);
    }

    pub(super) fn acquire_answered(
        &mut self,
        call: InFlight,
        answer: Answer,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let (requested, owner) = match &self.state {
            State::Acquiring {
                attempts,
                requested,
            } => (*requested, attempts.request().request.owner),
            _ => return,
        };
        let outcome = self.slot_outcome(&answer, owner);
        let requested_us = self.clock.true_us(call.sent_at);
        let State::Acquiring { attempts, .. } = &mut self.state else {
            return;
        };
        match attempts.on_outcome(outcome, call.sent_at, now) {
            Step::Acquired(lease, sent_at) => {
                fx.push(Effect::Log(What::AcquireAnswered {
                    lock: 0,
                    requested: requested_us,
                    answer: HistoryAnswer::Lease {
                        token: lease.fencing_token,
                    },
                }));
                self.hold(lease, sent_at, requested, now, t, fx);
            }
            Step::RetryAfter(delay) => self.wait(now + delay, false, fx),
            Step::GaveUp(_) => {
                fx.push(Effect::Log(What::AcquireAnswered {
                    lock: 0,
                    requested: requested_us,
                    answer: HistoryAnswer::Refused,
                }));
                self.rest_then_start(now, fx);
            }
            Step::Late(late) => {
                let (orphan, next) = late.into_parts();
                self.adopt(orphan, Some(owner), now, t, fx);
                match next {
                    Ok(delay) => self.wait(now + delay, false, fx),
                    Err(_) => {
                        fx.push(Effect::Log(What::AcquireAnswered {
                            lock: 0,
                            requested: requested_us,
                            answer: HistoryAnswer::Refused,
                        }));
                        self.rest_then_start(now, fx);
                    }
                }
            }
        }
    }

    pub(super) fn rest_then_start(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        self.state = State::Idle;
        if self.setup.schedule.is_some() {
            // The scheduler's firing is over: its timetable plans the next one.
            return self.firing_over(now, fx);
        }
        let rest = self.rest();
        fx.push(Effect::Wake {
            at: now + rest,
            timer: Timer::Start,
        });
    }

    /// A lease won: its action starts unless the lease is already lost.
    pub(super) fn hold(
        &mut self,
        lease: Lease,
        sent_at: Instant,
        requested: u64,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let lease_time = self.lease_time();
        let tracker = LeaseTracker::new(lease, "job", sent_at, lease_time, BACKEND);
        if tracker.check_start(now).is_err() {
            // Released without the minimum lease: the action never ran.
            let lease = tracker.lease();
            let owner = lease.owner;
            let orphan = Orphan::new(lease.key.clone(), owner, sent_at, lease_time);
            self.adopt(orphan, Some(owner), now, t, fx);
            self.rest_then_start(now, fx);
            return;
        }
        let deadline = tracker.context().deadline();
        self.begin_action(&tracker, requested, t, fx);
        let schedule = self.setup.keepalive.schedule(sent_at);
        if let Some(schedule) = &schedule {
            fx.push(Effect::Wake {
                at: schedule.due(),
                timer: Timer::RenewDue,
            });
        }
        fx.push(Effect::Wake {
            at: deadline,
            timer: Timer::Deadline,
        });
        let scheduled = self.setup.schedule.is_some();
        let work_until = now + self.work();
        if !scheduled {
            fx.push(Effect::Wake {
                at: work_until,
                timer: Timer::WorkDone,
            });
        }
        self.state = State::Holding(Held {
            tracker,
            schedule,
            work_until,
            lost: false,
        });
        if scheduled {
            // The scheduler's action: the firing's steps, under the lock.
            self.firing_begins(now, t, fx);
        }
    }

    pub(super) fn renew(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let State::Holding(held) = &self.state else {
            return;
        };

        if held.lost
            || held.schedule.is_none_or(|schedule| now < schedule.due())
            || self.calls.iter().any(|c| c.purpose == Purpose::Renew)
        {
            return;
        }
        let budget = held.tracker.renewal_budget(now);
        if budget.is_zero() {
            held.tracker.renewal_unanswered();
            self.lose(t, fx);
            return;
        }
        let call = Call::Extend {
            owner: held.tracker.lease().owner,
            slot: 0,
            lease_us: self.lease_us(),
        };
        let id = self.send(Purpose::Renew, call, now, t, fx);
        fx.push(Effect::Wake {
            at: now + budget,
            timer: Timer::RenewalBudget(id),
        });
    }

    pub(super) fn renewal_answered(
        &mut self,
        call: InFlight,
        answer: Answer,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let lease_time = self.lease_time();
        let State::Holding(held) = &mut self.state else {
            return;
        };
        if held.lost {
            return;
        }
        let answer = match answer {
            Answer::Extended { expires } => Ok(ExtendOutcome::Extended {
                expires_at: SystemTime::UNIX_EPOCH + Duration::from_micros(expires),
            }),
            _ => Ok(ExtendOutcome::NotHeld),
        };
        if held
            .tracker
            .record_renewal(answer, call.sent_at, lease_time, now)
        {
            if let Some(schedule) = &mut held.schedule {
                schedule.renewed(call.sent_at);
                fx.push(Effect::Wake {
                    at: schedule.due(),
                    timer: Timer::RenewDue,
                });
            }
            let deadline = held.tracker.context().deadline();
            fx.push(Effect::Log(What::Renewed {
                lock: 0,
                token: held.tracker.lease().fencing_token,
                requested: Some(self.clock.true_us(call.sent_at)),
                deadline: Some(self.clock.true_us(deadline)),
            }));
            fx.push(Effect::Wake {
                at: deadline,
                timer: Timer::Deadline,
            });
        } else {
            self.lose(t, fx);
        }
    }

    /// The lease is lost (the tracker says so): the action is told and stops at once; it
    /// ends with its fenced end write and the lease's release.
    pub(super) fn lose(&mut self, t: u64, fx: &mut Vec<Effect>) {
        let State::Holding(held) = &mut self.state else {
            return;
        };
        if held.lost {
            return;
        }
        held.lost = true;
        let token = held.tracker.lease().fencing_token;
        fx.push(Effect::Log(What::LeaseLost { lock: 0, token }));
        if self.sched.firing_on() {
            // A firing is told only through its lease: it starts nothing more, and a run
            // in progress goes on to its end (the job is the user's code).
            return;
        }
        let now = self.clock.instant(t);
        self.finish(now, t, fx);
    }

    /// The action returns: its end write, then the release.
    pub(super) fn finish(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let State::Holding(held) = std::mem::replace(&mut self.state, State::Idle) else {
            return;
        };
        let found_lost = !held.lost && held.tracker.lost_before_return(now);
        self.end_action(&held.tracker, found_lost, fx);
        let call = Call::Release {
            owner: held.tracker.lease().owner,
            slot: 0,
        };
        self.state = State::Releasing(held);
        self.send(Purpose::Release, call, now, t, fx);
    }

    pub(super) fn release_answered(&mut self, answer: Answer, t: u64, fx: &mut Vec<Effect>) {
        let State::Releasing(held) = std::mem::replace(&mut self.state, State::Idle) else {
            return;
        };
        if answer == Answer::Released {
            fx.push(Effect::Log(What::Released {
                lock: 0,
                token: held.tracker.lease().fencing_token,
            }));
        }
        let now = self.clock.instant(t);
        self.rest_then_start(now, fx);
    }
}
