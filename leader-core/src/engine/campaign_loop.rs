//! The campaign loop as a state machine: what a standby and a leader do next.
//!
//! Every campaign (single, group, ranked) runs the same loop: stand by until elected,
//! lead until the term ends, again until stopped. The decisions of that loop live here,
//! free of I/O: [`CampaignRun::next_round`] and the methods after it say what to do next
//! (survey, attempt, stand by, lead, stop), and [`TermLoop`] says what a leader does next
//! (wait, renew, release); the blocking and async shells do it and feed the answer back.
//! They differ only in how they wait (a thread and an event listener, or a future and a
//! select).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::campaign::DeploymentMode;
use crate::engine::campaign::{AfterAttempt, CampaignRun};
use crate::engine::candidacy::{Candidacy, Standing, TermCheck, Withdrawal};
use crate::engine::lease_tracker::LeaseTracker;
use crate::engine::orphan::Orphan;
use crate::error::Error;
use crate::leadership::event::RevokeReason;
use crate::spi::outcome::{ExtendOutcome, SlotOutcome};

/// What a campaign's shell does next, while it is not leading.
#[derive(Debug)]
pub enum CampaignStep<'a> {
    /// A ranked campaign, before it attempts: renew the membership record and list the
    /// other candidates (a survey that lists), then feed the standing to
    /// [`CampaignRun::after_standby_survey`].
    Survey(&'a Candidacy),
    /// Send the standby's attempt, [`CampaignRun::request`], and feed the answer (with
    /// when it was sent) to [`CampaignRun::after_standby_attempt`].
    Attempt,
    /// Release `orphan` in the background if there is one, then wait for a release of the
    /// lock, a stop request, or `wait`, whichever comes first; then begin the next round.
    StandBy {
        /// What a late answer took, to release.
        orphan: Option<Orphan>,
        /// The longest wait.
        wait: Duration,
    },
    /// A term began: release `strays` in the background if there are any, lead `term`
    /// (see [`TermLoop`]), then release [`CampaignRun::term_ended`]'s orphan if there is
    /// one and begin the next round.
    Lead {
        /// The term.
        term: Arc<LeaseTracker>,
        /// What failed attempts of the term's token may have taken on other slots.
        strays: Option<Orphan>,
    },
    /// A stop was requested: withdraw the candidacy and end the loop.
    Stop,
}

impl CampaignRun {
    /// Whether the campaign contends for its lock in the backend (one leader), or runs
    /// over a backend of its own that every instance wins (every instance leads,
    /// [`DeploymentMode::AllInstances`]); a mode added later contends unless it says
    /// otherwise, as one leader is the safe reading of an unknown mode.
    pub fn contends(&self) -> bool {
        !matches!(self.config.mode(), DeploymentMode::AllInstances)
    }

    /// The first step of a round of the standby's loop. Call it after registering for
    /// the lock's release notification and the stop listener, so that neither a release
    /// nor a stop between this look and the wait is missed.
    pub fn next_round(&self) -> CampaignStep<'_> {
        if self.state.stop_requested() {
            return CampaignStep::Stop;
        }
        match self.candidacy() {
            Some(candidacy) => CampaignStep::Survey(candidacy),
            None => CampaignStep::Attempt,
        }
    }

    /// After a standby's survey: attempt if no better candidate is live, or stand by.
    pub fn after_standby_survey(&self, standing: Standing) -> CampaignStep<'_> {
        if standing.may_lead {
            return CampaignStep::Attempt;
        }
        self.stand_by(None)
    }

    /// After a standby's attempt sent at `sent_at` and answered at `now` (see
    /// [`CampaignRun::after_attempt`]): lead the term it began, or stand by (releasing
    /// what a late answer took).
    pub fn after_standby_attempt(
        &self,
        answer: Result<SlotOutcome, Error>,
        sent_at: Instant,
        now: Instant,
    ) -> CampaignStep<'_> {
        match self.after_attempt(answer, sent_at, now) {
            AfterAttempt::Elected(term) => CampaignStep::Lead {
                term,
                strays: self.stray_attempts(),
            },
            // A late answer starts no term: its lease is released, and the standby waits.
            AfterAttempt::Late(orphan) => self.stand_by(Some(orphan)),
            AfterAttempt::Wait => self.stand_by(None),
        }
    }

    /// What a stopping campaign releases of its candidacy (see [`Candidacy::withdraw`]):
    /// `None` for an unranked campaign, and for one that abandons, which leaves its
    /// membership record to run out as a crash would (that is what abandoning is for:
    /// failover drills).
    pub fn withdrawal(&self) -> Option<Withdrawal> {
        if self.state.abandon_requested() {
            return None;
        }
        self.candidacy().map(|candidacy| candidacy.withdraw())
    }

    fn stand_by(&self, orphan: Option<Orphan>) -> CampaignStep<'_> {
        CampaignStep::StandBy {
            orphan,
            wait: self.standby_wait(),
        }
    }
}

