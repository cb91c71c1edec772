//! [`Observation`]: an observer's decisions (when to read a lock, what each read shows
//! changed), for the blocking and async observers alike.
//!
//! An observer owns no thread and no buffer that grows: it reads the lock when its reader
//! asks for the next change and nothing is pending. A read is due at once after a release
//! notification, at the poll interval otherwise, and sooner when a lease the last read
//! showed runs out before then, so that an expiry is seen when it happens. The shells
//! listen for a release before each read (so a release while the reader is busy wakes the
//! next wait at once), read, feed the answer here, and wait for what [`Observation::step`]
//! says.
//!
//! A notification that names the fencing token of the holder the last read showed (Redis,
//! PostgreSQL, etcd and the embedded backends send it) is the change itself: the observer
//! hands it over before the read that follows, which only looks for a new holder. The
//! release is then seen one notification after it happened, not a notification and a
//! read.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use crate::error::Error;
use crate::leadership::change::{ChangeKind, LeaderChange};
use crate::name::LockName;
use crate::spi::group::GroupKeys;
use crate::spi::release_events::ReleaseNotice;
use crate::spi::state::{LeaderLease, LeaderState};

/// How often an observer reads when nothing wakes it sooner, unless told otherwise.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How far past a lease's reported expiry the read that sees it gone is made.
const AFTER_EXPIRY: Duration = Duration::from_millis(1);

/// What an observer does next.
#[derive(Debug)]
pub enum ObserveStep {
    /// Hand the reader this change.
    Yield(LeaderChange),
    /// Listen for releases, then read every key and feed the answer to
    /// [`Observation::answer`].
    Read,
    /// Wait until `until`, or a release notification (then hand what it said to
    /// [`Observation::notified`]).
    Wait {
        /// When the next read is due.
        until: Instant,
    },
    /// The observer is done (a permanent error was yielded).
    Done,
}

/// The observer of one lock, or of every slot of a leader group.
#[derive(Debug)]
pub struct Observation {
    /// The store keys read, one per slot.
    keys: Vec<LockName>,
    /// The slots' names as the reader knows them, one per key.
    names: Vec<String>,
    /// Where release notifications of every key arrive: the lock, or the group's name.
    listen_key: String,
    /// What the last read showed, per slot; `None` before the first read.
    last: Option<Vec<Option<LeaderLease>>>,
    pending: VecDeque<LeaderChange>,
    poll_interval: Duration,
    next_read: Option<Instant>,
    /// When the first release notification since the last read woke the observer.
    notified: Option<SystemTime>,
    done: bool,
}

impl Observation {
    /// An observer of the lock stored under `key`, named `name` to the reader, reading at
    /// least once a second (until [`set_poll_interval`](Self::set_poll_interval)).
    pub fn lock(key: LockName, name: &str) -> Self {
        let listen_key = key.as_str().to_owned();
        Self::new(vec![key], vec![name.to_owned()], listen_key)
    }

    /// An observer of every slot of the group `keys`, named `name` to the reader (its
    /// slots `name`, `name#1`, ...), reading at least once a second (until
    /// [`set_poll_interval`](Self::set_poll_interval)).
    pub fn group(keys: &GroupKeys, name: &str) -> Self {
        Self::new(
            keys.iter().cloned().collect(),
            keys.slot_names(name),
            keys.group().as_str().to_owned(),
        )
    }

    fn new(keys: Vec<LockName>, names: Vec<String>, listen_key: String) -> Self {
        Observation {
            keys,
            names,
            listen_key,
            last: None,
            pending: VecDeque::new(),
            poll_interval: DEFAULT_POLL_INTERVAL,
            next_read: None,
            notified: None,
            done: false,
        }
    }

    /// Reads at least every `poll_interval` (at least 1 ms).
    pub fn set_poll_interval(&mut self, poll_interval: Duration) {
        self.poll_interval = poll_interval.max(Duration::from_millis(1));
    }

