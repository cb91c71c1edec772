//! Ranked leadership: a candidate's membership record, and who outranks it.
//!
//! Each ranked candidate holds a lock of its own, `<key>#rank:<rank>:<id>`, renewed every
//! heartbeat and expired by the backend like any lease: the live candidates of a name are
//! the held locks under `<key>#rank:`, which every backend lists as one index range (on
//! Redis, the name's own index of its derived names: see the crate `leader-redis`). The
//! `<id>` is a hash of the node id, so a node that restarts with the same node id reuses
//! its record's name instead of adding a new one (backends keep a lock's fencing counter
//! for ever); the default node id (`hostname:pid`) does not stay the same, which
//! `CampaignConfig`'s docs warn of. The campaign loops do the I/O (renew the record, list,
//! release it when resigning); the decisions are here.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::campaign::CampaignConfig;
use crate::engine::orphan::Orphan;
use crate::error::Error;
use crate::name::LockName;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::listing::{ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ReleaseOutcome};
use crate::spi::request::AcquireRequest;

/// A ranked campaign's membership: its record, and what it saw of the other candidates.
#[derive(Debug)]
pub struct Candidacy {
    record: LockName,
    prefix: String,
    rank: u32,
    preempt: bool,
    owner: OwnerToken,
    node_id: String,
    lease_time: Duration,
    heartbeat: Duration,
    use_db_time: bool,
    beat: Mutex<Beat>,
}

#[derive(Debug, Default)]
struct Beat {
    /// When the last heartbeat that renewed the record was sent.
    renewed_at: Option<Instant>,
    /// A heartbeat was sent since the last withdrawal: answered or not, it may have
    /// written the record.
    written: bool,
    /// When each heartbeat that may still land was sent: on its way (no answer yet), or
    /// answered with an error (its request may sit in a paused server's socket or a
    /// driver's retry). A heartbeat answered by the store is settled.
    unsettled: Vec<Instant>,
}

/// What a candidate may do, from the live candidates it listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// Whether this candidate may try for the lock: no live candidate ranks above it.
    /// `true` when the listing failed: rank is a preference, the lock alone keeps one
    /// leader, and a name must not stay leaderless because listing is broken.
    pub may_lead: bool,
    /// For a leader: the highest rank above its own, when preemption is on. `None` when
    /// the listing failed (the leader keeps its term).
    pub preempted_by: Option<u32>,
}

/// What a ranked leader's survey means for its term, whenever it arrives.
///
/// The term itself is the lock's: it lasts while its renewals succeed, and a survey
/// neither holds them up nor ends the term by taking long. The campaign loops run the
/// survey beside the renewals (one at a time: a slow one carries over the renewals that
/// follow) and act on its verdict when it arrives. A survey that fails or never answers
/// leaves the term as it is, as rank is a preference and the lock alone keeps one leader;
/// only a higher live rank ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermCheck {
    /// The term goes on.
    Keep,
    /// A higher rank is live and preemption is on: hand over.
    Preempted {
        /// The highest live rank above the leader's.
        by_rank: u32,
    },
}

impl TermCheck {
    /// The verdict of a survey that finished.
    pub fn of(survey: Standing) -> Self {
        match survey.preempted_by {
            Some(by_rank) => TermCheck::Preempted { by_rank },
            None => TermCheck::Keep,
        }
    }
}

/// What a resigning candidate releases (see [`Candidacy::withdraw`]).
#[derive(Debug, Clone)]
pub struct Withdrawal {
    /// The record, by its name and owner token (all a release needs), when a heartbeat
    /// may have written it: release it now, before the lock.
    pub record: Option<Lease>,
    /// When a heartbeat may still land after that release (one on its way, or answered
    /// with an error): the record to release again in the background, after the release
    /// above, for as long as such a heartbeat could write it (see [`Orphan`]).
    pub late: Option<Orphan>,
    /// The record's lease length.
    lease_time: Duration,
}

impl Withdrawal {
    /// The release of [`record`](Self::record) answered `answer` at `now`: when that was
    /// a transient error, the record is released again in the background too (in
    /// [`late`](Self::late)), so that a resigned candidate does not stay listed for a
    /// lease because of one failed call.
    pub fn after_record_release(&mut self, answer: &Result<ReleaseOutcome, Error>, now: Instant) {
        if self.late.is_some() {
            return;
        }
        if let Some(record) = &self.record {
            self.late = Orphan::after_release(record, self.lease_time, Duration::ZERO, answer, now);
        }
    }
}