/// What became of a call raced against a deadline (a leader's renewal against its
/// term's).
#[derive(Debug)]
pub enum Raced<T> {
    /// The call returned in time.
    Answered(T),
    /// The deadline passed first. For a renewal the lease is lost at that moment,
    /// whatever the driver's own timeout: the fencing guarantee counts from the deadline.
    DeadlinePassed,
    /// The caller was asked to stop while waiting.
    Stopped,
}

/// What a leader's shell does next.
#[derive(Debug)]
pub enum TermStep {
    /// Start the ranked leader's survey beside the renewals if `start_survey` and none is
    /// on its way, then wait until `until` (the next renewal), a stop request, or the
    /// survey's answer, and feed what it found to [`TermLoop::after_wait`].
    Wait {
        /// When the next renewal is due.
        until: Instant,
        /// Whether a survey may be started now (a ranked leader's, one at a time).
        start_survey: bool,
    },
    /// Renew `term` (its lease, for the campaign's lease time) racing the term's
    /// deadline, and feed the answer to [`TermLoop::after_renewal`].
    Renew {
        /// The term to renew.
        term: Arc<LeaseTracker>,
        /// When the renewal is sent.
        sent_at: Instant,
    },
    /// The term ended: drop a survey on its way, withdraw the candidacy first if
    /// `withdraw` (a resignation: before the lock, so the standby the release wakes no
    /// longer sees the record), release `term` (best effort), and stop leading.
    End {
        /// The ended term, to release.
        term: Arc<LeaseTracker>,
        /// Whether to withdraw the candidacy before the release.
        withdraw: bool,
    },
    /// The term is over and there is nothing to release (abandoned, or already revoked).
    Over,
}

/// A leader's loop over one term: renew every heartbeat until the term ends (failure,
/// deadline, resignation, or a higher rank). Each renewal races the renew deadline:
/// unanswered by then, the term ends at that moment. A ranked leader's survey runs beside
/// the renewals, one at a time, and its verdict applies when it arrives (see
/// [`TermCheck`]): it never holds them up.
#[derive(Debug)]
pub struct TermLoop<'a> {
    campaign: &'a CampaignRun,
    next_renewal: Instant,
}

impl<'a> TermLoop<'a> {
    /// The loop of a term that began at `now`, and its first step.
    pub fn new(campaign: &'a CampaignRun, now: Instant) -> (Self, TermStep) {
        let next_renewal = now + campaign.config.heartbeat();
        let first = TermStep::Wait {
            until: next_renewal,
            start_survey: false,
        };
        (
            TermLoop {
                campaign,
                next_renewal,
            },
            first,
        )
    }

