//! The acquire loop's decisions, shared by the blocking and the async electors.
//!
//! The electors only do the I/O (call `try_acquire_slot`, wait); what to ask for, when to give
//! up, how long to wait and whether an answer came too late to act on are decided here, once.

use std::time::{Duration, Instant};

use crate::config::options::LeaderElectionOptions;
use crate::engine::late::{answered_late, is_late};
use crate::engine::orphan::Orphan;
use crate::engine::retry::Backoff;
use crate::error::Error;
use crate::name::LockName;
use crate::spi::backend::Backend;
use crate::spi::group::GroupKeys;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::outcome::SlotOutcome;
use crate::spi::release_events::ReleaseListener;
use crate::spi::request::{AcquireRequest, SlotRequest};
use crate::spi::state::LeaderLease;
use crate::telemetry::{AcquireEnd, AcquireProbe};

/// Drives the attempts to acquire one lock within `wait_time`.
///
/// One owner token is used for every attempt of the loop, so a retry after an attempt
/// whose answer was lost re-acquires (idempotently) rather than competing with itself —
/// until an attempt is answered after its lease's deadline ([`Step::Late`]): that lease is
/// released by its token in the background, so the attempts after it take a new token,
/// which that release can never free.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use leader_core::__private::{Attempts, Step};
/// use leader_core::{Backend, InMemoryBackend, LeaderElectionOptions, LockBackend, LockName};
///
/// let backend = InMemoryBackend::new();
/// let options = LeaderElectionOptions::default();
/// let key = LockName::new("job")?;
/// let mut attempts = Attempts::new(backend.name(), &key, &options);
/// let step = loop {
///     let listener = attempts.listen(&backend);
///     let sent = Instant::now();
///     let outcome = backend.try_acquire_slot(attempts.request())?;
///     let delay = match attempts.on_outcome(outcome, sent, Instant::now()) {
///         Step::RetryAfter(delay) => delay,
///         Step::Late(late) => {
///             let (orphan, next) = late.into_parts();
///             // ... release `orphan` in the background (the electors' `release_orphan`)
///             # drop(orphan);
///             next?
///         }
///         done => break done,
///     };
///     if let Some(l) = listener { l.wait_timeout(delay); }
/// };
/// assert!(matches!(step, Step::Acquired(..)));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Attempts<'a> {
    /// Every attempt asks for the same slots (one for a single lock) in the same order.
    request: SlotRequest<'a>,
    /// The slot the last `Acquired` attempt took.
    slot: u32,
    wait_time: Duration,
    lease_time: Duration,
    backoff: Option<Backoff>,
    /// The backend's name, for metrics.
    backend: &'static str,
}

/// What to do after an attempt.
#[derive(Debug)]
pub enum Step {
    /// Acquired; with the instant the winning request was sent (the lease's monotonic start).
    Acquired(Lease, Instant),
    /// Still held elsewhere and the wait is over; the last holder seen.
    GaveUp(Option<LeaderLease>),
    /// Wait this long (or until a release notification), then try again.
    RetryAfter(Duration),
    /// Acquired, but answered after the lease's deadline (`sent_at + lease_time`): the
    /// lease is lost before any action could start on it. Release it in the background,
    /// then retry or fail as [`LateLease::into_parts`] says.
    Late(LateLease),
}

/// A lease whose acquire was answered after its deadline (see [`Step::Late`]).
#[derive(Debug)]
pub struct LateLease {
    orphan: Orphan,
    next: Result<Duration, Error>,
}

impl LateLease {
    /// The lease to release in the background, by its owner token and without a minimum
    /// lease (the action never ran); and what follows: `Ok(delay)` to try again after
    /// `delay` (the attempt counts as a failed one, so the wait and its backoff decide),
    /// or, once the wait is over, [`Error::LeaseLost`] naming the lock.
    pub fn into_parts(self) -> (Orphan, Result<Duration, Error>) {
        (self.orphan, self.next)
    }
}

impl Step {
    /// For callers that must hold the lock (lock guards): the acquisition, or
    /// [`Error::NotAcquired`] naming `key` and the last holder seen.
    ///
    /// # Errors
    ///
    /// [`Error::NotAcquired`] unless the step is [`Step::Acquired`]; [`Error::LeaseLost`]
    /// for a [`Step::Late`].
    pub fn acquired_or_not(self, key: &LockName) -> Result<(Lease, Instant), Error> {
        match self {
            Step::Acquired(lease, sent_at) => Ok((lease, sent_at)),
            Step::GaveUp(holder) => Err(Error::NotAcquired {
                key: key.to_string(),
                holder: holder.map(Box::new),
            }),
            Step::RetryAfter(_) => Err(Error::NotAcquired {
                key: key.to_string(),
                holder: None,
            }),
            Step::Late(late) => Err(late.next.err().unwrap_or_else(|| Error::LeaseLost {
                key: key.to_string(),
            })),
        }
    }
}

