//! [`Orphan`]: a lease an acquire request may have taken without its caller learning of it.

use std::time::{Duration, Instant, SystemTime};

use crate::backend::ReleaseOutcome;
use crate::error::Error;
use crate::lease::{Lease, OwnerToken};
use crate::name::LockName;
use crate::retry::Backoff;

/// An acquisition that may exist without anyone holding it: the acquire request was sent,
/// then it failed (a response timeout, a dropped connection, a write-concern error) or
/// the caller stopped waiting for it (a dropped future). The server may have applied it —
/// or may still apply it, when the request sits in a paused server's socket or in a
/// driver's retry. Left alone, the lock would stay taken by an owner token nobody knows
/// for the whole lease (DESIGN §4.5).
///
/// The owner token is known before the request is sent, so electors release it: at once,
/// and again with backoff for as long as a lease taken by that request could still be live
/// (`lease_time` from when it was sent), until a release finds and frees it. A release that
/// finds nothing keeps the cleanup going, since the request may land later; a permanent
/// error ends it. Releasing by owner token can never touch another owner's lock.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_core::__private::Orphan;
/// use leader_core::{LockName, OwnerToken, ReleaseOutcome};
///
/// let key = LockName::new("nightly")?;
/// let mut orphan = Orphan::new(key, OwnerToken::random(), Instant::now(), Duration::from_secs(30));
/// // Nothing to release yet: the request may still land, so try again a little later.
/// assert!(orphan.after_release(&Ok(ReleaseOutcome::NotHeld)).is_some());
/// // Found and freed: done.
/// assert_eq!(orphan.after_release(&Ok(ReleaseOutcome::Released)), None);
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Orphan {
    lease: Lease,
    /// Paces the releases, and ends them when a lease the request took would be over.
    backoff: Backoff,
}

impl Orphan {
    /// The first delay's upper bound.
    pub const INITIAL: Duration = Duration::from_millis(10);
    /// The longest delay between two releases: a late-landing request frees again within it.
    pub const MAX: Duration = Duration::from_millis(500);

    /// The possible acquisition of `key` by `owner`, whose request was sent at `sent_at`
    /// asking for `lease_time`.
    pub fn new(key: LockName, owner: OwnerToken, sent_at: Instant, lease_time: Duration) -> Self {
        Orphan {
            // Backends identify a lease by key and owner token alone; the rest is unknown.
            lease: Lease::new(
                key,
                owner,
                String::new(),
                0,
                SystemTime::UNIX_EPOCH,
                SystemTime::UNIX_EPOCH,
            ),
            backoff: Backoff::with_bounds(sent_at, lease_time, Self::INITIAL, Self::MAX),
        }
    }

    /// The lease to pass to `release` (with no minimum lease: the action never ran).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// What follows a release attempt: `Some(delay)` to release again after `delay`,
    /// `None` when the cleanup is over (freed, past the lease, or a permanent error).
    pub fn after_release(&mut self, answer: &Result<ReleaseOutcome, Error>) -> Option<Duration> {
        let key = &self.lease.key;
        match answer {
            Ok(ReleaseOutcome::Released) => {
                tracing::info!(lock = %key, "released a lease taken by an acquire whose answer was lost");
                return None;
            }
            Ok(ReleaseOutcome::NotHeld) => {}
            Err(err) if err.is_transient() => {
                tracing::debug!(lock = %key, error = %err, "releasing a possibly orphaned lease failed; retrying");
            }
            Err(err) => {
                tracing::warn!(lock = %key, error = %err, "could not release a possibly orphaned lease; it runs out with its lease");
                return None;
            }
        }
        self.backoff.next_delay()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{BackendError, BackendErrorKind};

    fn orphan(lease_time: Duration) -> Orphan {
        let key = LockName::new("k").unwrap();
        Orphan::new(key, OwnerToken::random(), Instant::now(), lease_time)
    }

    fn backend_error(kind: BackendErrorKind) -> Result<ReleaseOutcome, Error> {
        Err(BackendError::new("test", "k", kind, "boom").into())
    }

    #[test]
    fn retries_until_freed_with_growing_capped_delays() {
        let mut o = orphan(Duration::from_secs(60));
        let delays: Vec<Duration> = (0..10)
            .map(|i| {
                let answer = if i % 2 == 0 {
                    Ok(ReleaseOutcome::NotHeld)
                } else {
                    backend_error(BackendErrorKind::Transient)
                };
                o.after_release(&answer).unwrap()
            })
            .collect();
        assert!(delays[0] <= Orphan::INITIAL);
        assert!(delays.iter().all(|d| *d <= Orphan::MAX));
        assert!(delays[9] >= Orphan::MAX / 2);
        assert_eq!(o.after_release(&Ok(ReleaseOutcome::Released)), None);
    }

    #[test]
    fn stops_on_a_permanent_error_and_after_the_lease() {
        let mut o = orphan(Duration::from_secs(60));
        assert_eq!(
            o.after_release(&backend_error(BackendErrorKind::Permanent)),
            None
        );
        let mut short = orphan(Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(3));
        assert_eq!(short.after_release(&Ok(ReleaseOutcome::NotHeld)), None);
        assert_eq!(short.lease().fencing_token, 0);
    }
}
