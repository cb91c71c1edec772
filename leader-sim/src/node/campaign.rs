//! A node that campaigns: what `leader-blocking`'s campaign thread does (stand by, attempt,
//! lead a term, renew it racing its deadline, release it), around the engine's
//! `CampaignRun` and `TermLoop`. A term is the node's action: it starts when the engine
//! says the node leads and ends when the engine ends the term.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use leader_core::__private::{
    CampaignRun, CampaignStep, LeaseTracker, Orphan, Raced, TermLoop, TermStep,
};
use leader_core::{Error, ExtendOutcome, OwnerToken};
use leader_history::{Answer as HistoryAnswer, What};

use super::{Effect, InFlight, Node, Purpose, State, Timer};
use crate::store::{Answer, Call};

/// A leader's term and its loop.
#[derive(Debug)]
pub(crate) struct Leading<'a> {
    pub(super) term_loop: TermLoop<'a>,
    pub(super) term: Arc<LeaseTracker>,
    /// The term ended (revoked or resigned): its section is over, its release on its way.
    pub(super) ended: bool,
}

impl<'a> Node<'a> {
    /// This life's campaign.
    pub(super) fn campaign(&self) -> Option<&'a CampaignRun> {
        let setup: &'a super::Setup = self.setup;
        setup.campaigns.get(self.life)
    }

    /// A standby's round: its attempt, after a ranked campaign's survey (`ranked.rs`),
    /// or the campaign's end once it resigned.
    pub(super) fn round(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(run) = self.campaign() else { return };
        if !matches!(self.state, State::Standby) || self.round_in_progress() {
            return;
        }
        match run.next_round() {
            CampaignStep::Attempt => self.send_attempt(run, now, t, fx),
            CampaignStep::Survey(candidacy) => self.standby_survey(candidacy, now, t, fx),
            CampaignStep::Stop => self.stop_campaign(now, t, fx),
            step => {
                let owner = run.request().request.owner;
                self.after_step(step, t, owner, now, t, fx);
            }
        }
    }

    /// Sends a standby's attempt.
    pub(super) fn send_attempt(
        &mut self,
        run: &'a CampaignRun,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let request = run.request();
        let call = Call::Acquire {
            owner: request.request.owner,
            node: self.id,
            lease_us: self.lease_us(),
            slots: request.slots().map(|(slot, _)| slot).collect(),
        };
        fx.push(Effect::Log(What::AcquireRequested { lock: 0 }));
        self.send(Purpose::Campaign, call, now, t, fx);
    }

    /// The answer to a standby's attempt (an error: none within the timeout).
    pub(super) fn campaign_answered(
        &mut self,
        call: InFlight,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(run) = self.campaign() else { return };
        let owner = run.request().request.owner;
        let requested = self.clock.true_us(call.sent_at);
        let outcome = answer.map(|a| self.slot_outcome(&a, owner));
        let logged = match &outcome {
            Ok(leader_core::SlotOutcome::Acquired { lease, .. }) => HistoryAnswer::Lease {
                token: lease.fencing_token,
            },
            // `SlotOutcome` is non-exhaustive: anything but a lease is a refusal here.
            Ok(_) => HistoryAnswer::Refused,
            Err(err) => HistoryAnswer::Indeterminate {
                message: Some(err.to_string()),
            },
        };
        // A group's answer is its slot's; an attempt that took none is logged on slot 0.
        let lock = match &outcome {
            Ok(leader_core::SlotOutcome::Acquired { slot, .. }) => *slot,
            _ => 0,
        };
        fx.push(Effect::Log(What::AcquireAnswered {
            lock,
            requested,
            answer: logged,
        }));
        let step = run.after_standby_attempt(outcome, call.sent_at, now);
        self.after_step(step, requested, owner, now, t, fx);
    }

    /// Does `step`; `requested` is when the attempt it follows was sent (true time), with
    /// `owner`.
    pub(super) fn after_step(
        &mut self,
        step: CampaignStep<'a>,
        requested: u64,
        owner: OwnerToken,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        match step {
            CampaignStep::StandBy { orphan, wait } => {
                if let Some(orphan) = orphan {
                    self.adopt(orphan, Some(owner), now, t, fx);
                }
                self.state = State::Standby;
                // A stop requested since the round began ends the wait at once (the
                // shell's stop listener was registered before the round).
                let stopping = self
                    .campaign()
                    .is_some_and(|run| run.state.stop_requested());
                let at = if stopping { now } else { now + wait };
                self.wait(at, true, fx);
            }
            CampaignStep::Lead { term, strays } => {
                if let Some(strays) = strays {
                    // The term's own owner, still held on its slot: not abandoned.
                    self.adopt(strays, None, now, t, fx);
                }
                self.lead(term, requested, now, t, fx);
            }
            CampaignStep::Attempt | CampaignStep::Survey(_) | CampaignStep::Stop => {}
        }
    }

    fn lead(
        &mut self,
        term: Arc<LeaseTracker>,
        requested: u64,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(run) = self.campaign() else { return };
        self.begin_action(&term, requested, t, fx);
        fx.push(Effect::Leading {
            owner: term.lease().owner,
            slot: self.slot_of(&term.lease().key),
        });
        let (term_loop, step) = TermLoop::new(run, now);
        self.state = State::Leading(Leading {
            term_loop,
            term,
            ended: false,
        });
        self.term_step(step, now, t, fx);
    }

    pub(super) fn term_wait(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let State::Leading(leading) = &mut self.state else {
            return;
        };
        if leading.ended || self.calls.iter().any(|c| c.purpose == Purpose::TermRenew) {
            return;
        }
        let step = leading.term_loop.after_wait(None, now);
        self.term_step(step, now, t, fx);
    }

    pub(super) fn term_step(&mut self, step: TermStep, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        match step {
            TermStep::Wait {
                until,
                start_survey,
            } => {
                if self.setup.records.is_empty() {
                    fx.push(Effect::Wake {
                        at: until,
                        timer: Timer::TermWait,
                    });
                } else {
                    self.leader_wait(until, start_survey, now, t, fx);
                }
            }
            TermStep::Renew { term, sent_at } => {
                let deadline = term.context().deadline();
                let call = Call::Extend {
                    owner: term.lease().owner,
                    slot: self.slot_of(&term.lease().key),
                    lease_us: self.lease_us(),
                };
                let id = self.send(Purpose::TermRenew, call, sent_at, t, fx);
                // Raced against the term's deadline (`extend_before`).
                fx.push(Effect::Wake {
                    at: deadline.max(now),
                    timer: Timer::TermBudget(id),
                });
            }
            TermStep::End { term, withdraw } => {
                self.ranked.term_over();
                if withdraw {
                    self.resign_term(term, now, t, fx);
                } else {
                    self.end_term(&term, true, now, t, fx);
                }
            }
            // Nothing to release; what a late attempt of the term's token may take back
            // is released as after any term (the shell's `term_ended` after `lead`).
            TermStep::Over => {
                self.ranked.term_over();
                match &self.state {
                    State::Leading(leading) => {
                        let owner = leading.term.lease().owner;
                        self.after_term(owner, now, t, fx);
                    }
                    _ => self.next_round(now, fx),
                }
            }
        }
    }

    /// A renewal's answer (`None`: the term's deadline passed first).
    pub(super) fn term_renewal_raced(
        &mut self,
        call: InFlight,
        answer: Option<Result<Answer, Error>>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Leading(leading) = &mut self.state else {
            return;
        };
        if leading.ended {
            return;
        }
        let extended = matches!(answer, Some(Ok(Answer::Extended { .. })));
        let raced = match answer {
            None => Raced::DeadlinePassed,
            Some(Ok(Answer::Extended { expires })) => {
                Raced::Answered(Ok(ExtendOutcome::Extended {
                    expires_at: SystemTime::UNIX_EPOCH + Duration::from_micros(expires),
                }))
            }
            Some(Ok(_)) => Raced::Answered(Ok(ExtendOutcome::NotHeld)),
            Some(Err(err)) => Raced::Answered(Err(err)),
        };
        let term = Arc::clone(&leading.term);
        let step = leading
            .term_loop
            .after_renewal(&term, raced, call.sent_at, now);
        if extended && matches!(step, TermStep::Wait { .. }) {
            fx.push(Effect::Log(What::Renewed {
                lock: self.slot_of(&term.lease().key),
                token: term.lease().fencing_token,
                requested: Some(self.clock.true_us(call.sent_at)),
                deadline: Some(self.clock.true_us(term.context().deadline())),
            }));
        }
        self.term_step(step, now, t, fx);
    }

    /// The term ended (`lost`: revoked; else a ranked leader stepped down for a better
    /// rank; a resignation is `resign_term`): the section is over, with its fenced end
    /// write; the term is released.
    pub(super) fn end_term(
        &mut self,
        term: &LeaseTracker,
        lost: bool,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Leading(leading) = &mut self.state else {
            return;
        };
        leading.ended = true;
        self.end_action(term, lost, fx);
        let call = Call::Release {
            owner: term.lease().owner,
            slot: self.slot_of(&term.lease().key),
        };
        self.send(Purpose::TermRelease, call, now, t, fx);
    }

    pub(super) fn term_released(&mut self, answer: Answer, t: u64, fx: &mut Vec<Effect>) {
        let State::Leading(leading) = &self.state else {
            return;
        };
        if answer == Answer::Released {
            fx.push(Effect::Log(What::Released {
                lock: self.slot_of(&leading.term.lease().key),
                token: leading.term.lease().fencing_token,
            }));
        }
        let now = self.clock.instant(t);
        let owner = leading.term.lease().owner;
        self.after_term(owner, now, t, fx);
    }

    pub(super) fn term_release_failed(
        &mut self,
        error: Error,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Leading(leading) = &self.state else {
            return;
        };
        let term = Arc::clone(&leading.term);
        let lease_time = term.lease_time();
        if let Some(orphan) =
            Orphan::after_release(term.lease(), lease_time, Duration::ZERO, &Err(error), now)
        {
            self.adopt(orphan, Some(term.lease().owner), now, t, fx);
        }
        self.after_term(term.lease().owner, now, t, fx);
    }

    /// After a term: release what a late attempt of its token may hold, and the next
    /// round at once.
    fn after_term(&mut self, owner: OwnerToken, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        if let Some(orphan) = self.campaign().and_then(CampaignRun::term_ended) {
            self.adopt(orphan, Some(owner), now, t, fx);
        }
        self.next_round(now, fx);
    }

    fn next_round(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        self.state = State::Standby;
        self.wait(now, true, fx);
    }
}