    /// The poll interval.
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval
    }

    /// The store keys a read reads, in slot order.
    pub fn keys(&self) -> &[LockName] {
        &self.keys
    }

    /// The key to listen on for release notifications of every key read.
    pub fn listen_key(&self) -> &str {
        &self.listen_key
    }

    /// What to do at `now`.
    pub fn step(&mut self, now: Instant) -> ObserveStep {
        if let Some(change) = self.pending.pop_front() {
            return ObserveStep::Yield(change);
        }
        if self.done {
            return ObserveStep::Done;
        }
        match self.next_read {
            Some(until) if until > now && self.notified.is_none() => ObserveStep::Wait { until },
            _ => ObserveStep::Read,
        }
    }

    /// A release notification ended a wait at `at` (this node's clock): the next read is
    /// due at once, and a lock it shows gone was gone by `at`. When `notice` names a key
    /// read and the token of the holder the last read showed there, that holder's end is
    /// the next change, without waiting for the read.
    pub fn notified(&mut self, at: SystemTime, notice: &ReleaseNotice) {
        self.notified.get_or_insert(at);
        let (Some(key), Some(token)) = (notice.key(), notice.fencing_token()) else {
            return;
        };
        let Some(slot) = self.keys.iter().position(|k| k.as_str() == key) else {
            return;
        };
        let Some(last) = self.last.as_mut().and_then(|last| last.get_mut(slot)) else {
            return;
        };
        if last
            .as_ref()
            .is_some_and(|held| held.fencing_token == token)
        {
            let before = last.take();
            self.compare(slot, before, None, at, at);
        }
    }

    /// Feeds one read of every slot (in slot order) answered at `seen_at` (this node's
    /// clock) and `now`; returns the error to hand the reader, if the read failed. A
    /// transient error is retried at the poll interval; after a permanent one the observer
    /// is done.
    ///
    /// The time is the answer's, not the request's: a holder the answer shows gone was
    /// gone by then, and no sooner can be known. A read sent just before a lease ends
    /// and answered after it (a slow store, a paused node) finds the holder gone by its
    /// end, an expiry; judged by when the read went out it would look released. Without
    /// a release notification the two cannot be told apart within the read's time, and
    /// a lease left to run out is far likelier than a release in that last moment.
    pub fn answer(
        &mut self,
        read: Result<Vec<LeaderState>, Error>,
        seen_at: SystemTime,
        now: Instant,
    ) -> Option<Error> {
        let states = match read {
            Ok(states) => states,
            Err(err) => {
                self.done = !err.is_transient();
                self.next_read = Some(now + self.poll_interval);
                return Some(err);
            }
        };
        let holders: Vec<Option<LeaderLease>> = states
            .into_iter()
            .map(|state| state.leader().cloned())
            .collect();
        // Whatever the read shows gone was gone by the notification, if one came.
        let gone_by = self.notified.take().map_or(seen_at, |at| at.min(seen_at));
        match self.last.take() {
            None => {
                for (slot, holder) in holders.iter().enumerate() {
                    self.push(ChangeKind::Initial, slot, holder.clone(), seen_at);
                }
            }
            Some(last) => {
                for (slot, (before, after)) in last.into_iter().zip(&holders).enumerate() {
                    self.compare(slot, before, after.as_ref(), gone_by, seen_at);
                }
            }
        }
        self.next_read = Some(now + self.wait(&holders, seen_at));
        self.last = Some(holders);
        None
    }

    /// The changes from `before` to `after` in one slot.
    fn compare(
        &mut self,
        slot: usize,
        before: Option<LeaderLease>,
        after: Option<&LeaderLease>,
        gone_by: SystemTime,
        seen_at: SystemTime,
    ) {
        let same = |a: &LeaderLease, b: &LeaderLease| {
            a.fencing_token == b.fencing_token && a.leader_id == b.leader_id
        };
        if let Some(before) = before {
            if after.is_some_and(|after| same(&before, after)) {
                return; // a renewal, or nothing
            }
            // Gone before its lease ran out: released or forced. Gone after it: expired.
            // "Gone by" is when a release notification woke the observer, if one did:
            // a release read late is still a release, while a group's notification
            // (one for every slot) does not make a slot that had run out look released.
            let kind = if gone_by < before.expires_at {
                ChangeKind::Released
            } else {
                ChangeKind::Expired
            };
            self.push(kind, slot, Some(before), seen_at);
        }
        if let Some(after) = after {
            self.push(ChangeKind::Acquired, slot, Some(after.clone()), seen_at);
        }
    }

    fn push(
        &mut self,
        kind: ChangeKind,
        slot: usize,
        holder: Option<LeaderLease>,
        seen_at: SystemTime,
    ) {
        let name = self.names.get(slot).cloned().unwrap_or_default();
        let slot = u32::try_from(slot).unwrap_or(u32::MAX);
        self.pending
            .push_back(LeaderChange::new(kind, name, slot, holder, seen_at));
    }

    /// How long until the next read: the poll interval, or just past the soonest expiry
    /// the read showed when that comes first. An expiry already past on this node's clock
    /// (a store whose clock is behind ours) waits the poll interval, never less.
    fn wait(&self, holders: &[Option<LeaderLease>], seen_at: SystemTime) -> Duration {
        holders
            .iter()
            .flatten()
            .filter_map(|holder| holder.expires_at.duration_since(seen_at).ok())
            .filter(|until| !until.is_zero())
            .map(|until| until + AFTER_EXPIRY)
            .fold(self.poll_interval, Duration::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{BackendError, BackendErrorKind};
    use crate::spi::group::GroupSlots;

    const POLL: Duration = DEFAULT_POLL_INTERVAL;

    /// An observer of the two-slot group "g" (slots "g" and "g#1").
    fn group_of_two() -> Observation {
        let keys = GroupSlots::new(2)
            .unwrap()
            .keys(&LockName::new("g").unwrap())
            .unwrap();
        Observation::group(&keys, "g")
    }

    fn lease(node: &str, token: u64, at: SystemTime, for_secs: u64) -> LeaderState {
        LeaderState::occupied(
            "job",
            LeaderLease::new(node, at, at + Duration::from_secs(for_secs), token),
        )
    }

    fn read(obs: &mut Observation, states: Vec<LeaderState>, at: SystemTime) -> Vec<ChangeKind> {
        assert!(matches!(obs.step(Instant::now()), ObserveStep::Read));
        assert!(obs.answer(Ok(states), at, Instant::now()).is_none());
        let mut kinds = Vec::new();
        while let ObserveStep::Yield(change) = obs.step(Instant::now()) {
            kinds.push(change.kind);
        }
        // Due again at once, as the tests read back to back.
        obs.next_read = None;
        kinds
    }

    #[test]
    fn the_first_read_is_initial_then_only_changes_show() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut obs = Observation::lock(LockName::new("job").unwrap(), "job");
        assert_eq!(
            read(&mut obs, vec![LeaderState::empty("job")], t0),
            [ChangeKind::Initial]
        );
        assert!(read(&mut obs, vec![LeaderState::empty("job")], t0).is_empty());
        let a = lease("a", 1, t0, 30);
        assert_eq!(read(&mut obs, vec![a.clone()], t0), [ChangeKind::Acquired]);
        // A renewal moves the expiry only: no change.
        let renewed = lease("a", 1, t0 + Duration::from_secs(5), 30);
        assert!(read(&mut obs, vec![renewed], t0 + Duration::from_secs(5)).is_empty());
        // Gone before its expiry: released.
        assert_eq!(
            read(
                &mut obs,
                vec![LeaderState::empty("job")],
                t0 + Duration::from_secs(6)
            ),
            [ChangeKind::Released]
        );
    }

    #[test]
    fn gone_after_its_expiry_is_expired_unless_notified_gone_before_it() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let later = t0 + Duration::from_secs(31);
        let mut obs = Observation::lock(LockName::new("job").unwrap(), "job");
        read(&mut obs, vec![lease("a", 1, t0, 30)], t0);
        assert_eq!(
            read(&mut obs, vec![LeaderState::empty("job")], later),
            [ChangeKind::Expired]
        );
        read(&mut obs, vec![lease("b", 2, t0, 30)], t0);
        obs.notified(t0 + Duration::from_secs(29), &ReleaseNotice::default());
        assert_eq!(
            read(&mut obs, vec![LeaderState::empty("job")], later),
            [ChangeKind::Released]
        );
    }

    #[test]
    fn a_groups_notification_does_not_make_a_slot_that_ran_out_released() {
        // One notification serves every slot of a group: slot 0 ran out (its lease ended
        // at t0 + 30 s) and slot 1 was released after that, before the read saw both gone.
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut obs = group_of_two();
        read(
            &mut obs,
            vec![lease("a", 1, t0, 30), lease("b", 2, t0, 60)],
            t0,
        );
        obs.notified(t0 + Duration::from_secs(35), &ReleaseNotice::default());
        let gone = vec![LeaderState::empty("g"), LeaderState::empty("g#1")];
        assert_eq!(
            read(&mut obs, gone, t0 + Duration::from_secs(40)),
            [ChangeKind::Expired, ChangeKind::Released]
        );
    }

    #[test]
    fn a_new_holder_between_reads_shows_the_old_one_going_first() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut obs = Observation::lock(LockName::new("job").unwrap(), "job");
        read(&mut obs, vec![lease("a", 1, t0, 30)], t0);
        // The same node under a new token is a new acquisition too.
        assert_eq!(
            read(&mut obs, vec![lease("a", 2, t0, 30)], t0),
            [ChangeKind::Released, ChangeKind::Acquired]
        );
    }

    #[test]
    fn group_slots_are_named_and_compared_apart() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut obs = group_of_two();
        read(
            &mut obs,
            vec![LeaderState::empty("g"), LeaderState::empty("g#1")],
            t0,
        );
        assert!(matches!(obs.step(Instant::now()), ObserveStep::Read));
        obs.answer(
            Ok(vec![LeaderState::empty("g"), lease("b", 4, t0, 30)]),
            t0,
            Instant::now(),
        );
        let ObserveStep::Yield(change) = obs.step(Instant::now()) else {
            panic!("a change is pending");
        };
        assert_eq!((change.slot, change.lock_name.as_str()), (1, "g#1"));
        assert_eq!(change.kind, ChangeKind::Acquired);
    }

    #[test]
    fn waits_the_poll_interval_or_until_just_past_an_expiry_never_busy() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let obs = Observation::lock(LockName::new("job").unwrap(), "job");
        let soon = LeaderLease::new("a", t0, t0 + Duration::from_millis(300), 1);
        let later = LeaderLease::new("a", t0, t0 + Duration::from_secs(30), 1);
        let past = LeaderLease::new("a", t0, t0 - Duration::from_secs(1), 1);
        assert_eq!(
            obs.wait(&[Some(soon)], t0),
            Duration::from_millis(300) + AFTER_EXPIRY
        );
        assert_eq!(obs.wait(&[Some(later)], t0), POLL);
        assert_eq!(obs.wait(&[Some(past), None], t0), POLL);
    }

    #[test]
    fn a_notification_makes_the_read_due_at_once() {
        let t0 = SystemTime::now();
        let mut obs = Observation::lock(LockName::new("job").unwrap(), "job");
        let now = Instant::now();
        assert!(matches!(obs.step(now), ObserveStep::Read));
        obs.answer(Ok(vec![LeaderState::empty("job")]), t0, now);
        assert!(matches!(obs.step(now), ObserveStep::Yield(_)));
        assert!(matches!(obs.step(now), ObserveStep::Wait { until } if until == now + POLL));
        obs.notified(t0, &ReleaseNotice::default());
        assert!(matches!(obs.step(now), ObserveStep::Read));
    }

    #[test]
    fn a_notice_with_the_holders_token_is_the_release_before_any_read() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut obs = group_of_two();
        read(
            &mut obs,
            vec![lease("a", 1, t0, 30), lease("b", 2, t0, 30)],
            t0,
        );
        let now = Instant::now();
        // Another lease's token, or another key: only "read now".
        obs.notified(t0, &ReleaseNotice::from_message("g#1\n7"));
        obs.notified(t0, &ReleaseNotice::from_message("elsewhere\n2"));
        assert!(matches!(obs.step(now), ObserveStep::Read));
        let at = t0 + Duration::from_secs(3);
        obs.notified(
            at,
            &ReleaseNotice::from_message(&ReleaseNotice::message("g#1", 2)),
        );
        let ObserveStep::Yield(change) = obs.step(now) else {
            panic!("the release is handed over before the read");
        };
        assert_eq!(
            (change.kind, change.slot, change.seen_at),
            (ChangeKind::Released, 1, at)
        );
        assert_eq!(change.holder.map(|h| h.fencing_token), Some(2));
        // The read that follows shows only what is new: a holder of slot 1 under token 3.
        assert!(matches!(obs.step(now), ObserveStep::Read));
        assert!(
            obs.answer(
                Ok(vec![lease("a", 1, t0, 30), lease("c", 3, at, 30)]),
                at,
                now
            )
            .is_none()
        );
        let ObserveStep::Yield(change) = obs.step(now) else {
            panic!("the new holder shows");
        };
        assert_eq!((change.kind, change.slot), (ChangeKind::Acquired, 1));
        assert!(matches!(obs.step(now), ObserveStep::Wait { .. }));
    }

    #[test]
    fn a_notice_after_the_lease_ran_out_is_an_expiry() {
        // etcd's watch reports a lease its TTL ended as it reports a release.
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut obs = Observation::lock(LockName::new("job").unwrap(), "job");
        read(&mut obs, vec![lease("a", 1, t0, 30)], t0);
        obs.notified(
            t0 + Duration::from_secs(31),
            &ReleaseNotice::from_message("job\n1"),
        );
        let ObserveStep::Yield(change) = obs.step(Instant::now()) else {
            panic!("the end is handed over before the read");
        };
        assert_eq!(change.kind, ChangeKind::Expired);
    }

    #[test]
    fn a_transient_error_is_retried_and_a_permanent_one_ends_it() {
        let mut obs = Observation::lock(LockName::new("job").unwrap(), "job");
        let now = Instant::now();
        let blip = Error::Backend(BackendError::new(
            "test",
            "job",
            BackendErrorKind::Transient,
            "blip",
        ));
        assert!(obs.answer(Err(blip), SystemTime::now(), now).is_some());
        assert!(matches!(obs.step(now), ObserveStep::Wait { .. }));
        let broken = Error::Backend(BackendError::new(
            "test",
            "job",
            BackendErrorKind::Permanent,
            "broken",
        ));
        assert!(obs.answer(Err(broken), SystemTime::now(), now).is_some());
        assert!(matches!(obs.step(now), ObserveStep::Done));
    }
}
