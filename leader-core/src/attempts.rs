//! The acquire loop's decisions, shared by the blocking and the async electors.
//!
//! The electors only do the I/O (call `try_acquire`, wait); what to ask for, when to give
//! up and how long to wait are decided here, once.

use std::time::{Duration, Instant};

use crate::backend::{AcquireOutcome, AcquireRequest, Backend};
use crate::error::Error;
use crate::events::ReleaseListener;
use crate::group::{GroupKeys, SlotPass};
use crate::lease::{Lease, OwnerToken};
use crate::name::LockName;
use crate::options::LeaderElectionOptions;
use crate::retry::Backoff;
use crate::state::LeaderLease;

/// Drives the attempts to acquire one lock within `wait_time`.
///
/// One owner token is used for every attempt of the loop, so a retry after an attempt
/// whose answer was lost re-acquires (idempotently) rather than competing with itself.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use leader_core::__private::{Attempts, Step};
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LockBackend, LockName};
///
/// let backend = InMemoryBackend::new();
/// let options = LeaderElectionOptions::default();
/// let key = LockName::new("job")?;
/// let mut attempts = Attempts::new(&key, &options);
/// let step = loop {
///     let listener = attempts.listen(&backend);
///     let sent = Instant::now();
///     match attempts.on_outcome(backend.try_acquire(attempts.request())?, sent) {
///         Step::RetryAfter(delay) => { if let Some(l) = listener { l.wait_timeout(delay); } }
///         done => break done,
///     }
/// };
/// assert!(matches!(step, Step::Acquired(..)));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Attempts<'a> {
    request: AcquireRequest<'a>,
    /// The keys tried in turn: the request's own for a single lock, one per slot for a group.
    keys: Keys<'a>,
    /// Where the pass over a group's slots stands (one slot for a single lock).
    pass: SlotPass,
    wait_time: Duration,
    backoff: Option<Backoff>,
}

#[derive(Debug, Clone, Copy)]
enum Keys<'a> {
    Single,
    Group(&'a GroupKeys),
}

/// What to do after an attempt.
#[derive(Debug)]
pub enum Step {
    /// Acquired; with the instant the winning request was sent (the lease's monotonic start).
    Acquired(Lease, Instant),
    /// Still held elsewhere and the wait is over; the last holder seen.
    GaveUp(Option<LeaderLease>),
    /// A leader group's slot was held: try the next slot of the pass now.
    TryNextSlot,
    /// Wait this long (or until a release notification), then try again.
    RetryAfter(Duration),
}

impl Step {
    /// For callers that must hold the lock (lock guards): the acquisition, or
    /// [`Error::NotAcquired`] naming `key` and the last holder seen.
    ///
    /// # Errors
    ///
    /// [`Error::NotAcquired`] unless the step is [`Step::Acquired`].
    pub fn acquired_or_not(self, key: &LockName) -> Result<(Lease, Instant), Error> {
        match self {
            Step::Acquired(lease, sent_at) => Ok((lease, sent_at)),
            Step::GaveUp(holder) => Err(Error::NotAcquired {
                key: key.to_string(),
                holder: holder.map(Box::new),
            }),
            Step::RetryAfter(_) | Step::TryNextSlot => Err(Error::NotAcquired {
                key: key.to_string(),
                holder: None,
            }),
        }
    }
}

impl<'a> Attempts<'a> {
    /// Attempts on `key` with a fresh owner token and `options`' lease, node id and wait.
    pub fn new(key: &'a LockName, options: &'a LeaderElectionOptions) -> Self {
        Attempts::starting(key, Keys::Single, SlotPass::starting_at(0, 1), options)
    }

    /// Attempts on the slots of a leader group (`keys`, slot 0 first, not empty), each pass
    /// trying every slot once in turn from where `pass` starts; one owner token for all.
    ///
    /// A pass that finds every slot held counts as one failed attempt: the wait and its
    /// backoff run between passes, not between slots.
    pub fn for_group(
        keys: &'a GroupKeys,
        pass: SlotPass,
        options: &'a LeaderElectionOptions,
    ) -> Self {
        Attempts::starting(keys.slot(pass.slot()), Keys::Group(keys), pass, options)
    }

    fn starting(
        key: &'a LockName,
        keys: Keys<'a>,
        pass: SlotPass,
        options: &'a LeaderElectionOptions,
    ) -> Self {
        Attempts {
            request: AcquireRequest::new(
                key,
                OwnerToken::random(),
                options.node_id(),
                options.lease_time(),
            )
            .with_db_time(options.use_db_time()),
            keys,
            pass,
            wait_time: options.wait_time(),
            backoff: None,
        }
    }

