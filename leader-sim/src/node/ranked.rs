//! A ranked campaign (`Candidacy`): what `leader-blocking`'s `survey.rs` and the `Stop`
//! and `End { withdraw }` steps of its campaign thread do, call by call. A standby's round
//! begins with a survey on the campaign thread (heartbeat the membership record when it
//! is due, list the candidates), then attempts or stands by as the engine says; a
//! leader's survey runs beside its renewals (a thread of its own in the shell: here its
//! calls are in flight while the term loop goes on), one at a time, and its verdict
//! applies when the leader next waits. A resignation asks the campaign to stop: a leader
//! ends its term, withdraws (releases its record, and again in the background for a
//! heartbeat that may still land) and releases the lock; a standby withdraws; the
//! campaign's unsettled attempts are released, and the node campaigns again, afresh,
//! after a rest.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use leader_core::__private::{
    CampaignRun, CampaignStep, Candidacy, ElectorSettings, LeaseTracker, Raced, Standing, Survey,
    TermStep, Withdrawal,
};
use leader_core::{
    AcquireOutcome, Error, LeaderLease, LeaderState, Lease, ListCursor, ListPage, LockName,
    ReleaseOutcome,
};

use super::{BACKEND, Effect, InFlight, Node, Purpose, Setup, State, Timer, campaign_config};
use crate::store::{Answer, Call};

/// A node's ranked campaign state beside its `State`.
#[derive(Debug, Default)]
pub(crate) struct Ranked<'a> {
    /// Surveys on their way: a standby's (at most one, on the campaign thread) and
    /// leaders' (one the term waits for, and any the ended terms left running).
    surveys: Vec<SurveyRun<'a>>,
    /// The leader's wait timer's generation: a term's end makes its timer stale.
    wait_generation: u64,
    /// A leader's wait timer of this generation is set.
    waiting: bool,
    /// A withdrawal whose record release is on its way, and what follows it.
    withdrawal: Option<(Withdrawal, AfterWithdrawal)>,
    /// When this campaign's first survey began (true time): since then it has been a
    /// candidate. `None` while resting or down.
    since: Option<u64>,
}

/// What a withdrawal is followed by.
#[derive(Debug)]
enum AfterWithdrawal {
    /// A resigning leader's term release.
    Term(Arc<LeaseTracker>),
    /// The campaign's end.
    Stop,
}

/// One survey: heartbeat, then list (when it lists), then its standing.
#[derive(Debug)]
struct SurveyRun<'a> {
    id: u64,
    candidacy: &'a Candidacy,
    /// Created at the first listing request.
    survey: Option<Survey<'a>>,
    list: bool,
    /// A leader's, beside its renewals (else a standby's round).
    leader: bool,
    /// A leader's term still waits for it (not once the term ended: its answer is moot).
    wanted: bool,
    /// A leader's survey's verdict, until the leader next waits.
    standing: Option<Standing>,
}

impl Ranked<'_> {
    /// A term ended: its wait timer is stale, and the survey it waited for is moot.
    pub(super) fn term_over(&mut self) {
        self.wait_generation += 1;
        self.waiting = false;
        self.surveys.iter_mut().for_each(|s| s.wanted = !s.leader);
        self.surveys.retain(|s| s.wanted || s.standing.is_none());
    }
}