    /// After a wait ended at `now`, with the survey's standing if it arrived.
    pub fn after_wait(&mut self, surveyed: Option<Standing>, now: Instant) -> TermStep {
        let state = &self.campaign.state;
        if state.stop_requested() {
            return match state.end_on_stop() {
                Some(term) => TermStep::End {
                    term,
                    withdraw: true,
                },
                None => TermStep::Over,
            };
        }
        if let Some(standing) = surveyed {
            return match state.after_survey(TermCheck::of(standing)) {
                Some(ended) => ended_term(ended),
                None => TermStep::Wait {
                    until: self.next_renewal,
                    start_survey: false,
                },
            };
        }
        let Some(term) = state.term_tracker() else {
            return TermStep::Over;
        };
        if let Some(ended) = state.check_deadline(&term, now) {
            return ended_term(ended);
        }
        self.next_renewal = now + self.campaign.config.heartbeat();
        TermStep::Renew { term, sent_at: now }
    }

    /// After the renewal of `term` sent at `sent_at`, answered (or raced out) at `now`.
    pub fn after_renewal(
        &mut self,
        term: &LeaseTracker,
        renewal: Raced<Result<ExtendOutcome, Error>>,
        sent_at: Instant,
        now: Instant,
    ) -> TermStep {
        let state = &self.campaign.state;
        let config = &self.campaign.config;
        let ended = match renewal {
            Raced::Answered(answer) => {
                state.after_renewal(term, answer, sent_at, config.renew_deadline(), now)
            }
            Raced::DeadlinePassed => state.revoke(RevokeReason::RenewDeadlinePassed),
            // Resign at the next look; the renewal's late answer changes nothing.
            Raced::Stopped => None,
        };
        match ended {
            Some(ended) => ended_term(ended),
            None => TermStep::Wait {
                until: self.next_renewal,
                start_survey: !state.stop_requested(),
            },
        }
    }
}

