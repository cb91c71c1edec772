//! What the kit does with a call's answer, the same for the blocking and the async side:
//! trace it, name its failure, wake local waiters, spread a batch's answers over its locks.

use std::time::Instant;

use crate::error::{BackendErrorKind, Error};
use crate::kit::call::{Call, Failure};
use crate::kit::store::{Released, Store};
use crate::name::LockName;
use crate::spi::listing::ForceReleaseOutcome;
use crate::spi::outcome::ReleaseOutcome;
use crate::spi::request::ReleaseRequest;

/// The trace of one call: when it was sent, taken only when the call's `debug` event will
/// be recorded (most calls are not traced; they pay for no clock read).
pub(super) struct Trace(Option<Instant>);

impl Trace {
    /// A call is about to be sent.
    pub(super) fn start() -> Trace {
        Trace(tracing::enabled!(tracing::Level::DEBUG).then(Instant::now))
    }

    /// The call of `C`'s kind about `key`, on `backend`, answered `answer`: one `debug`
    /// event, when it is recorded.
    pub(super) fn end<C: Call>(
        self,
        backend: &'static str,
        key: &str,
        answer: &Result<C::Output, Failure>,
    ) {
        let Some(started) = self.0 else { return };
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        match answer {
            Ok(output) => tracing::debug!(
                backend,
                lock = %key,
                op = C::NAME,
                outcome = C::outcome(output),
                micros,
                "{backend} lock call"
            ),
            Err(failure) => tracing::debug!(
                backend,
                lock = %key,
                op = C::NAME,
                outcome = "error",
                transient = matches!(failure.kind(), BackendErrorKind::Transient),
                error = %failure,
                micros,
                "{backend} lock call failed"
            ),
        }
    }
}

/// The lock a batch call's trace names: its first.
pub(super) fn first_key<'k>(mut keys: impl Iterator<Item = &'k LockName>) -> &'k str {
    keys.next().map_or("", LockName::as_str)
}

/// A single call's answer, its failure named by `key`.
pub(super) fn named<T>(
    backend: &'static str,
    key: &str,
    answer: Result<T, Failure>,
) -> Result<T, Error> {
    answer.map_err(|failure| failure.named(backend, key))
}

/// A batch call's answers, one per lock of `keys` in order: each failure named by its own
/// lock; a failure of the whole call each lock's, named by each; a lock the store left
/// unanswered an error.
pub(super) fn per_lock<'k, T>(
    backend: &'static str,
    keys: impl IntoIterator<Item = &'k LockName>,
    answers: Result<Vec<Result<T, Failure>>, Failure>,
) -> Vec<Result<T, Error>> {
    let keys = keys.into_iter();
    match answers {
        Ok(items) => {
            let mut items = items.into_iter();
            keys.map(|key| match items.next() {
                Some(item) => named(backend, key.as_str(), item),
                None => Err(crate::engine::unanswered(backend, key)),
            })
            .collect()
        }
        Err(whole) => keys
            .map(|key| Err(whole.of_batch().named(backend, key.as_str())))
            .collect(),
    }
}

/// After a release of `release`'s lease answered `released`: waiters in this process wake
/// at once when it freed the lock.
pub(super) fn released<S: Store>(
    store: &S,
    release: &ReleaseRequest<'_>,
    released: Released,
) -> ReleaseOutcome {
    if released == Released::Freed
        && let Some(waiters) = store.local_waiters()
    {
        waiters.notify_token(release.lease.key.as_str(), release.lease.fencing_token);
    }
    released.outcome()
}

/// After a force release of `key` answered `outcome`: waiters in this process wake as after
/// a release.
pub(super) fn force_released<S: Store>(store: &S, key: &LockName, outcome: &ForceReleaseOutcome) {
    if let ForceReleaseOutcome::Released(holder) = outcome
        && let Some(waiters) = store.local_waiters()
    {
        waiters.notify_token(key.as_str(), holder.fencing_token);
    }
}