impl Setup {
    /// Makes every node's campaign ranked, with `ranks[node]` = (rank, preempts), and
    /// gives each node the names of every membership record.
    pub(crate) fn rank_all(setups: &mut [Setup], ranks: &[(u32, bool)], lease: Duration) {
        for (n, setup) in setups.iter_mut().enumerate() {
            let (rank, preempt) = ranks.get(n).copied().unwrap_or((0, false));
            let config = campaign_config(lease)
                .with_rank(rank)
                .with_preemption(preempt);
            let lives = setup.campaigns.len();
            setup.campaigns = ElectorSettings::new(setup.options.clone())
                .ok()
                .map(|settings| {
                    (0..lives)
                        .filter_map(|_| {
                            CampaignRun::new(&settings, "job", config, Vec::new(), BACKEND).ok()
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
        let records: Vec<LockName> = setups
            .iter()
            .map(|setup| {
                setup
                    .campaigns
                    .first()
                    .and_then(|run| run.candidacy())
                    .map_or_else(|| setup.key.clone(), |c| c.record().clone())
            })
            .collect();
        for setup in setups {
            setup.records = records.clone();
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn at(us: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(us)
}

impl<'a> Node<'a> {
    /// This node's rank, whether it preempts, and since when (true time) its campaign
    /// has been a candidate; `None` when it is not campaigning (unranked, resting after
    /// a resignation, down, or stopping).
    pub(crate) fn candidate(&self) -> Option<(u64, u32, bool)> {
        let run = self.campaign()?;
        let candidacy = run.candidacy()?;
        if run.state.stop_requested() {
            return None;
        }
        let since = self.ranked.since?;
        Some((since, candidacy.rank(), candidacy.preempts()))
    }

    /// Whether a standby's round is on its way: its attempt, or its survey.
    pub(super) fn round_in_progress(&self) -> bool {
        self.calls.iter().any(|c| c.purpose == Purpose::Campaign)
            || self.ranked.surveys.iter().any(|s| !s.leader)
    }

    /// The store indices of the membership records a listing of `prefix` covers.
    fn record_slots(&self, prefix: &str) -> Vec<u32> {
        let first = self.setup.slot_keys.len();
        self.setup
            .records
            .iter()
            .enumerate()
            .filter(|(_, name)| name.as_str().starts_with(prefix))
            .filter_map(|(i, _)| u32::try_from(first + i).ok())
            .collect()
    }

    /// A standby's round begins with a survey that lists (the shell's `survey(.., true)`).
    pub(super) fn standby_survey(
        &mut self,
        candidacy: &'a Candidacy,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        self.begin_survey(candidacy, false, true, now, t, fx);
    }

    /// A survey: the membership record's heartbeat if it is due, then the listing.
    fn begin_survey(
        &mut self,
        candidacy: &'a Candidacy,
        leader: bool,
        list: bool,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        self.ranked.since.get_or_insert(t);
        self.next_id += 1;
        let id = self.next_id;
        self.ranked.surveys.push(SurveyRun {
            id,
            candidacy,
            survey: None,
            list,
            leader,
            wanted: true,
            standing: None,
        });
        let heartbeat = candidacy
            .begin_heartbeat(now)
            .map(|request| (request.owner, request.key.clone(), request.lease_time));
        match heartbeat {
            Some((owner, key, lease)) => {
                let call = Call::Acquire {
                    owner,
                    node: self.id,
                    lease_us: micros(lease),
                    slots: vec![self.slot_of(&key)],
                };
                self.send(Purpose::Heartbeat(id), call, now, t, fx);
            }
            None => self.survey_list(id, now, t, fx),
        }
    }

    /// The answer to a survey's heartbeat (an error: none within the timeout).
    pub(super) fn heartbeat_answered(
        &mut self,
        id: u64,
        call: InFlight,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(run) = self.ranked.surveys.iter().find(|s| s.id == id) else {
            return;
        };
        let candidacy = run.candidacy;
        let outcome = answer.map(|answer| match answer {
            Answer::Acquired(record) => AcquireOutcome::Acquired(Lease::new(
                self.key_of(record.slot),
                record.owner,
                format!("n{}", record.node),
                record.token,
                SystemTime::UNIX_EPOCH,
                at(record.expires),
            )),
            Answer::Held(record) => AcquireOutcome::Held(Some(LeaderLease::new(
                format!("n{}", record.node),
                SystemTime::UNIX_EPOCH,
                at(record.expires),
                record.token,
            ))),
            // Not answers to an acquire.
            _ => AcquireOutcome::Held(None),
        });
        candidacy.after_heartbeat(outcome, call.sent_at);
        self.survey_list(id, now, t, fx);
    }

    /// The survey's next listing request, or its end.
    fn survey_list(&mut self, id: u64, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(run) = self.ranked.surveys.iter_mut().find(|s| s.id == id) else {
            return;
        };
        let candidacy = run.candidacy;
        let request = if run.list {
            run.survey
                .get_or_insert_with(|| candidacy.survey())
                .next_request()
        } else {
            None
        };
        match request {
            Some(request) => {
                // The cursor is the last index the previous page covered.
                let after = request
                    .cursor
                    .and_then(|cursor| cursor.as_str().parse::<u32>().ok());
                let call = Call::List {
                    slots: self.record_slots(&request.prefix),
                    after,
                };
                self.send(Purpose::List(id), call, now, t, fx);
            }
            None => self.survey_done(id, now, t, fx),
        }
    }

    /// The answer to a survey's listing request: one page.
    pub(super) fn list_answered(
        &mut self,
        id: u64,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let page = answer.map(|answer| {
            let (records, next) = match answer {
                Answer::Listed { records, next } => (records, next),
                _ => (Vec::new(), None),
            };
            let locks = records
                .iter()
                .map(|r| {
                    let holder = LeaderLease::new(
                        format!("n{}", r.node),
                        SystemTime::UNIX_EPOCH,
                        at(r.expires),
                        r.token,
                    );
                    LeaderState::occupied(self.key_of(r.slot).as_str(), holder)
                })
                .collect();
            ListPage::new(locks, next.map(|slot| ListCursor::new(slot.to_string())))
        });
        let Some(run) = self.ranked.surveys.iter_mut().find(|s| s.id == id) else {
            return;
        };
        if let Some(survey) = run.survey.as_mut() {
            survey.read(page);
        }
        self.survey_list(id, now, t, fx);
    }

    /// A survey has its standing: a standby's round goes on; a leader's verdict waits for
    /// the leader's wait (at once if it is waiting).
    fn survey_done(&mut self, id: u64, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(i) = self.ranked.surveys.iter().position(|s| s.id == id) else {
            return;
        };
        let run = &mut self.ranked.surveys[i];
        let standing = match &run.survey {
            Some(survey) => survey.standing(),
            None => run.candidacy.survey().standing(),
        };
        if !run.leader {
            self.ranked.surveys.swap_remove(i);
            let Some(campaign) = self.campaign() else {
                return;
            };
            if !matches!(self.state, State::Standby) {
                return;
            }
            match campaign.after_standby_survey(standing) {
                CampaignStep::Attempt => self.send_attempt(campaign, now, t, fx),
                step => {
                    let owner = campaign.request().request.owner;
                    self.after_step(step, t, owner, now, t, fx);
                }
            }
            return;
        }
        if !run.wanted {
            self.ranked.surveys.swap_remove(i);
            return;
        }
        run.standing = Some(standing);
        if self.ranked.waiting {
            self.ranked.waiting = false;
            self.surveyed(now, t, fx);
        }
    }

    /// A leader waits for its next renewal (`TermStep::Wait`): starts a survey beside it
    /// when asked and none is on its way; ends the wait at once on a stop request or a
    /// survey's verdict (the shell's `wait_for_renewal`), else sets its timer.
    pub(super) fn leader_wait(
        &mut self,
        until: Instant,
        start_survey: bool,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(run) = self.campaign() else { return };
        let pending = self.ranked.surveys.iter().any(|s| s.leader && s.wanted);
        if start_survey
            && !pending
            && let Some(candidacy) = run.candidacy()
        {
            self.begin_survey(candidacy, true, candidacy.preempts(), now, t, fx);
        }
        if run.state.stop_requested() {
            self.ranked.waiting = false;
            self.after_leader_wait(None, now, t, fx);
            return;
        }
        if self
            .ranked
            .surveys
            .iter()
            .any(|s| s.leader && s.wanted && s.standing.is_some())
        {
            self.ranked.waiting = false;
            self.surveyed(now, t, fx);
            return;
        }
        if !self.ranked.waiting {
            self.ranked.waiting = true;
            fx.push(Effect::Wake {
                at: until,
                timer: Timer::LeaderWait(self.ranked.wait_generation),
            });
        }
    }

    /// Hands the leader's survey's verdict to its term loop.
    fn surveyed(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(i) = self
            .ranked
            .surveys
            .iter()
            .position(|s| s.leader && s.wanted && s.standing.is_some())
        else {
            return;
        };
        let standing = self.ranked.surveys.swap_remove(i).standing;
        self.after_leader_wait(standing, now, t, fx);
    }

    fn after_leader_wait(
        &mut self,
        surveyed: Option<Standing>,
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
        let step = leading.term_loop.after_wait(surveyed, now);
        match step {
            // Preempted: the leader steps down, its lease still good (not a loss).
            TermStep::End {
                term,
                withdraw: false,
            } if surveyed.is_some() => {
                self.ranked.term_over();
                self.end_term(&term, false, now, t, fx);
            }
            step => self.term_step(step, now, t, fx),
        }
    }

    /// A ranked leader's wait timer fired.
    pub(super) fn leader_waited(
        &mut self,
        generation: u64,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        if generation != self.ranked.wait_generation || !self.ranked.waiting {
            return;
        }
        self.ranked.waiting = false;
        if self.calls.iter().any(|c| c.purpose == Purpose::TermRenew) {
            return;
        }
        self.after_leader_wait(None, now, t, fx);
    }

    /// The campaign is asked to stop (`LeadershipHandle::resign`): a waiting standby's
    /// round goes at once (and stops); a leader's wait or renewal ends at once (the
    /// renewal as `Raced::Stopped`) and its term ends with a withdrawal. A round or a
    /// release on its way goes on, and the stop is seen after it.
    pub(crate) fn resign(&mut self, t: u64, fx: &mut Vec<Effect>) {
        let now = self.clock.instant(t);
        let Some(run) = self.campaign() else { return };
        if run.candidacy().is_none() || run.state.stop_requested() {
            return;
        }
        match &self.state {
            State::Standby => {
                run.state.request_stop();
                if !self.round_in_progress() {
                    self.waiting += 1;
                    self.round(now, t, fx);
                }
            }
            State::Leading(leading) if !leading.ended => {
                run.state.request_stop();
                let renewal = self
                    .calls
                    .iter()
                    .find(|c| c.purpose == Purpose::TermRenew)
                    .map(|c| c.id);
                if let Some(id) = renewal {
                    // The renewal's late answer changes nothing.
                    let Some(call) = self.take_call(id) else {
                        return;
                    };
                    let State::Leading(leading) = &mut self.state else {
                        return;
                    };
                    let term = Arc::clone(&leading.term);
                    let step =
                        leading
                            .term_loop
                            .after_renewal(&term, Raced::Stopped, call.sent_at, now);
                    self.term_step(step, now, t, fx);
                } else if self.ranked.waiting {
                    self.ranked.waiting = false;
                    self.after_leader_wait(None, now, t, fx);
                }
            }
            // Its term's release on its way: the next round stops.
            State::Leading(_) => run.state.request_stop(),
            // Resting after a resignation, or stopping: nothing campaigns.
            _ => {}
        }
    }

    /// A resigning leader's term ends (`TermStep::End { withdraw: true }`): its section
    /// is over, its candidacy withdrawn, then the lock released.
    pub(super) fn resign_term(
        &mut self,
        term: Arc<LeaseTracker>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Leading(leading) = &mut self.state else {
            return;
        };
        leading.ended = true;
        self.end_action(&term, false, fx);
        let withdrawal = self.campaign().and_then(CampaignRun::withdrawal);
        self.withdraw(withdrawal, AfterWithdrawal::Term(term), now, t, fx);
    }

    /// The round found the campaign stopped (`CampaignStep::Stop`): withdraw, then end.
    pub(super) fn stop_campaign(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        // No more rounds: a notice or a timer must not begin one.
        self.state = State::Idle;
        let withdrawal = self.campaign().and_then(CampaignRun::withdrawal);
        self.withdraw(withdrawal, AfterWithdrawal::Stop, now, t, fx);
    }

    /// The shell's `withdraw`: the record released first (when a heartbeat may have
    /// written it), then what may still land released in the background.
    fn withdraw(
        &mut self,
        withdrawal: Option<Withdrawal>,
        then: AfterWithdrawal,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some(withdrawal) = withdrawal else {
            self.after_withdrawal(None, then, now, t, fx);
            return;
        };
        let Some(record) = withdrawal.record.clone() else {
            self.after_withdrawal(Some(withdrawal), then, now, t, fx);
            return;
        };
        let call = Call::Release {
            owner: record.owner,
            slot: self.slot_of(&record.key),
        };
        self.ranked.withdrawal = Some((withdrawal, then));
        self.send(Purpose::RecordRelease, call, now, t, fx);
    }

    /// The record's release answered (an error: none within the timeout).
    pub(super) fn record_released(
        &mut self,
        answer: Result<ReleaseOutcome, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let Some((mut withdrawal, then)) = self.ranked.withdrawal.take() else {
            return;
        };
        withdrawal.after_record_release(&answer, now);
        self.after_withdrawal(Some(withdrawal), then, now, t, fx);
    }

    fn after_withdrawal(
        &mut self,
        withdrawal: Option<Withdrawal>,
        then: AfterWithdrawal,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        if let Some(late) = withdrawal.and_then(|w| w.late) {
            let owner = late.leases().first().map(|lease| lease.owner);
            self.adopt(late, owner, now, t, fx);
        }
        match then {
            AfterWithdrawal::Term(term) => {
                let call = Call::Release {
                    owner: term.lease().owner,
                    slot: self.slot_of(&term.lease().key),
                };
                self.send(Purpose::TermRelease, call, now, t, fx);
            }
            AfterWithdrawal::Stop => self.campaign_over(now, t, fx),
        }
    }

    /// The campaign's thread ends: what failed attempts may have left is released in the
    /// background; the node rests, then campaigns again with its next run.
    fn campaign_over(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        if let Some(run) = self.campaign()
            && let Some(orphan) = run.unsettled_attempts()
        {
            let owner = run.request().request.owner;
            self.adopt(orphan, Some(owner), now, t, fx);
        }
        self.ranked.since = None;
        self.state = State::Idle;
        self.life += 1;
        if self.campaign().is_some() {
            let rest = self.rest();
            fx.push(Effect::Wake {
                at: now + rest,
                timer: Timer::Rejoin,
            });
        }
    }

    /// After a resignation's rest: a new campaign's first round.
    pub(super) fn rejoin(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        if !matches!(self.state, State::Idle) || self.campaign().is_none() {
            return;
        }
        self.state = State::Standby;
        self.waiting += 1;
        self.round(now, t, fx);
    }
}
