//! The acquire loop's decisions, shared by the blocking and the async electors.
//!
//! The electors only do the I/O (call `try_acquire`, wait); what to ask for, when to give
//! up and how long to wait are decided here, once.

use std::time::{Duration, Instant};

use crate::backend::{AcquireOutcome, AcquireRequest, Backend};
use crate::error::Error;
use crate::events::ReleaseListener;
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
    wait_time: Duration,
    backoff: Option<Backoff>,
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
            Step::RetryAfter(_) => Err(Error::NotAcquired {
                key: key.to_string(),
                holder: None,
            }),
        }
    }
}

impl<'a> Attempts<'a> {
    /// Attempts on `key` with a fresh owner token and `options`' lease, node id and wait.
    pub fn new(key: &'a LockName, options: &'a LeaderElectionOptions) -> Self {
        Attempts {
            request: AcquireRequest::new(
                key,
                OwnerToken::random(),
                options.node_id(),
                options.lease_time(),
            )
            .with_db_time(options.use_db_time()),
            wait_time: options.wait_time(),
            backoff: None,
        }
    }

    /// The request for the next attempt.
    pub fn request(&self) -> AcquireRequest<'a> {
        self.request
    }

    /// Listens for a release of the key, when waiting is allowed and the backend notifies.
    /// Call it *before* the attempt, so a release in between is not missed.
    pub fn listen<B: Backend + ?Sized>(&self, backend: &B) -> Option<ReleaseListener> {
        if self.wait_time.is_zero() {
            return None;
        }
        backend
            .release_events()
            .map(|events| events.listen(self.request.key.as_str()))
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
        let delay = self
            .backoff
            .get_or_insert_with(|| Backoff::starting_at(sent_at, wait_time))
            .next_delay();
        match delay {
            Some(delay) => Step::RetryAfter(delay),
            None => {
                tracing::debug!(lock = %key, holder = ?holder.as_ref().map(|h| &h.leader_id), "held elsewhere");
                Step::GaveUp(holder)
            }
        }
    }
}
