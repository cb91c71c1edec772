//! [`CampaignRun`]: what one campaign loop works with, and how it handles each attempt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::campaign::CampaignConfig;
use crate::engine::candidacy::Candidacy;
use crate::engine::defects::{Defect, planted};
use crate::engine::keepalive::Keepalive;
use crate::engine::late::{answered_late, is_late};
use crate::engine::leadership_state::LeadershipState;
use crate::engine::lease_tracker::LeaseTracker;
use crate::engine::orphan::Orphan;
use crate::engine::settings::ElectorSettings;
use crate::error::{Error, OptionsError};
use crate::leadership::event::EventCallback;
use crate::name::LockName;
use crate::spi::group::{GroupKeys, GroupSlots, random_slot};
use crate::spi::lease::OwnerToken;
use crate::spi::outcome::SlotOutcome;
use crate::spi::request::{AcquireRequest, SlotRequest};

/// What one campaign loop works with; built once by the elector, used by its loop.
#[derive(Debug)]
pub struct CampaignRun {
    /// The shared state the loop drives and the handle reads.
    pub state: Arc<LeadershipState>,
    /// The full lock key (of a group: its name, slot 0, where release wake-ups arrive).
    pub key: LockName,
    /// The name the caller used (without a tenant prefix).
    pub name: String,
    /// The campaign's settings.
    pub config: CampaignConfig,
    keys: GroupKeys,
    candidacy: Option<Arc<Candidacy>>,
    node_id: String,
    use_db_time: bool,
    backend: &'static str,
    attempts: Mutex<StandbyAttempts>,
}

/// The owner token a standby's attempts use, the slot they try first, and whether one of
/// them may have taken a slot without the campaign learning of it.
#[derive(Debug)]
struct StandbyAttempts {
    owner: OwnerToken,
    /// Every attempt of a term tries the group's slots from this one on.
    first: usize,
    /// When the last attempt that failed was sent: it may have taken any slot (or still
    /// take it, when it lands late), until a later attempt settles it.
    unsettled: Option<Instant>,
    /// After a term began: the slots an unsettled attempt may have taken besides the
    /// term's, with when it was sent, to release in the background.
    strays: Option<(u32, Instant)>,
    /// The term's own slot, while an unsettled attempt of its token may still land on it
    /// after the term released it (a request stuck in a paused server's socket).
    late: Option<(u32, Instant)>,
}

impl StandbyAttempts {
    fn fresh(slots: usize) -> Self {
        StandbyAttempts {
            owner: OwnerToken::random(),
            first: random_slot(slots),
            unsettled: None,
            strays: None,
            late: None,
        }
    }
}

/// What a standby does after an attempt.
#[derive(Debug)]
pub enum AfterAttempt {
    /// A term began: lead it.
    Elected(Arc<LeaseTracker>),
    /// Nothing to take (every slot held, or the attempt failed): wait for a release or
    /// the next poll.
    Wait,
    /// The attempt took a slot but was answered after the term's deadline (a paused
    /// process, a stalled server): no term begins. Release the orphan in the background
    /// (the late lease, and whatever unsettled attempts of its token may hold), then
    /// wait as for [`Wait`](Self::Wait); the next attempt has a new token.
    Late(Orphan),
}

impl CampaignRun {
    /// Validates `config` and `name` and sets up the state, with `callbacks` registered;
    /// `backend` names the backend in spans and metrics.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] or [`Error::InvalidName`].
    pub fn new(
        settings: &ElectorSettings,
        name: &str,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
        backend: &'static str,
    ) -> Result<Self, Error> {
        CampaignRun::for_group(settings, name, GroupSlots::ONE, config, callbacks, backend)
    }

    /// Like [`new`](Self::new), for a leader group of `slots`: the campaign holds one slot
    /// at a time.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] or [`Error::InvalidName`].
    pub fn for_group(
        settings: &ElectorSettings,
        name: &str,
        slots: GroupSlots,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
        backend: &'static str,
    ) -> Result<Self, Error> {
        config.validate()?;
        if config.rank.is_some() && slots != GroupSlots::ONE {
            return Err(OptionsError::RankedGroup { slots: slots.get() }.into());
        }
        let node_id = settings.options().node_id().to_owned();
        let use_db_time = settings.options().use_db_time();
        let key = settings.lock_key(name)?;
        let keys = slots.keys(&key)?;
        let candidacy = Candidacy::new(&key, &config, &node_id, use_db_time)?.map(Arc::new);
        Ok(CampaignRun {
            state: Arc::new(LeadershipState::new(node_id.clone(), callbacks)),
            attempts: Mutex::new(StandbyAttempts::fresh(keys.len())),
            key,
            name: name.to_owned(),
            config,
            keys,
            candidacy,
            node_id,
            use_db_time,
            backend,
        })
    }

