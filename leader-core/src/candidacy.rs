//! Ranked leadership: a candidate's membership record, and who outranks it.
//!
//! Each ranked candidate holds a lock of its own, `<key>#rank:<rank>:<id>`, renewed every
//! heartbeat and expired by the backend like any lease: the live candidates of a name are
//! the held locks under `<key>#rank:`, which every backend can list. The `<id>` is a hash of
//! the node id, so a node that restarts with the same node id reuses its record's name
//! instead of adding a new one (backends keep a lock's fencing counter for ever); the
//! default node id (`hostname:pid`) does not stay the same, which `CampaignConfig`'s docs
//! warn of. The campaign loops do the I/O (renew the record, list, release it when
//! resigning); the decisions are here.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::backend::{AcquireOutcome, AcquireRequest};
use crate::campaign::CampaignConfig;
use crate::error::Error;
use crate::lease::{Lease, OwnerToken};
use crate::listing::{ListPage, ListRequest};
use crate::name::LockName;

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
    /// The record as last renewed, to release when the campaign resigns.
    lease: Option<Lease>,
    /// A heartbeat was sent: even unanswered, it may have written the record.
    sent: bool,
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

/// What a ranked leader's survey, raced against its term's deadline, means for the term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermCheck {
    /// The term goes on.
    Keep,
    /// A higher rank is live and preemption is on: hand over.
    Preempted {
        /// The highest live rank above the leader's.
        by_rank: u32,
    },
    /// The survey did not finish before the term's deadline: the term ends now, as it
    /// would had its renewal gone unanswered (DESIGN §4.7), not a heartbeat later.
    DeadlinePassed,
}

impl TermCheck {
    /// The verdict of a survey that finished (`Some`) or ran out of time (`None`).
    pub fn of(survey: Option<Standing>) -> Self {
        match survey {
            Some(Standing {
                preempted_by: Some(by_rank),
                ..
            }) => TermCheck::Preempted { by_rank },
            Some(_) => TermCheck::Keep,
            None => TermCheck::DeadlinePassed,
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

    /// Whether the record is due for renewal at `now` (a heartbeat has passed, or it was
    /// never written).
    pub fn heartbeat_due(&self, now: Instant) -> bool {
        match self.beat.lock().renewed_at {
            Some(at) => now.saturating_duration_since(at) >= self.heartbeat,
            None => true,
        }
    }

    /// The request that writes or renews the record: an acquire with the candidate's own
    /// token, which re-acquires (renews) its own lock.
    pub fn heartbeat(&self) -> AcquireRequest<'_> {
        AcquireRequest::new(&self.record, self.owner, &self.node_id, self.lease_time)
            .with_db_time(self.use_db_time)
    }

    /// Records a heartbeat sent at `sent_at`. A failure is logged; the record stays as it
    /// was and the next loop turn tries again.
    pub fn after_heartbeat(&self, answer: Result<AcquireOutcome, Error>, sent_at: Instant) {
        self.beat.lock().sent = true;
        match answer {
            Ok(AcquireOutcome::Acquired(lease)) => {
                *self.beat.lock() = Beat {
                    renewed_at: Some(sent_at),
                    lease: Some(lease),
                    sent: true,
                };
            }
            Ok(AcquireOutcome::Held(holder)) => {
                tracing::warn!(record = %self.record, holder = ?holder, "a candidate's membership record is held by another owner");
            }
            Err(err) => {
                tracing::warn!(record = %self.record, error = %err, "renewing a candidate's membership record failed");
            }
        }
    }

    /// The record to release when the campaign resigns, if a heartbeat may have written
    /// it: a heartbeat whose answer was lost may have, so the record is then released by
    /// its name and owner token alone (all a release needs, as for an orphan), lest a
    /// resigned candidate's rank keep deferring the others until its record runs out.
    pub fn withdraw(&self) -> Option<Lease> {
        let mut beat = self.beat.lock();
        let sent = std::mem::take(&mut beat.sent);
        beat.lease.take().or_else(|| {
            sent.then(|| {
                let never = std::time::SystemTime::UNIX_EPOCH;
                Lease::new(
                    self.record.clone(),
                    self.owner,
                    String::new(),
                    0,
                    never,
                    never,
                )
            })
        })
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
    use crate::state::{LeaderLease, LeaderState};

    fn candidacy(rank: u32, preempt: bool) -> Candidacy {
        let config = CampaignConfig::default()
            .with_rank(rank)
            .with_preemption(preempt);
        let key = LockName::new("job").unwrap();
        Candidacy::new(&key, &config, "node", false)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_heartbeat_whose_answer_was_lost_is_withdrawn_by_name_and_token() {
        let c = candidacy(3, true);
        assert!(c.withdraw().is_none(), "never sent, nothing to release");
        c.after_heartbeat(Err(Error::ShutDown), Instant::now());
        let record = c.withdraw().expect("it may have been written");
        assert_eq!(record.key.as_str(), c.heartbeat().key.as_str());
        assert_eq!(record.owner, c.heartbeat().owner);
        assert!(c.withdraw().is_none(), "handed out once");
    }

    #[test]
    fn a_survey_out_of_time_ends_the_term_now() {
        let standing = |preempted_by| Standing {
            may_lead: true,
            preempted_by,
        };
        assert_eq!(TermCheck::of(None), TermCheck::DeadlinePassed);
        assert_eq!(TermCheck::of(Some(standing(None))), TermCheck::Keep);
        assert_eq!(
            TermCheck::of(Some(standing(Some(4)))),
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
        assert!(c.heartbeat_due(Instant::now()));
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