fn ended_term(term: Arc<LeaseTracker>) -> TermStep {
    TermStep::End {
        term,
        withdraw: false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::config::campaign::CampaignConfig;
    use crate::config::options::LeaderElectionOptions;
    use crate::engine::settings::ElectorSettings;
    use crate::name::LockName;
    use crate::spi::lease::Lease;
    use crate::spi::state::LeaderLease;

    fn campaign(config: CampaignConfig) -> CampaignRun {
        let settings = ElectorSettings::new(LeaderElectionOptions::default()).unwrap();
        CampaignRun::new(&settings, "job", config, Vec::new(), "memory").unwrap()
    }

    fn config() -> CampaignConfig {
        CampaignConfig::default()
            .with_lease_time(Duration::from_secs(9))
            .with_heartbeat(Duration::from_secs(1))
            .with_renew_deadline(Duration::from_secs(6))
            .with_poll_interval(Duration::from_secs(3))
    }

    fn held() -> Result<SlotOutcome, Error> {
        let now = SystemTime::now();
        Ok(SlotOutcome::Held(Some(LeaderLease::new(
            "other", now, now, 1,
        ))))
    }

    fn acquired(run: &CampaignRun) -> Result<SlotOutcome, Error> {
        let owner = run.request().request.owner;
        let now = SystemTime::now();
        let lease = Lease::new(LockName::new("job").unwrap(), owner, "me", 1, now, now);
        Ok(SlotOutcome::Acquired { slot: 0, lease })
    }

    /// Elects `run` and hands back its term.
    fn elect(run: &CampaignRun) -> Arc<LeaseTracker> {
        match run.after_standby_attempt(acquired(run), Instant::now(), Instant::now()) {
            CampaignStep::Lead { term, strays } => {
                assert!(strays.is_none());
                term
            }
            other => panic!("not elected: {other:?}"),
        }
    }

    #[test]
    fn a_round_attempts_surveys_first_when_ranked_and_stops_once_asked() {
        let plain = campaign(config());
        assert!(matches!(plain.next_round(), CampaignStep::Attempt));
        let ranked = campaign(config().with_rank(2));
        assert!(matches!(ranked.next_round(), CampaignStep::Survey(c) if c.rank() == 2));
        ranked.state.request_stop();
        assert!(matches!(ranked.next_round(), CampaignStep::Stop));
    }

    #[test]
    fn a_standby_waits_a_poll_and_a_ranked_one_no_longer_than_a_heartbeat() {
        let plain = campaign(config());
        let step = plain.after_standby_attempt(held(), Instant::now(), Instant::now());
        assert!(
            matches!(step, CampaignStep::StandBy { orphan: None, wait } if wait == Duration::from_secs(3)),
            "{step:?}"
        );
        let ranked = campaign(config().with_rank(1));
        let outranked = Standing {
            may_lead: false,
            preempted_by: None,
        };
        let step = ranked.after_standby_survey(outranked);
        assert!(
            matches!(step, CampaignStep::StandBy { orphan: None, wait } if wait == Duration::from_secs(1)),
            "{step:?}"
        );
        let free = Standing {
            may_lead: true,
            preempted_by: None,
        };
        assert!(matches!(
            ranked.after_standby_survey(free),
            CampaignStep::Attempt
        ));
    }

    #[test]
    fn a_late_answer_stands_by_with_its_lease_to_release() {
        let run = campaign(config());
        let answer = acquired(&run);
        let long_ago = Instant::now().checked_sub(Duration::from_secs(7)).unwrap();
        let step = run.after_standby_attempt(answer, long_ago, Instant::now());
        let CampaignStep::StandBy {
            orphan: Some(orphan),
            ..
        } = step
        else {
            panic!("a late answer must start no term: {step:?}");
        };
        assert_eq!(orphan.leases()[0].key.as_str(), "job");
        assert!(!run.state.is_leader());
    }

    #[test]
    fn only_a_ranked_campaign_that_does_not_abandon_withdraws() {
        let now = Instant::now();
        assert!(campaign(config()).withdrawal().is_none(), "unranked");
        let ranked = campaign(config().with_rank(1));
        let heartbeat = ranked.candidacy().unwrap().begin_heartbeat(now);
        assert!(heartbeat.is_some(), "a first heartbeat is due");
        let withdrawal = ranked.withdrawal().expect("a ranked campaign withdraws");
        assert!(withdrawal.record.is_some() || withdrawal.late.is_some());
        let abandoning = campaign(config().with_rank(1));
        let _ = abandoning.candidacy().unwrap().begin_heartbeat(now);
        abandoning.state.request_abandon();
        assert!(
            abandoning.withdrawal().is_none(),
            "abandoning leaves the record"
        );
    }

    #[test]
    fn a_leader_renews_every_heartbeat_and_surveys_after_each_renewal() {
        let run = campaign(config());
        let term = elect(&run);
        let start = Instant::now();
        let (mut term_loop, first) = TermLoop::new(&run, start);
        assert!(matches!(
            first,
            TermStep::Wait { until, start_survey: false } if until == start + Duration::from_secs(1)
        ));
        let now = start + Duration::from_secs(1);
        let TermStep::Renew {
            term: renewed,
            sent_at,
        } = term_loop.after_wait(None, now)
        else {
            panic!("a due renewal is sent");
        };
        assert!(Arc::ptr_eq(&renewed, &term));
        assert_eq!(sent_at, now);
        let extended = Ok(ExtendOutcome::Extended {
            expires_at: SystemTime::now(),
        });
        let next = term_loop.after_renewal(
            &term,
            Raced::Answered(extended),
            Instant::now(),
            Instant::now(),
        );
        assert!(
            matches!(next, TermStep::Wait { until, start_survey: true } if until == now + Duration::from_secs(1)),
            "{next:?}"
        );
        let verdict = Standing {
            may_lead: true,
            preempted_by: None,
        };
        assert!(matches!(
            term_loop.after_wait(Some(verdict), now),
            TermStep::Wait {
                start_survey: false,
                ..
            }
        ));
        assert!(run.state.is_leader());
    }

    #[test]
    fn a_term_ends_on_a_missed_deadline_a_higher_rank_or_a_stop() {
        let run = campaign(config());
        let term = elect(&run);
        let (mut term_loop, _) = TermLoop::new(&run, Instant::now());
        let ended =
            term_loop.after_renewal(&term, Raced::DeadlinePassed, Instant::now(), Instant::now());
        assert!(matches!(
            ended,
            TermStep::End {
                withdraw: false,
                ..
            }
        ));
        assert!(!run.state.is_leader());

        let ranked = campaign(config().with_rank(1).with_preemption(true));
        elect(&ranked);
        let (mut term_loop, _) = TermLoop::new(&ranked, Instant::now());
        let outranked = Standing {
            may_lead: false,
            preempted_by: Some(2),
        };
        let ended = term_loop.after_wait(Some(outranked), Instant::now());
        assert!(matches!(
            ended,
            TermStep::End {
                withdraw: false,
                ..
            }
        ));

        let resigning = campaign(config());
        let term = elect(&resigning);
        let (mut term_loop, _) = TermLoop::new(&resigning, Instant::now());
        resigning.state.request_stop();
        let stopped =
            term_loop.after_renewal(&term, Raced::Stopped, Instant::now(), Instant::now());
        assert!(matches!(
            stopped,
            TermStep::Wait {
                start_survey: false,
                ..
            }
        ));
        let resigned = term_loop.after_wait(None, Instant::now());
        assert!(matches!(resigned, TermStep::End { withdraw: true, .. }));

        let abandoning = campaign(config());
        elect(&abandoning);
        let (mut term_loop, _) = TermLoop::new(&abandoning, Instant::now());
        abandoning.state.request_abandon();
        abandoning.state.request_stop();
        assert!(matches!(
            term_loop.after_wait(None, Instant::now()),
            TermStep::Over
        ));
    }

    #[test]
    fn a_term_ends_at_its_deadline_by_the_given_now_not_the_machines_clock() {
        let run = campaign(config());
        let renew_deadline = config().renew_deadline();
        // Elected by an attempt sent an hour from now as the machine's clock goes.
        let sent_at = Instant::now() + Duration::from_secs(3600);
        let CampaignStep::Lead { term, .. } =
            run.after_standby_attempt(acquired(&run), sent_at, sent_at)
        else {
            panic!("elected");
        };
        let deadline = crate::engine::late::lease_deadline(sent_at, renew_deadline).unwrap();
        let (mut term_loop, _) = TermLoop::new(&run, sent_at);
        // Before the deadline, the due renewal is sent.
        let before = deadline - Duration::from_millis(1);
        let TermStep::Renew {
            sent_at: renewal, ..
        } = term_loop.after_wait(None, before)
        else {
            panic!("renewed before its deadline");
        };
        // Answered at the deadline: too late, the term ends.
        let extended = Ok(ExtendOutcome::Extended {
            expires_at: SystemTime::now(),
        });
        let ended = term_loop.after_renewal(&term, Raced::Answered(extended), renewal, deadline);
        assert!(
            matches!(
                ended,
                TermStep::End {
                    withdraw: false,
                    ..
                }
            ),
            "{ended:?}"
        );
        assert!(!run.state.is_leader());

        // A loop paused past the deadline ends the term before renewing.
        let run = campaign(config());
        let CampaignStep::Lead { .. } = run.after_standby_attempt(acquired(&run), sent_at, sent_at)
        else {
            panic!("elected");
        };
        let (mut term_loop, _) = TermLoop::new(&run, sent_at);
        let paused = term_loop.after_wait(None, deadline + Duration::from_millis(1));
        assert!(
            matches!(
                paused,
                TermStep::End {
                    withdraw: false,
                    ..
                }
            ),
            "{paused:?}"
        );
    }
}