/// One look at the live candidates: the listing requests to send, page after page, and
/// what they add up to.
#[derive(Debug)]
pub struct Survey<'a> {
    candidacy: &'a Candidacy,
    next: Option<ListRequest>,
    /// The highest live rank above the candidate's own, so far.
    best_above: Option<u32>,
    failed: bool,
}

impl Survey<'_> {
    /// The next listing request to send, until the last page was read or one failed.
    pub fn next_request(&self) -> Option<ListRequest> {
        self.next.clone()
    }

    /// Reads the answer to [`next_request`](Self::next_request).
    pub fn read(&mut self, answer: Result<ListPage, Error>) {
        let page = match answer {
            Ok(page) => page,
            Err(err) => {
                tracing::warn!(record = %self.candidacy.record, error = %err, "listing the candidates failed");
                self.failed = true;
                self.next = None;
                return;
            }
        };
        for lock in &page.locks {
            if lock.lock_name() == self.candidacy.record.as_str() {
                continue;
            }
            match self.candidacy.rank_of(lock.lock_name()) {
                Some(rank) if rank > self.candidacy.rank => {
                    self.best_above = self.best_above.max(Some(rank));
                }
                Some(_) => {}
                None => {
                    tracing::debug!(lock = lock.lock_name(), "not a membership record; ignored")
                }
            }
        }
        self.next = page
            .next
            .zip(self.next.take())
            .map(|(cursor, request)| request.after(cursor));
    }

    /// What the candidate may do, from the pages read.
    pub fn standing(&self) -> Standing {
        if self.failed {
            return Standing {
                may_lead: true,
                preempted_by: None,
            };
        }
        Standing {
            may_lead: self.best_above.is_none(),
            preempted_by: self.best_above.filter(|_| self.candidacy.preempt),
        }
    }
}

impl Candidacy {
    /// The membership of a campaign on `key` by `node_id`, if `config` is ranked.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] when the record's name would be too long for `key`.
    pub fn new(
        key: &LockName,
        config: &CampaignConfig,
        node_id: &str,
        use_db_time: bool,
    ) -> Result<Option<Self>, Error> {
        let Some(rank) = config.rank() else {
            return Ok(None);
        };
        let prefix = format!("{key}#rank:");
        let record = key.derive(&format!("rank:{rank:010}:{:016x}", fnv1a(node_id)))?;
        Ok(Some(Candidacy {
            record,
            prefix,
            rank,
            preempt: config.preempts(),
            owner: OwnerToken::random(),
            node_id: node_id.to_owned(),
            lease_time: config.lease_time(),
            heartbeat: config.heartbeat(),
            use_db_time,
            beat: Mutex::new(Beat::default()),
        }))
    }

    /// This candidate's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The name of this candidate's membership record (`<key>#rank:<rank>:<id>`), the
    /// lock its heartbeats write and the listing of `<key>#rank:` shows.
    pub fn record(&self) -> &LockName {
        &self.record
    }