impl<'a> Attempts<'a> {
    /// Attempts on `key` with a fresh owner token and `options`' lease, node id and wait,
    /// on the backend named `backend`.
    pub fn new(
        backend: &'static str,
        key: &'a LockName,
        options: &'a LeaderElectionOptions,
    ) -> Self {
        Attempts::starting(backend, SlotRequest::single(request(key, options)), options)
    }

    /// Attempts on the slots of a leader group (`keys`), each one asking for any slot,
    /// tried from slot `first` on; one owner token for all.
    ///
    /// An attempt that finds every slot held counts as one failed attempt: the wait and
    /// its backoff run between attempts, never between the slots of one.
    pub fn for_group(
        backend: &'static str,
        keys: &'a GroupKeys,
        first: usize,
        options: &'a LeaderElectionOptions,
    ) -> Self {
        let request = SlotRequest::group(request(keys.group(), options), keys, first);
        Attempts::starting(backend, request, options)
    }

    fn starting(
        backend: &'static str,
        request: SlotRequest<'a>,
        options: &'a LeaderElectionOptions,
    ) -> Self {
        Attempts {
            request,
            slot: 0,
            wait_time: options.wait_time(),
            lease_time: options.lease_time(),
            backoff: None,
            backend,
        }
    }

    /// The request for the next attempt.
    pub fn request(&self) -> SlotRequest<'a> {
        self.request
    }

    /// The slot an `Acquired` step holds: 0 for a single lock.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// Listens for a release of the key, when waiting is allowed and the backend notifies.
    /// Call it *before* the attempt, so a release in between is not missed.
    pub fn listen<B: Backend + ?Sized>(&self, backend: &B) -> Option<ReleaseListener> {
        if self.wait_time.is_zero() {
            return None;
        }
        // A group's waiters listen on its name, which every slot's release also wakes.
        backend
            .release_events()
            .map(|events| events.listen(self.request.group_name().as_str()))
    }

    /// Decides what follows an attempt sent at `sent_at`, answered at `now` (both read by
    /// the caller).
    ///
    /// An acquisition answered at or after its deadline (`sent_at + lease_time`) is
    /// [`Step::Late`], never [`Step::Acquired`]: it is counted in `leader_lease_lost_total`
    /// and logged, and the attempts after it use a new owner token. The wait is over once
    /// `now` reaches the first attempt's `sent_at` plus `wait_time`.
    pub fn on_outcome(&mut self, outcome: SlotOutcome, sent_at: Instant, now: Instant) -> Step {
        let key = self.request.group_name();
        let holder = match outcome {
            SlotOutcome::Acquired { lease, .. } if is_late(sent_at, self.lease_time, now) => {
                let error = answered_late(self.backend, &lease.key, lease.fencing_token);
                let orphan = Orphan::new(lease.key, lease.owner, sent_at, self.lease_time);
                self.request.request.owner = OwnerToken::random();
                let next = self.next_delay(sent_at, now).ok_or(error);
                return Step::Late(LateLease { orphan, next });
            }
            SlotOutcome::Acquired { slot, lease } => {
                tracing::debug!(lock = %lease.key, fencing_token = lease.fencing_token, "acquired");
                self.slot = slot;
                return Step::Acquired(lease, sent_at);
            }
            SlotOutcome::Held(holder) => holder,
        };
        match self.next_delay(sent_at, now) {
            Some(delay) => Step::RetryAfter(delay),
            None => {
                tracing::debug!(lock = %key, holder = ?holder.as_ref().map(|h| &h.leader_id), "held elsewhere");
                Step::GaveUp(holder)
            }
        }
    }

    /// After a failed attempt (the first sent at `sent_at`) answered at `now`: how long to
    /// wait before the next, `None` once the wait is over.
    fn next_delay(&mut self, sent_at: Instant, now: Instant) -> Option<Duration> {
        let wait_time = self.wait_time;
        self.backoff
            .get_or_insert_with(|| Backoff::starting_at(sent_at, wait_time))
            .next_delay(now)
    }
}

/// The acquire request of `options` for `key`, with a fresh owner token.
pub(crate) fn request<'a>(
    key: &'a LockName,
    options: &'a LeaderElectionOptions,
) -> AcquireRequest<'a> {
    AcquireRequest::new(
        key,
        OwnerToken::random(),
        options.node_id(),
        options.lease_time(),
    )
    .with_db_time(options.use_db_time())
}

