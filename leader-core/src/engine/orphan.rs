//! [`Orphan`]: a lease an acquire request may have taken without its caller learning of it.

use std::time::{Duration, Instant, SystemTime};

use crate::engine::defects::{Defect, planted};
use crate::engine::retry::Backoff;
use crate::error::Error;
use crate::name::LockName;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::outcome::ReleaseOutcome;
use crate::spi::request::SlotRequest;

/// An acquisition that may exist without anyone holding it: the acquire request was sent,
/// then it failed (a response timeout, a dropped connection, a write-concern error) or
/// the caller stopped waiting for it (a dropped future). The server may have applied it —
/// or may still apply it, when the request sits in a paused server's socket or in a
/// driver's retry, and then the lease starts only when it lands. Left alone, the lock
/// would stay taken by an owner token nobody knows for a whole lease.
///
/// The owner token is known before the request is sent, so electors release it: at once,
/// and again with backoff (at most [`MAX`](Self::MAX) apart) until a release finds and
/// frees it, or a permanent error ends it. Releasing by the attempt's own owner token is
/// always safe: it can only free that attempt's lease, never another owner's lock. A
/// release that finds nothing keeps the cleanup going, since the request may land later:
///
/// - **Until the store answers**, releases go on, however long past the lease that is: a
///   request stuck in a paused server lands when the server goes on, and is freed within
///   one backoff step of it. An outage longer than [`OUTAGE`](Self::OUTAGE) (or the
///   lease, if longer) ends the cleanup; a request that lands after that holds its lock
///   until its lease runs out, as a node that crashed holding it would. The bound keeps a
///   process from retrying without end against a store that is gone.
/// - **Once the store answered a release** (freed or not), they go on for one more lease:
///   a request still on its way then (on another connection, in a driver's retry) lands
///   within it, or it would have expired by itself had it landed earlier.
///
/// A group's attempt may have taken any of its slots, so its orphan releases each of them.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::__private::Orphan;
/// use leader_core::{LockName, OwnerToken, ReleaseOutcome};
///
/// let key = LockName::new("nightly")?;
/// let sent_at = Instant::now();
/// let mut orphan = Orphan::new(key, OwnerToken::random(), sent_at, Duration::from_secs(30));
/// // Nothing to release yet: the request may still land, so try again a little later.
/// let now = sent_at + Duration::from_millis(5);
/// assert!(orphan.after_releases(&[Ok(ReleaseOutcome::NotHeld)], now).is_some());
/// // Found and freed: done.
/// assert_eq!(orphan.after_releases(&[Ok(ReleaseOutcome::Released)], now), None);
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Orphan {
    /// One per key the request may have taken (every slot of a group's attempt), dropped
    /// as each is settled.
    leases: Vec<Lease>,
    /// Paces the releases, and ends them when the store stayed unanswering for too long.
    backoff: Backoff,
    /// The lease the request asked for.
    lease_time: Duration,
    /// One lease after the store first answered a release: when the cleanup ends.
    until: Option<Instant>,
    /// The minimum lease each release keeps: zero for an acquisition whose action never
    /// ran, the options' for a lease whose own release failed after its action.
    min_lease_time: Duration,
    /// A release that freed a key settles it. Not so for a late attempt of a term's own
    /// token ([`after_term`](Self::after_term)): what it freed may have been the term.
    freed_settles: bool,
}

impl Orphan {
    /// The first delay's upper bound.
    pub const INITIAL: Duration = Duration::from_millis(10);
    /// The longest delay between two releases: a late-landing request frees again within it.
    pub const MAX: Duration = Duration::from_millis(500);
    /// How long releases go on while the store answers none of them, counted from when the
    /// request was sent (the lease, if longer): server pauses, failovers and restarts are
    /// shorter, and a store gone for longer is not retried without end.
    pub const OUTAGE: Duration = Duration::from_secs(300);

    /// The possible acquisition of `key` by `owner`, whose request was sent at `sent_at`
    /// asking for `lease_time`.
    pub fn new(key: LockName, owner: OwnerToken, sent_at: Instant, lease_time: Duration) -> Self {
        Orphan::of_keys([key], owner, sent_at, lease_time)
    }

