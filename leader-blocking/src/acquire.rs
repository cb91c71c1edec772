//! The blocking acquire loop: the decisions come from [`Attempts`]; this only does the I/O.

use std::time::Instant;

use leader_core::{Attempts, Error, LeaderElectionOptions, LockBackend, LockName, Step};

/// Tries to acquire `key` within `options.wait_time()`; never returns `Step::RetryAfter`.
pub(crate) fn acquire<B: LockBackend>(
    backend: &B,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    let mut attempts = Attempts::new(key, options);
    loop {
        let listener = attempts.listen(backend);
        let sent_at = Instant::now();
        match attempts.on_outcome(backend.try_acquire(attempts.request())?, sent_at) {
            Step::RetryAfter(delay) => match listener {
                Some(listener) => {
                    listener.wait_timeout(delay);
                }
                None => std::thread::sleep(delay),
            },
            done => return Ok(done),
        }
    }
}