impl AcquireProbe<'_> {
    /// The call ended with `result`.
    pub fn finish(&self, result: &Result<Step, Error>) {
        match result {
            Ok(Step::Acquired(lease, _)) => self.end(AcquireEnd::Acquired, Some(lease)),
            Ok(_) => self.end(AcquireEnd::Skipped, None),
            Err(_) => self.end(AcquireEnd::Failed, None),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::embedded::memory::InMemoryBackend;
    use crate::spi::backend::LockBackend;
    use crate::spi::group::GroupSlots;

    fn attempt(backend: &InMemoryBackend, attempts: &mut Attempts<'_>) -> Step {
        let outcome = backend.try_acquire_slot(attempts.request()).unwrap();
        let now = Instant::now();
        attempts.on_outcome(outcome, now, now)
    }

    #[test]
    fn an_acquisition_answered_after_its_deadline_is_late_and_lost_once_the_wait_is_over() {
        let backend = InMemoryBackend::new();
        let key = LockName::new("job").unwrap();
        let lease_time = Duration::from_millis(50);
        // Sent 60 ms ago as far as the deadline goes: answered after the lease.
        let sent_at = Instant::now()
            .checked_sub(Duration::from_millis(60))
            .unwrap();
        for (wait_time, retries) in [(Duration::ZERO, false), (Duration::from_secs(60), true)] {
            let options = LeaderElectionOptions::default()
                .with_lease_time(lease_time)
                .with_wait_time(wait_time);
            let mut attempts = Attempts::new("memory", &key, &options);
            let owner = attempts.request().request.owner;
            let outcome = backend.try_acquire_slot(attempts.request()).unwrap();
            let step = attempts.on_outcome(outcome, sent_at, Instant::now());
            let Step::Late(late) = step else {
                panic!("a late answer must not be acted on: {step:?}");
            };
            let (orphan, next) = late.into_parts();
            assert_eq!(
                orphan.leases()[0].owner,
                owner,
                "the late lease is released"
            );
            assert_eq!(orphan.leases()[0].key, key);
            match next {
                Ok(_) => assert!(retries, "no wait: lost at once"),
                Err(Error::LeaseLost { key }) => {
                    assert!(!retries, "retried within the wait");
                    assert_eq!(key, "job");
                }
                Err(other) => panic!("{other}"),
            }
            assert_ne!(
                attempts.request().request.owner,
                owner,
                "the release of the late lease cannot free a later attempt's"
            );
            backend
                .release(crate::spi::request::ReleaseRequest::new(
                    &orphan.leases()[0],
                    Duration::ZERO,
                ))
                .unwrap();
        }
    }

    #[test]
    fn a_group_attempt_takes_the_first_free_slot_from_its_start_or_gives_up() {
        let backend = InMemoryBackend::new();
        let key = LockName::new("consumers").unwrap();
        let keys = GroupSlots::new(3).unwrap().keys(&key).unwrap();
        let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
        for first in [0, 2] {
            let mut other = Attempts::for_group("memory", &keys, first, &options);
            assert!(matches!(attempt(&backend, &mut other), Step::Acquired(..)));
            assert_eq!(other.slot(), u32::try_from(first).unwrap());
        }

        // From slot 2: held, then slot 0: held, then slot 1: free.
        let mut attempts = Attempts::for_group("memory", &keys, 2, &options);
        let Step::Acquired(lease, _) = attempt(&backend, &mut attempts) else {
            panic!("slot 1 was free");
        };
        assert_eq!((lease.key.as_str(), attempts.slot()), ("consumers#1", 1));

        // Now full: the one attempt (no wait) finds every slot held.
        let mut attempts = Attempts::for_group("memory", &keys, 1, &options);
        let step = attempt(&backend, &mut attempts);
        assert!(matches!(step, Step::GaveUp(Some(_))), "{step:?}");
    }

    #[test]
    fn lateness_and_the_end_of_the_wait_follow_the_given_now_not_the_machines_clock() {
        let key = LockName::new("job").unwrap();
        let lease_time = Duration::from_secs(30);
        let wait_time = Duration::from_secs(10);
        let options = LeaderElectionOptions::default()
            .with_lease_time(lease_time)
            .with_wait_time(wait_time);
        // Sent an hour from now as the machine's clock goes: only the given instants can
        // make an answer late or end the wait.
        let sent_at = Instant::now() + Duration::from_secs(3600);

        let backend = InMemoryBackend::new();
        let mut attempts = Attempts::new("memory", &key, &options);
        let outcome = backend.try_acquire_slot(attempts.request()).unwrap();
        let deadline = crate::engine::late::lease_deadline(sent_at, lease_time).unwrap();
        let late = attempts.on_outcome(outcome, sent_at, deadline);
        assert!(matches!(late, Step::Late(_)), "{late:?}");

        let backend = InMemoryBackend::new();
        let mut attempts = Attempts::new("memory", &key, &options);
        let outcome = backend.try_acquire_slot(attempts.request()).unwrap();
        let step = attempts.on_outcome(outcome, sent_at, deadline - Duration::from_millis(1));
        assert!(
            matches!(step, Step::Acquired(_, at) if at == sent_at),
            "{step:?}"
        );

        // Held by the first: retried within the wait, given up at its end.
        let mut waiting = Attempts::new("memory", &key, &options);
        let outcome = backend.try_acquire_slot(waiting.request()).unwrap();
        let step = waiting.on_outcome(outcome, sent_at, sent_at + Duration::from_secs(1));
        assert!(matches!(step, Step::RetryAfter(_)), "{step:?}");
        let outcome = backend.try_acquire_slot(waiting.request()).unwrap();
        let step = waiting.on_outcome(
            outcome,
            sent_at + Duration::from_secs(9),
            sent_at + wait_time,
        );
        assert!(matches!(step, Step::GaveUp(Some(_))), "{step:?}");
    }
}