    /// The possible acquisitions of any of `keys` by `owner` (the slots of a group).
    pub fn of_keys(
        keys: impl IntoIterator<Item = LockName>,
        owner: OwnerToken,
        sent_at: Instant,
        lease_time: Duration,
    ) -> Self {
        Orphan::with_outage(keys, owner, sent_at, lease_time, Self::OUTAGE)
    }

    /// [`of_keys`](Self::of_keys) with `outage` in place of [`OUTAGE`](Self::OUTAGE).
    fn with_outage(
        keys: impl IntoIterator<Item = LockName>,
        owner: OwnerToken,
        sent_at: Instant,
        lease_time: Duration,
        outage: Duration,
    ) -> Self {
        Orphan {
            // Backends identify a lease by key and owner token alone; the rest is unknown.
            leases: keys
                .into_iter()
                .filter(|_| !planted(Defect::DropOrphanRelease))
                .map(|key| {
                    Lease::new(
                        key,
                        owner,
                        String::new(),
                        0,
                        SystemTime::UNIX_EPOCH,
                        SystemTime::UNIX_EPOCH,
                    )
                })
                .collect(),
            backoff: Backoff::with_bounds(
                sent_at,
                lease_time.max(outage),
                Self::INITIAL,
                Self::MAX,
            ),
            lease_time,
            until: None,
            min_lease_time: Duration::ZERO,
            freed_settles: true,
        }
    }

    /// What a late attempt of a term's own owner token, sent at `sent_at`, may still take
    /// of `key` (its slot) once the term ended: released as [`of_keys`](Self::of_keys)
    /// releases, except that a release that frees the key does not end it. The term's own
    /// lease has the same token, so such a release may have freed the term rather than the
    /// attempt, which can land after it; the releases go on until one lease after the store
    /// first answered. The next term takes a new token, so nothing else is ever freed.
    pub fn after_term(
        key: LockName,
        owner: OwnerToken,
        sent_at: Instant,
        lease_time: Duration,
    ) -> Self {
        let mut orphan = Orphan::new(key, owner, sent_at, lease_time);
        orphan.freed_settles = false;
        orphan
    }

    /// What follows the release of a held `lease` (asked for `lease_time`, released with
    /// `min_lease_time`) that answered `answer` at `now`: `Some(orphan)`, to release it in
    /// the background as an orphan is released, when the answer was a transient error.
    /// Its releases count the store's outage (see [`Orphan`]) from `now`.
    ///
    /// The lease was held and its action has run (or its term ended): left alone after a
    /// failed release, its lock would stay taken until the lease runs out — and longer on
    /// a store that extends leases by itself (etcd renews every lease for its whole TTL
    /// when its raft leader changes). Its own owner token can only free its own lease, so
    /// the releases go on, keeping `min_lease_time`, until one frees it or the store
    /// answers that it is gone (see [`Orphan`] for how long). A permanent error ends it:
    /// trying again would not help.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant, SystemTime};
    /// use leader_core::__private::Orphan;
    /// use leader_core::{BackendError, BackendErrorKind, Lease, LockName, OwnerToken, ReleaseOutcome};
    ///
    /// let now = SystemTime::now();
    /// let lease = Lease::new(LockName::new("nightly")?, OwnerToken::random(), "node-a", 7, now, now);
    /// let lost = BackendError::new("redis", "nightly", BackendErrorKind::Transient, "timed out");
    /// let lease_time = Duration::from_secs(30);
    /// let orphan = Orphan::after_release(&lease, lease_time, Duration::ZERO, &Err(lost.into()), Instant::now());
    /// assert_eq!(orphan.map(|o| o.leases()[0].fencing_token), Some(7));
    /// let freed = Orphan::after_release(&lease, lease_time, Duration::ZERO, &Ok(ReleaseOutcome::Released), Instant::now());
    /// assert!(freed.is_none());
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn after_release(
        lease: &Lease,
        lease_time: Duration,
        min_lease_time: Duration,
        answer: &Result<ReleaseOutcome, Error>,
        now: Instant,
    ) -> Option<Self> {
        if !matches!(answer, Err(err) if err.is_transient()) {
            return None;
        }
        tracing::info!(lock = %lease.key, "the release failed; releasing it again in the background");
        let mut orphan = Orphan::new(lease.key.clone(), lease.owner, now, lease_time);
        if !planted(Defect::DropOrphanRelease) {
            orphan.leases = vec![lease.clone()];
        }
        orphan.min_lease_time = min_lease_time;
        Some(orphan)
    }