    /// Starts a heartbeat if the record is due for renewal at `now` (a heartbeat has
    /// passed since the last one that renewed it, or it was never written): returns the
    /// request that writes or renews the record — an acquire with the candidate's own
    /// token, which re-acquires (renews) its own lock — to send at once and answer with
    /// [`after_heartbeat`](Self::after_heartbeat)`(answer, now)`. From now on the
    /// heartbeat counts as on its way: a withdrawal releases what it may write, even if its
    /// answer never comes (a dropped future, a thread left behind).
    pub fn begin_heartbeat(&self, now: Instant) -> Option<AcquireRequest<'_>> {
        let mut beat = self.beat.lock();
        let due = beat
            .renewed_at
            .is_none_or(|at| now.saturating_duration_since(at) >= self.heartbeat);
        if !due {
            return None;
        }
        beat.written = true;
        // An unanswered heartbeat may land whenever a stalled store goes on, its lease
        // starting then; past the orphan release's outage bound it is given up.
        let kept = self.lease_time.max(Orphan::OUTAGE);
        beat.unsettled
            .retain(|sent| now.saturating_duration_since(*sent) < kept);
        beat.unsettled.push(now);
        Some(self.heartbeat_request())
    }

    fn heartbeat_request(&self) -> AcquireRequest<'_> {
        AcquireRequest::new(&self.record, self.owner, &self.node_id, self.lease_time)
            .with_db_time(self.use_db_time)
    }

    /// Records the answer to the heartbeat sent at `sent_at`. A failure is logged; the
    /// record stays as it was, the heartbeat may still land, and the next loop turn tries
    /// again.
    pub fn after_heartbeat(&self, answer: Result<AcquireOutcome, Error>, sent_at: Instant) {
        let mut beat = self.beat.lock();
        beat.written = true;
        if answer.is_ok()
            && let Some(at) = beat.unsettled.iter().position(|sent| *sent == sent_at)
        {
            beat.unsettled.swap_remove(at);
        }
        match answer {
            Ok(AcquireOutcome::Acquired(_)) => {
                beat.renewed_at = beat.renewed_at.max(Some(sent_at));
            }
            Ok(AcquireOutcome::Held(holder)) => {
                tracing::warn!(record = %self.record, holder = ?holder, "a candidate's membership record is held by another owner");
            }
            Err(err) => {
                tracing::warn!(record = %self.record, error = %err, "renewing a candidate's membership record failed");
            }
        }
    }

    /// What to release when the campaign resigns (see [`Withdrawal`]), handed out once.
    ///
    /// The record is released by its name and owner token alone (all a release needs, as
    /// for an orphan) whenever a heartbeat was sent, answered or not, lest a resigned
    /// candidate's rank keep deferring the others until its record runs out. A heartbeat
    /// still on its way (a leader's survey runs beside its loop, and a resignation does
    /// not wait for it) or answered with an error may land after that release and write
    /// the record again; [`Withdrawal::late`] then releases it again, with backoff, for
    /// as long as such a heartbeat could land (until the store answers, then a lease
    /// more: see [`Orphan`]): a late heartbeat's record lives at most one [`Orphan::MAX`]
    /// delay (and a round trip) after it lands, not a lease.
    pub fn withdraw(&self) -> Withdrawal {
        let mut beat = self.beat.lock();
        let written = std::mem::take(&mut beat.written);
        // However long ago it was sent: the orphan release's own rule bounds it.
        let latest = std::mem::take(&mut beat.unsettled).into_iter().max();
        beat.renewed_at = None;
        let record = written.then(|| self.record_by_token());
        let late = latest
            .map(|sent_at| Orphan::new(self.record.clone(), self.owner, sent_at, self.lease_time));
        Withdrawal {
            record,
            late,
            lease_time: self.lease_time,
        }
    }

    /// The record as a lease known by its name and owner token alone.
    fn record_by_token(&self) -> Lease {
        let never = std::time::SystemTime::UNIX_EPOCH;
        Lease::new(
            self.record.clone(),
            self.owner,
            String::new(),
            0,
            never,
            never,
        )
    }

    /// Whether a higher rank ends this candidate's term (see
    /// [`CampaignConfig::with_preemption`]): a leader that cannot be preempted only
    /// heartbeats its record, it has no need to list the others.
    pub fn preempts(&self) -> bool {
        self.preempt
    }

    /// A fresh look at the live candidates (send its requests, read their answers).
    pub fn survey(&self) -> Survey<'_> {
        Survey {
            candidacy: self,
            next: Some(ListRequest::new(self.prefix.clone())),
            best_above: None,
            failed: false,
        }
    }

    fn rank_of(&self, record: &str) -> Option<u32> {
        let rest = record.strip_prefix(&self.prefix)?;
        let (rank, _id) = rest.split_once(':')?;
        rank.parse().ok()
    }
}