    /// A standby's acquire request: any slot of the group (the lock itself for a single
    /// lock), with the owner token of the would-be term.
    ///
    /// The token and the first slot stay the same across attempts until a term ends: an
    /// attempt whose answer was lost may have taken a slot (or may still take it, when
    /// the request lands late), and the next attempt, with that same token, then
    /// re-acquires that lease as its own instead of waiting for it to run out (or, should
    /// it take another slot first, the lost one is released: see
    /// [`stray_attempts`](Self::stray_attempts)).
    pub fn request(&self) -> SlotRequest<'_> {
        let attempts = self.attempts.lock();
        let request = AcquireRequest::new(
            self.keys.group(),
            attempts.owner,
            &self.node_id,
            self.config.lease_time,
        )
        .with_db_time(self.use_db_time);
        SlotRequest::group(request, &self.keys, attempts.first)
    }

    /// Records a standby's attempt sent at `sent_at` and answered at `now` (both read by
    /// the caller) — an error leaves its token possibly
    /// holding any slot (see [`unsettled_attempts`](Self::unsettled_attempts)) — and hands
    /// the answer to [`LeadershipState::after_attempt`]: the term that began, if one did,
    /// or what to do next.
    ///
    /// A slot taken by an answer that came (at `now`) at or after the term's deadline
    /// (`sent_at` plus the renew deadline: the term would be over before it began) starts
    /// no term:
    /// [`AfterAttempt::Late`], counted in `leader_lease_lost_total` and logged.
    pub fn after_attempt(
        &self,
        answer: Result<SlotOutcome, Error>,
        sent_at: Instant,
        now: Instant,
    ) -> AfterAttempt {
        {
            let mut attempts = self.attempts.lock();
            if let Ok(SlotOutcome::Acquired { lease, .. }) = &answer
                && is_late(sent_at, self.config.renew_deadline(), now)
            {
                drop(answered_late(self.backend, &lease.key, lease.fencing_token));
                let old =
                    std::mem::replace(&mut *attempts, StandbyAttempts::fresh(self.keys.len()));
                let lease_time = self.config.lease_time;
                // Unsettled attempts of the old token may hold other slots: release them all.
                let orphan = match old.unsettled {
                    Some(since) => {
                        let slots = (0..self.keys.len()).map(|slot| self.keys.slot(slot).clone());
                        Orphan::of_keys(slots, old.owner, since, lease_time)
                    }
                    None => Orphan::new(lease.key.clone(), old.owner, sent_at, lease_time),
                };
                return AfterAttempt::Late(orphan);
            }
            match &answer {
                Err(_) => attempts.unsettled = Some(sent_at),
                // The term owns whatever an earlier attempt with this token took on its
                // slot; what one may have taken on another slot is a stray to release.
                Ok(SlotOutcome::Acquired { slot, .. }) => {
                    attempts.strays = attempts.unsettled.take().map(|since| (*slot, since));
                    attempts.late = attempts.strays;
                }
                Ok(SlotOutcome::Held(_)) => {}
            }
        }
        let term = self.state.after_attempt(
            answer,
            sent_at,
            &self.name,
            self.config.renew_deadline(),
            self.backend,
        );
        match term {
            Some(term) => AfterAttempt::Elected(term),
            None => AfterAttempt::Wait,
        }
    }

    /// A term ended (it was released, lost or abandoned): the next term gets a new token.
    /// Returns what an unsettled attempt of the old token may still take back, the term's
    /// own slot, to release in the background while that attempt could land. However long
    /// ago it was sent: a request held in a stalled store lands when the store goes on,
    /// and the [`Orphan`]'s own rule says how long its release goes on.
    pub fn term_ended(&self) -> Option<Orphan> {
        let mut attempts = self.attempts.lock();
        let old = std::mem::replace(&mut *attempts, StandbyAttempts::fresh(self.keys.len()));
        let (slot, since) = old.late?;
        let key = self.keys.slot(usize::try_from(slot).unwrap_or(0)).clone();
        Some(Orphan::after_term(
            key,
            old.owner,
            since,
            self.config.lease_time,
        ))
    }

    /// After a term began: what failed attempts of its token may have taken on other slots
    /// of the group, to release in the background (see [`Orphan`]).
    pub fn stray_attempts(&self) -> Option<Orphan> {
        let mut attempts = self.attempts.lock();
        let (term_slot, since) = attempts.strays.take()?;
        if planted(Defect::ForgetStraySlot) {
            return None;
        }
        let others = (0..self.keys.len())
            .filter(|slot| u32::try_from(*slot).ok() != Some(term_slot))
            .map(|slot| self.keys.slot(slot).clone())
            .collect::<Vec<_>>();
        (!others.is_empty())
            .then(|| Orphan::of_keys(others, attempts.owner, since, self.config.lease_time))
    }

    /// When the campaign stops: what failed attempts may have left behind, to release in
    /// the background (see [`Orphan`]).
    pub fn unsettled_attempts(&self) -> Option<Orphan> {
        let attempts = self.attempts.lock();
        let since = attempts.unsettled?;
        let slots = (0..self.keys.len()).map(|slot| self.keys.slot(slot).clone());
        Some(Orphan::of_keys(
            slots,
            attempts.owner,
            since,
            self.config.lease_time,
        ))
    }

    /// Whether renewals take the backend's clock.
    pub fn use_db_time(&self) -> bool {
        self.use_db_time
    }

    /// How a term is kept: renewed for the campaign's lease every heartbeat, on the clock
    /// the options ask for, released without a minimum lease.
    pub fn keepalive(&self) -> Keepalive {
        Keepalive {
            lease_time: self.config.lease_time,
            renew_every: Some(self.config.heartbeat),
            use_db_time: self.use_db_time,
            min_lease_time: Duration::ZERO,
        }
    }

    /// A ranked campaign's membership (see [`CampaignConfig::with_rank`]).
    pub fn candidacy(&self) -> Option<&Arc<Candidacy>> {
        self.candidacy.as_ref()
    }

    /// How long a standby waits between attempts: the poll interval, and no longer than a
    /// heartbeat for a ranked campaign, whose membership record must not run out.
    pub fn standby_wait(&self) -> Duration {
        match self.candidacy {
            Some(_) => self.config.poll_interval.min(self.config.heartbeat),
            None => self.config.poll_interval,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::options::LeaderElectionOptions;
    use crate::spi::lease::Lease;
    use crate::spi::state::LeaderLease;

    fn group_campaign(slots: u32, config: CampaignConfig) -> Result<CampaignRun, Error> {
        let settings = ElectorSettings::new(LeaderElectionOptions::default()).unwrap();
        let slots = GroupSlots::new(slots).unwrap();
        CampaignRun::for_group(&settings, "consumers", slots, config, Vec::new(), "memory")
    }

    fn held() -> Result<SlotOutcome, Error> {
        let now = std::time::SystemTime::now();
        Ok(SlotOutcome::Held(Some(LeaderLease::new(
            "other", now, now, 1,
        ))))
    }

    fn keys_of(orphan: &Orphan) -> Vec<&str> {
        orphan.leases().iter().map(|l| l.key.as_str()).collect()
    }

    #[test]
    fn an_attempt_lost_on_any_slot_is_released_when_a_term_begins_on_another() {
        let run = group_campaign(3, CampaignConfig::default()).unwrap();
        let (owner, first) = (
            run.request().request.owner,
            run.request().request.key.clone(),
        );
        assert!(run.unsettled_attempts().is_none());
        let lost = run.after_attempt(Err(Error::ShutDown), Instant::now(), Instant::now());
        assert!(matches!(lost, AfterAttempt::Wait));
        let again = run.request();
        assert_eq!(
            (again.request.owner, again.request.key),
            (owner, &first),
            "the next attempt has the same token and order"
        );
        assert!(matches!(
            run.after_attempt(held(), Instant::now(), Instant::now()),
            AfterAttempt::Wait
        ));
        let unsettled = run.unsettled_attempts().unwrap();
        assert_eq!(keys_of(&unsettled).len(), 3, "any slot, released at stop");

        let lease = Lease::new(
            LockName::new("consumers#1").unwrap(),
            owner,
            "me",
            7,
            std::time::SystemTime::now(),
            std::time::SystemTime::now(),
        );
        let elected = run.after_attempt(
            Ok(SlotOutcome::Acquired { slot: 1, lease }),
            Instant::now(),
            Instant::now(),
        );
        assert!(matches!(elected, AfterAttempt::Elected(_)));
        let strays = run.stray_attempts().unwrap();
        assert_eq!(
            keys_of(&strays),
            ["consumers", "consumers#2"],
            "every other slot"
        );
        assert!(run.stray_attempts().is_none(), "handed out once");
        assert!(run.unsettled_attempts().is_none());
        let late = run
            .term_ended()
            .expect("the lost attempt may still land on the term's slot");
        assert_eq!(keys_of(&late), ["consumers#1"]);
        assert_eq!(late.leases()[0].owner, owner);
        assert!(
            run.term_ended().is_none(),
            "a fresh term has nothing in flight"
        );
    }

    /// An attempt lost against a stalled store may land whenever the store goes on, also
    /// more than a lease after it was sent: the term's end still hands it to the orphan
    /// release, whose own rule says how long to go on (until the store answers, then a
    /// lease more).
    #[test]
    fn a_lost_attempt_sent_more_than_a_lease_ago_is_still_released_when_the_term_ends() {
        let lease_time = Duration::from_millis(30);
        let config = CampaignConfig::default()
            .with_lease_time(lease_time)
            .with_heartbeat(Duration::from_millis(10))
            .with_renew_deadline(Duration::from_millis(20))
            .with_poll_interval(Duration::from_millis(10));
        let run = group_campaign(2, config).unwrap();
        let owner = run.request().request.owner;
        assert!(matches!(
            run.after_attempt(Err(Error::ShutDown), Instant::now(), Instant::now()),
            AfterAttempt::Wait
        ));
        std::thread::sleep(lease_time + Duration::from_millis(10));
        let lease = Lease::new(
            LockName::new("consumers#1").unwrap(),
            owner,
            "me",
            7,
            std::time::SystemTime::now(),
            std::time::SystemTime::now(),
        );
        let elected = run.after_attempt(
            Ok(SlotOutcome::Acquired { slot: 1, lease }),
            Instant::now(),
            Instant::now(),
        );
        assert!(matches!(elected, AfterAttempt::Elected(_)), "{elected:?}");
        let late = run.term_ended().expect(
            "the lost attempt may still land on the term's slot, however long ago it was sent",
        );
        assert_eq!(keys_of(&late), ["consumers#1"]);
    }

    #[test]
    fn a_slot_answered_after_the_term_deadline_starts_no_term_and_is_released() {
        let run = group_campaign(2, CampaignConfig::default()).unwrap();
        let owner = run.request().request.owner;
        let lease = Lease::new(
            LockName::new("consumers#1").unwrap(),
            owner,
            "me",
            7,
            std::time::SystemTime::now(),
            std::time::SystemTime::now(),
        );
        // Sent a whole lease ago: the term would be over before it began.
        let sent_at = Instant::now()
            .checked_sub(CampaignConfig::default().lease_time())
            .unwrap();
        let late = run.after_attempt(
            Ok(SlotOutcome::Acquired { slot: 1, lease }),
            sent_at,
            Instant::now(),
        );
        let AfterAttempt::Late(orphan) = late else {
            panic!("a late slot must not start a term: {late:?}");
        };
        assert_eq!(keys_of(&orphan), ["consumers#1"]);
        assert_eq!(orphan.leases()[0].owner, owner);
        assert!(!run.state.is_leader());
        assert_ne!(
            run.request().request.owner,
            owner,
            "the next attempt has a new token"
        );
    }

    #[test]
    fn a_ranked_group_campaign_is_refused() {
        let ranked = CampaignConfig::default().with_rank(1);
        assert!(matches!(
            group_campaign(3, ranked),
            Err(Error::InvalidOptions(OptionsError::RankedGroup {
                slots: 3
            }))
        ));
        assert!(group_campaign(1, ranked).is_ok());
    }

    #[test]
    fn a_term_begins_or_not_by_the_given_now_not_the_machines_clock() {
        let config = CampaignConfig::default();
        let renew_deadline = config.renew_deadline();
        // Sent an hour from now as the machine's clock goes: only the given instant can
        // make the answer late.
        let sent_at = Instant::now() + Duration::from_secs(3600);
        let deadline = crate::engine::late::lease_deadline(sent_at, renew_deadline).unwrap();
        for (answered_at, late) in [
            (deadline, true),
            (deadline - Duration::from_millis(1), false),
        ] {
            let run = group_campaign(1, config).unwrap();
            let lease = Lease::new(
                LockName::new("consumers").unwrap(),
                run.request().request.owner,
                "me",
                7,
                std::time::SystemTime::now(),
                std::time::SystemTime::now(),
            );
            let answer = Ok(SlotOutcome::Acquired { slot: 0, lease });
            match run.after_attempt(answer, sent_at, answered_at) {
                AfterAttempt::Late(_) => assert!(late, "in time at {answered_at:?}"),
                AfterAttempt::Elected(term) => {
                    assert!(!late, "late at {answered_at:?}");
                    assert_eq!(term.context().deadline(), deadline);
                }
                AfterAttempt::Wait => panic!("the slot was taken"),
            }
        }
    }
}