    /// The minimum lease to pass to each `release` of [`leases`](Self::leases): zero
    /// unless the orphan is a held lease whose own release failed
    /// ([`after_release`](Self::after_release)).
    pub fn min_lease_time(&self) -> Duration {
        self.min_lease_time
    }

    /// What a failed `try_acquire_slot` sent at `sent_at` may have taken: any of its slots.
    pub fn of_request(request: &SlotRequest<'_>, sent_at: Instant) -> Self {
        let inner = &request.request;
        let keys = request.slots().map(|(_, key)| key.clone());
        Orphan::of_keys(keys, inner.owner, sent_at, inner.lease_time)
    }

    /// The leases to pass to `release` (with [`min_lease_time`](Self::min_lease_time)), one
    /// per key not yet settled.
    pub fn leases(&self) -> &[Lease] {
        &self.leases
    }

    /// Whether a release's answer ends this round of releases: a transient error means
    /// the store is not answering now, so the group's other slots wait for the next round
    /// rather than each waiting out its own timeout (which would hold up every other
    /// orphan of the process).
    pub fn ends_round(answer: &Result<ReleaseOutcome, Error>) -> bool {
        matches!(answer, Err(err) if err.is_transient())
    }

    /// What follows one release of each of [`leases`](Self::leases), in their order
    /// (`answers` may stop short: the rest were not tried this round), answered at `now`
    /// (read by the caller): `Some(delay)` to
    /// release the unsettled ones again after `delay`, `None` when the cleanup is over. A
    /// key is settled once freed or after a permanent error; the others are released
    /// again until one lease after the store first answered, or until the store has not
    /// answered for [`OUTAGE`](Self::OUTAGE) (see [`Orphan`]).
    pub fn after_releases(
        &mut self,
        answers: &[Result<ReleaseOutcome, Error>],
        now: Instant,
    ) -> Option<Duration> {
        if self.until.is_none() && answers.iter().any(Result::is_ok) {
            let until = now.checked_add(self.lease_time).unwrap_or(now);
            self.backoff.extend_until(until);
            self.until = Some(until);
        }
        let mut answers = answers.iter();
        self.leases.retain(|lease| {
            let key = &lease.key;
            match answers.next() {
                Some(Ok(ReleaseOutcome::Released)) => {
                    tracing::info!(lock = %key, "released a possibly orphaned lease in the background");
                    !self.freed_settles
                }
                Some(Ok(ReleaseOutcome::NotHeld)) | None => true,
                Some(Err(err)) if err.is_transient() => {
                    tracing::debug!(lock = %key, error = %err, "releasing a possibly orphaned lease failed; retrying");
                    true
                }
                Some(Err(err)) => {
                    tracing::warn!(lock = %key, error = %err, "could not release a possibly orphaned lease; it runs out with its lease");
                    false
                }
            }
        });
        if self.leases.is_empty() {
            return None;
        }
        let delay = self.backoff.next_delay(now)?;
        match self.until {
            Some(until) => {
                let left = until
                    .checked_duration_since(now)
                    .filter(|left| !left.is_zero())?;
                Some(delay.min(left))
            }
            None => Some(delay),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{BackendError, BackendErrorKind};

    /// An orphan of a request sent at `sent_at`.
    fn orphan_at(sent_at: Instant, lease_time: Duration) -> Orphan {
        let key = LockName::new("k").unwrap();
        Orphan::new(key, OwnerToken::random(), sent_at, lease_time)
    }

    fn backend_error(kind: BackendErrorKind) -> Result<ReleaseOutcome, Error> {
        Err(BackendError::new("test", "k", kind, "boom").into())
    }

    #[test]
    fn retries_until_freed_with_growing_capped_delays() {
        let t0 = Instant::now();
        let mut o = orphan_at(t0, Duration::from_secs(60));
        let delays: Vec<Duration> = (0..10)
            .map(|i| {
                let answer = if i % 2 == 0 {
                    Ok(ReleaseOutcome::NotHeld)
                } else {
                    backend_error(BackendErrorKind::Transient)
                };
                o.after_releases(&[answer], t0).unwrap()
            })
            .collect();
        assert!(delays[0] <= Orphan::INITIAL);
        assert!(delays.iter().all(|d| *d <= Orphan::MAX));
        assert!(delays[9] >= Orphan::MAX / 2);
        assert_eq!(o.after_releases(&[Ok(ReleaseOutcome::Released)], t0), None);
    }

    #[test]
    fn stops_on_a_permanent_error_and_one_lease_after_the_store_answered() {
        let t0 = Instant::now();
        let mut o = orphan_at(t0, Duration::from_secs(60));
        assert_eq!(
            o.after_releases(&[backend_error(BackendErrorKind::Permanent)], t0),
            None
        );
        let lease = Duration::from_millis(40);
        let mut short = orphan_at(t0, lease);
        // Answered: the request may still land within a lease.
        let first = short.after_releases(&[Ok(ReleaseOutcome::NotHeld)], t0);
        assert!(first.is_some_and(|delay| delay <= lease));
        let later = t0 + lease + Duration::from_millis(10);
        assert_eq!(
            short.after_releases(&[Ok(ReleaseOutcome::NotHeld)], later),
            None
        );
        assert_eq!(short.leases()[0].fencing_token, 0);
    }

    #[test]
    fn a_store_that_does_not_answer_is_released_past_the_lease() {
        // A request stuck in a paused server lands when it goes on, whenever that is.
        let t0 = Instant::now();
        let mut o = orphan_at(t0, Duration::from_millis(1));
        let unreachable = backend_error(BackendErrorKind::Transient);
        let t1 = t0 + Duration::from_millis(5);
        assert!(o.after_releases(&[unreachable], t1).is_some());
        // Answered at last: one lease more, then over.
        assert!(
            o.after_releases(&[Ok(ReleaseOutcome::NotHeld)], t1)
                .is_some()
        );
        let t2 = t1 + Duration::from_millis(5);
        assert_eq!(o.after_releases(&[Ok(ReleaseOutcome::NotHeld)], t2), None);
    }

    #[test]
    fn an_outage_longer_than_the_bound_ends_the_cleanup() {
        let key = || LockName::new("k").unwrap();
        let outage = Duration::from_millis(20);
        let sent_at = Instant::now();
        let mut short =
            Orphan::with_outage([key()], OwnerToken::random(), sent_at, outage / 4, outage);
        // A lease longer than the bound is the bound.
        let mut long =
            Orphan::with_outage([key()], OwnerToken::random(), sent_at, outage * 10, outage);
        let later = sent_at + outage + Duration::from_millis(10);
        let unreachable = || backend_error(BackendErrorKind::Transient);
        assert_eq!(short.after_releases(&[unreachable()], later), None);
        assert!(long.after_releases(&[unreachable()], later).is_some());
        // The bound in use is minutes: longer than pauses, failovers and restarts.
        assert!(Orphan::OUTAGE >= Duration::from_secs(60));
    }

    #[test]
    fn the_cleanup_ends_by_the_given_now_not_the_machines_clock() {
        // Sent an hour from now as the machine's clock goes: only the given instants can
        // end the releases.
        let sent_at = Instant::now() + Duration::from_secs(3600);
        let lease = Duration::from_secs(30);
        let unreachable = || backend_error(BackendErrorKind::Transient);
        let mut o = orphan_at(sent_at, lease);
        let over = sent_at + Orphan::OUTAGE;
        assert!(
            o.after_releases(&[unreachable()], over - Duration::from_millis(1))
                .is_some(),
            "within the outage bound"
        );
        assert_eq!(o.after_releases(&[unreachable()], over), None, "past it");

        let mut answered = orphan_at(sent_at, lease);
        let at = sent_at + Duration::from_secs(1);
        let delay = answered.after_releases(&[Ok(ReleaseOutcome::NotHeld)], at);
        assert!(delay.is_some_and(|d| d <= Orphan::INITIAL));
        let end = at + lease;
        let last = answered.after_releases(
            &[Ok(ReleaseOutcome::NotHeld)],
            end - Duration::from_millis(1),
        );
        assert_eq!(last, Some(Duration::from_millis(1)), "cut to the end");
        assert_eq!(
            answered.after_releases(&[Ok(ReleaseOutcome::NotHeld)], end),
            None,
            "one lease after the store answered"
        );

        // A held lease whose release failed counts its outage from the given instant.
        let held = Lease::new(
            LockName::new("k").unwrap(),
            OwnerToken::random(),
            "node",
            7,
            SystemTime::now(),
            SystemTime::now(),
        );
        let mut again =
            Orphan::after_release(&held, lease, Duration::ZERO, &unreachable(), sent_at).unwrap();
        assert!(
            again
                .after_releases(&[unreachable()], over - Duration::from_millis(1))
                .is_some()
        );
        assert_eq!(again.after_releases(&[unreachable()], over), None);
    }

    #[test]
    fn a_groups_orphan_releases_each_slot_until_each_is_settled() {
        let keys = ["g", "g#1", "g#2"].map(|k| LockName::new(k).unwrap());
        let mut o = Orphan::of_keys(
            keys,
            OwnerToken::random(),
            Instant::now(),
            Duration::from_secs(60),
        );
        let freed_one = [
            Ok(ReleaseOutcome::NotHeld),
            Ok(ReleaseOutcome::Released),
            backend_error(BackendErrorKind::Transient),
        ];
        assert!(o.after_releases(&freed_one, Instant::now()).is_some());
        let left: Vec<&str> = o.leases().iter().map(|l| l.key.as_str()).collect();
        assert_eq!(
            left,
            ["g", "g#2"],
            "the freed slot is settled, the others are not"
        );
        let settled = [
            backend_error(BackendErrorKind::Permanent),
            Ok(ReleaseOutcome::Released),
        ];
        assert_eq!(o.after_releases(&settled, Instant::now()), None);
        assert!(o.leases().is_empty());
    }

    #[test]
    fn a_late_attempt_of_a_terms_token_is_released_for_a_lease_even_after_a_release_freed_it() {
        let key = LockName::new("k").unwrap();
        let lease = Duration::from_millis(40);
        let t0 = Instant::now();
        let mut o = Orphan::after_term(key, OwnerToken::random(), t0, lease);
        // The first release freed the term's own lease: the attempt may still land.
        assert!(
            o.after_releases(&[Ok(ReleaseOutcome::Released)], t0)
                .is_some()
        );
        assert_eq!(
            o.leases().len(),
            1,
            "not settled by a release that freed it"
        );
        assert!(
            o.after_releases(&[Ok(ReleaseOutcome::Released)], t0)
                .is_some()
        );
        let later = t0 + lease + Duration::from_millis(10);
        assert_eq!(
            o.after_releases(&[Ok(ReleaseOutcome::NotHeld)], later),
            None
        );
    }

    #[test]
    fn a_round_that_stops_at_an_unreachable_store_keeps_the_slots_it_did_not_try() {
        let keys = ["g", "g#1", "g#2"].map(|k| LockName::new(k).unwrap());
        let mut o = Orphan::of_keys(
            keys,
            OwnerToken::random(),
            Instant::now(),
            Duration::from_secs(60),
        );
        let unreachable = backend_error(BackendErrorKind::Transient);
        assert!(Orphan::ends_round(&unreachable));
        assert!(!Orphan::ends_round(&Ok(ReleaseOutcome::NotHeld)));
        assert!(o.after_releases(&[unreachable], Instant::now()).is_some());
        assert_eq!(o.leases().len(), 3, "none settled");
    }
}
