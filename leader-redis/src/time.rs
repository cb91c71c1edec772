//! Lease times the scripts are given: at most 1,000 years. A longer one (up to
//! `Duration::MAX`) would overflow the server's `PX` arithmetic mid-script and leave a lock
//! record without expiry, held forever; it is refused before anything is sent, and the
//! other requests of a batch go on.

use std::time::Duration;

use leader_core::kit::Failure;
use leader_core::{BackendError, BackendErrorKind, LeaseTooLong, LockName, MAX_SERVER_LEASE};

use crate::backend::RedisBackend;
use crate::error::BACKEND;

/// The longest lease: [`MAX_SERVER_LEASE`], far inside what `PX` holds (milliseconds in
/// an `i64`, on top of the server's clock).
pub(crate) const MAX_LEASE: Duration = MAX_SERVER_LEASE;

/// The items of a batch whose lease the scripts take, and where the refused ones were.
#[derive(Debug)]
pub(crate) struct Checked<I> {
    pub(crate) valid: Vec<I>,
    refused: Vec<(usize, Failure)>,
}

impl<I> Checked<I> {
    /// The answers of the whole batch, in its order: `answers` (one per valid item, in
    /// their order) with each refused item's error put back in its place.
    pub(crate) fn answers<T>(self, answers: Vec<Result<T, Failure>>) -> Vec<Result<T, Failure>> {
        if self.refused.is_empty() {
            return answers;
        }
        let total = answers.len() + self.refused.len();
        let mut refused = self.refused.into_iter().peekable();
        let mut answers = answers.into_iter();
        (0..total)
            .filter_map(|at| match refused.next_if(|(index, _)| *index == at) {
                Some((_, err)) => Some(Err(err)),
                None => answers.next(),
            })
            .collect()
    }
}

impl RedisBackend {
    /// The permanent failure of a lease of `lease` on `key` (its error names the lock's
    /// Redis key), or `Ok` when it is not too long.
    pub(crate) fn check_lease(&self, key: &LockName, lease: Duration) -> Result<(), Failure> {
        refuse_too_long(lease, || self.lock_key(key))
    }

    /// [`check_lease`](Self::check_lease) for the read/write lock `key`: its error names
    /// the read/write lock's Redis key.
    pub(crate) fn check_shared_lease(
        &self,
        key: &LockName,
        lease: Duration,
    ) -> Result<(), Failure> {
        refuse_too_long(lease, || self.shared_key(key))
    }

    /// `items` split into those whose lease the scripts take and the refused ones.
    pub(crate) fn check_leases<I: Copy>(
        &self,
        items: &[I],
        lease: impl Fn(&I) -> Duration,
        key: impl Fn(&I) -> &LockName,
    ) -> Checked<I> {
        let mut checked = Checked {
            valid: Vec::with_capacity(items.len()),
            refused: Vec::new(),
        };
        for (at, item) in items.iter().enumerate() {
            match self.check_lease(key(item), lease(item)) {
                Ok(()) => checked.valid.push(*item),
                Err(err) => checked.refused.push((at, err)),
            }
        }
        checked
    }
}

/// The permanent failure of a lease of `lease`, its error naming `redis_key()`, or `Ok`
/// when it is not too long.
fn refuse_too_long(lease: Duration, redis_key: impl FnOnce() -> String) -> Result<(), Failure> {
    LeaseTooLong::check(lease, MAX_LEASE)
        .map(drop)
        .map_err(|too_long| {
            let kind = BackendErrorKind::Permanent;
            let error = BackendError::new(BACKEND, redis_key(), kind, too_long);
            Failure::from_error(error.into())
        })
}

/// A minimum lease for the scripts: one longer than [`MAX_LEASE`] is longer than any
/// lease, so it means the same as `MAX_LEASE` (the lock is kept until its lease ends).
pub(crate) fn min_lease(min_lease_time: Duration) -> Duration {
    min_lease_time.min(MAX_LEASE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> Failure {
        let error = BackendError::new(BACKEND, text, BackendErrorKind::Permanent, "refused");
        Failure::from_error(error.into())
    }

    #[test]
    fn refused_answers_go_back_in_their_places() {
        let checked = Checked::<u8> {
            valid: vec![1, 3],
            refused: vec![(0, err("a")), (2, err("c")), (4, err("e"))],
        };
        let answers = checked.answers(vec![Ok(1), Ok(3)]);
        let shown: Vec<String> = answers
            .into_iter()
            .map(|answer| match answer {
                Ok(n) => n.to_string(),
                Err(failure) => {
                    let err = failure.named(BACKEND, "unused");
                    err.lock_key().unwrap_or_default().to_owned()
                }
            })
            .collect();
        assert_eq!(shown, ["a", "1", "c", "3", "e"]);
        let none = Checked::<u8> {
            valid: vec![1],
            refused: Vec::new(),
        };
        assert_eq!(none.answers(vec![Ok(7)]).len(), 1);
    }

    #[test]
    fn a_minimum_lease_is_cut_to_the_longest_lease() {
        assert_eq!(min_lease(Duration::MAX), MAX_LEASE);
        assert_eq!(min_lease(Duration::from_secs(5)), Duration::from_secs(5));
    }
}