/// FNV-1a, 64 bits: a stable hash (the same in every process and release) of a node id.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::spi::state::{LeaderLease, LeaderState};

    fn candidacy(rank: u32, preempt: bool) -> Candidacy {
        let config = CampaignConfig::default()
            .with_rank(rank)
            .with_preemption(preempt);
        let key = LockName::new("job").unwrap();
        Candidacy::new(&key, &config, "node", false)
            .unwrap()
            .unwrap()
    }

    fn acquired(c: &Candidacy) -> Result<AcquireOutcome, Error> {
        let now = SystemTime::now();
        let lease = Lease::new(c.record.clone(), c.owner, "node", 1, now, now);
        Ok(AcquireOutcome::Acquired(lease))
    }

    #[test]
    fn heartbeats_are_a_heartbeat_apart_from_the_last_that_renewed() {
        let c = candidacy(3, true);
        let t0 = Instant::now();
        let request = c.begin_heartbeat(t0).expect("never written: due");
        assert_eq!(request.key.as_str(), c.record.as_str());
        assert_eq!(request.owner, c.owner);
        c.after_heartbeat(acquired(&c), t0);
        assert!(c.begin_heartbeat(t0 + c.heartbeat / 2).is_none());
        let t1 = t0 + c.heartbeat;
        assert!(c.begin_heartbeat(t1).is_some(), "a heartbeat later");
        c.after_heartbeat(Err(Error::ShutDown), t1);
        assert!(
            c.begin_heartbeat(t1 + Duration::from_millis(1)).is_some(),
            "a failed one renewed nothing: due again"
        );
    }

    #[test]
    fn a_withdrawal_releases_what_any_heartbeat_may_write() {
        let c = candidacy(3, true);
        let nothing = c.withdraw();
        assert!(
            nothing.record.is_none() && nothing.late.is_none(),
            "never sent"
        );

        // Answered: the record is released by name and token, and nothing can land later.
        let t0 = Instant::now();
        assert!(c.begin_heartbeat(t0).is_some());
        c.after_heartbeat(acquired(&c), t0);
        let settled = c.withdraw();
        let record = settled.record.expect("written");
        assert_eq!(
            (record.key.as_str(), record.owner),
            (c.record.as_str(), c.owner)
        );
        assert!(settled.late.is_none(), "every heartbeat was answered");
        assert!(c.withdraw().record.is_none(), "handed out once");

        // On its way when the candidate resigns: released now, and again if it lands.
        let t1 = Instant::now();
        assert!(c.begin_heartbeat(t1).is_some());
        let in_flight = c.withdraw();
        assert!(in_flight.record.is_some(), "it may have written the record");
        let late = in_flight.late.expect("it may still land");
        assert_eq!(late.leases().len(), 1);
        assert_eq!(
            (late.leases()[0].key.as_str(), late.leases()[0].owner),
            (c.record.as_str(), c.owner)
        );

        // Answered with an error: it may sit in a paused server's socket.
        let t2 = Instant::now();
        assert!(c.begin_heartbeat(t2).is_some());
        c.after_heartbeat(Err(Error::ShutDown), t2);
        let lost = c.withdraw();
        assert!(lost.record.is_some() && lost.late.is_some());
    }

    /// A heartbeat held in a stalled store lands when the store goes on, however long
    /// after it was sent: a withdrawal still hands it to the orphan release.
    #[test]
    fn a_heartbeat_unanswered_for_more_than_a_lease_is_still_released_on_withdrawal() {
        let lease_time = Duration::from_millis(30);
        let config = CampaignConfig::default()
            .with_rank(1)
            .with_lease_time(lease_time)
            .with_heartbeat(Duration::from_millis(10))
            .with_renew_deadline(Duration::from_millis(20))
            .with_poll_interval(Duration::from_millis(10));
        let key = LockName::new("job").unwrap();
        let c = Candidacy::new(&key, &config, "node", false)
            .unwrap()
            .unwrap();
        let sent_at = Instant::now();
        assert!(c.begin_heartbeat(sent_at).is_some());
        c.after_heartbeat(Err(Error::ShutDown), sent_at);
        std::thread::sleep(lease_time + Duration::from_millis(10));
        // A later heartbeat is answered; the stuck one is not.
        let now = Instant::now();
        assert!(c.begin_heartbeat(now).is_some());
        c.after_heartbeat(acquired(&c), now);
        let withdrawal = c.withdraw();
        assert!(withdrawal.record.is_some());
        assert!(
            withdrawal.late.is_some(),
            "the stuck heartbeat may still land, however long ago it was sent"
        );
    }

    #[test]
    fn a_failed_record_release_is_retried_from_the_given_now_not_the_machines_clock() {
        use crate::error::{BackendError, BackendErrorKind};
        let c = candidacy(3, true);
        // Everything happens an hour from now as the machine's clock goes.
        let t0 = Instant::now() + Duration::from_secs(3600);
        assert!(c.begin_heartbeat(t0).is_some());
        c.after_heartbeat(acquired(&c), t0);
        let mut withdrawal = c.withdraw();
        assert!(withdrawal.late.is_none(), "every heartbeat was answered");
        let failed =
            Err(BackendError::new("test", "job", BackendErrorKind::Transient, "down").into());
        let released_at = t0 + Duration::from_secs(1);
        withdrawal.after_record_release(&failed, released_at);
        let mut late = withdrawal.late.expect("released again in the background");
        // The store's outage is counted from the release that failed, at the given instant.
        let over = released_at + Orphan::OUTAGE.max(c.lease_time);
        let unreachable =
            || Err(BackendError::new("test", "job", BackendErrorKind::Transient, "down").into());
        assert!(
            late.after_releases(&[unreachable()], over - Duration::from_millis(1))
                .is_some()
        );
        assert_eq!(late.after_releases(&[unreachable()], over), None);
    }

    #[test]
    fn only_a_higher_live_rank_ends_a_term() {
        let standing = |preempted_by| Standing {
            may_lead: true,
            preempted_by,
        };
        assert_eq!(TermCheck::of(standing(None)), TermCheck::Keep);
        assert_eq!(
            TermCheck::of(standing(Some(4))),
            TermCheck::Preempted { by_rank: 4 }
        );
    }

    fn page(names: &[&str]) -> ListPage {
        let now = SystemTime::now();
        let locks = names
            .iter()
            .map(|name| LeaderState::occupied(*name, LeaderLease::new("n", now, now, 1)))
            .collect();
        ListPage::new(locks, None)
    }

    #[test]
    fn records_sort_by_rank_and_carry_it_in_their_name() {
        let c = candidacy(7, true);
        let expected = format!("job#rank:0000000007:{:016x}", fnv1a("node"));
        assert_eq!(
            c.record.as_str(),
            expected,
            "a stable name per node and rank"
        );
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(c.rank_of(c.record.as_str()), Some(7));
        assert_eq!(c.rank_of("job#rank:x:1"), None);
    }

    #[test]
    fn only_higher_live_ranks_outrank_and_preempt() {
        let c = candidacy(2, true);
        let own = c.record.to_string();
        let mut survey = c.survey();
        survey.read(Ok(page(&[
            &own,
            "job#rank:0000000001:aa",
            "job#rank:0000000002:bb",
            "job#rank:x",
        ])));
        assert!(survey.next_request().is_none(), "one page");
        assert_eq!(
            survey.standing(),
            Standing {
                may_lead: true,
                preempted_by: None
            }
        );

        let mut survey = c.survey();
        survey.read(Ok(page(&[
            "job#rank:0000000003:cc",
            "job#rank:0000000009:dd",
        ])));
        assert_eq!(
            survey.standing(),
            Standing {
                may_lead: false,
                preempted_by: Some(9)
            }
        );

        let off = candidacy(2, false);
        let mut survey = off.survey();
        survey.read(Ok(page(&["job#rank:0000000003:cc"])));
        assert_eq!(
            survey.standing(),
            Standing {
                may_lead: false,
                preempted_by: None
            }
        );
    }

    #[test]
    fn a_failed_listing_leaves_it_to_the_lock_and_pages_follow_their_cursor() {
        let c = candidacy(1, true);
        let mut survey = c.survey();
        let first = survey.next_request().unwrap();
        assert_eq!(first.prefix, "job#rank:");
        survey.read(Ok(ListPage::new(
            Vec::new(),
            Some(crate::ListCursor::new("p2")),
        )));
        assert_eq!(
            survey.next_request().unwrap().cursor,
            Some(crate::ListCursor::new("p2"))
        );
        survey.read(Err(Error::ShutDown));
        assert!(survey.next_request().is_none());
        assert_eq!(
            survey.standing(),
            Standing {
                may_lead: true,
                preempted_by: None
            }
        );
    }

    #[test]
    fn unranked_campaigns_have_no_candidacy() {
        let key = LockName::new("job").unwrap();
        let c = Candidacy::new(&key, &CampaignConfig::default(), "n", false).unwrap();
        assert!(c.is_none());
    }
}
