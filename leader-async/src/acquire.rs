//! The async acquire loop: the decisions come from [`Attempts`]; this only does the I/O.

use std::time::Instant;

use leader_core::{AsyncLockBackend, Attempts, Error, LeaderElectionOptions, LockName, Step};

use crate::rt;

/// Tries to acquire `key` within `options.wait_time()`; never returns `Step::RetryAfter`.
pub(crate) async fn acquire<B: AsyncLockBackend>(
    backend: &B,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    let mut attempts = Attempts::new(key, options);
    loop {
        let listener = attempts.listen(backend);
        let sent_at = Instant::now();
        let outcome = backend.try_acquire(attempts.request()).await?;
        match attempts.on_outcome(outcome, sent_at) {
            Step::RetryAfter(delay) => match listener {
                Some(listener) => {
                    rt::timeout(delay, listener).await;
                }
                None => rt::sleep(delay).await,
            },
            done => return Ok(done),
        }
    }
}