    /// The request for the next attempt.
    pub fn request(&self) -> AcquireRequest<'a> {
        self.request
    }

    /// The slot the next request (and so an `Acquired` step) is for: 0 for a single lock.
    pub fn slot(&self) -> u32 {
        self.pass.number()
    }

    /// Listens for a release of the key, when waiting is allowed and the backend notifies.
    /// Call it *before* the attempt, so a release in between is not missed.
    pub fn listen<B: Backend + ?Sized>(&self, backend: &B) -> Option<ReleaseListener> {
        if self.wait_time.is_zero() {
            return None;
        }
        // A group's waiters listen on its name, which every slot's release also wakes.
        let key = match self.keys {
            Keys::Single => self.request.key,
            Keys::Group(keys) => keys.group(),
        };
        backend
            .release_events()
            .map(|events| events.listen(key.as_str()))
    }

    /// Decides what follows an attempt sent at `sent_at`.
    pub fn on_outcome(&mut self, outcome: AcquireOutcome, sent_at: Instant) -> Step {
        let key = self.request.key;
        let holder = match outcome {
            AcquireOutcome::Acquired(lease) => {
                tracing::debug!(lock = %key, fencing_token = lease.fencing_token, "acquired");
                return Step::Acquired(lease, sent_at);
            }
            AcquireOutcome::Held(holder) => holder,
        };
        let wait_time = self.wait_time;
        let backoff = self
            .backoff
            .get_or_insert_with(|| Backoff::starting_at(sent_at, wait_time));
        if let Keys::Group(keys) = self.keys {
            let pass_goes_on = self.pass.held();
            self.request = self.request.with_key(keys.slot(self.pass.slot()));
            if pass_goes_on {
                return Step::TryNextSlot;
            }
        }
        let delay = backoff.next_delay();
        match delay {
            Some(delay) => Step::RetryAfter(delay),
            None => {
                tracing::debug!(lock = %key, holder = ?holder.as_ref().map(|h| &h.leader_id), "held elsewhere");
                Step::GaveUp(holder)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::backend::LockBackend;
    use crate::group::GroupSlots;
    use crate::memory::InMemoryBackend;

    fn outcome_of(backend: &InMemoryBackend, attempts: &Attempts<'_>) -> AcquireOutcome {
        backend.try_acquire(attempts.request()).unwrap()
    }

    #[test]
    fn a_group_pass_tries_each_slot_once_then_gives_up() {
        let backend = InMemoryBackend::new();
        let key = LockName::new("consumers").unwrap();
        let keys = GroupSlots::new(3).unwrap().keys(&key).unwrap();
        let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
        for slot in [0, 2] {
            let mut other = Attempts::for_group(&keys, SlotPass::starting_at(slot, 3), &options);
            let outcome = outcome_of(&backend, &other);
            assert!(matches!(
                other.on_outcome(outcome, Instant::now()),
                Step::Acquired(..)
            ));
        }

        // Starting at slot 2: held, then slot 0: held, then slot 1: free.
        let mut attempts = Attempts::for_group(&keys, SlotPass::starting_at(2, 3), &options);
        let mut tried = Vec::new();
        let step = loop {
            tried.push(attempts.slot());
            let outcome = outcome_of(&backend, &attempts);
            match attempts.on_outcome(outcome, Instant::now()) {
                Step::TryNextSlot => continue,
                step => break step,
            }
        };
        assert_eq!(tried, [2, 0, 1]);
        let Step::Acquired(lease, _) = step else {
            panic!("slot 1 was free: {step:?}");
        };
        assert_eq!((lease.key.as_str(), attempts.slot()), ("consumers#1", 1));

        // Now full: one pass over the three slots, then the wait (none) is over.
        let mut attempts = Attempts::for_group(&keys, SlotPass::starting_at(1, 3), &options);
        let mut passes = 0;
        let step = loop {
            passes += 1;
            let outcome = outcome_of(&backend, &attempts);
            match attempts.on_outcome(outcome, Instant::now()) {
                Step::TryNextSlot => continue,
                step => break step,
            }
        };
        assert!(matches!(step, Step::GaveUp(Some(_))), "{step:?}");
        assert_eq!(passes, 3);
    }
}
