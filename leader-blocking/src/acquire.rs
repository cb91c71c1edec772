//! The blocking acquire loop: the decisions come from [`Attempts`]; this only does the I/O.

use std::sync::Arc;
use std::time::Instant;

use leader_core::__private::{AcquireProbe, Attempts, Orphan, SlotPass, Step};
use leader_core::{Error, GroupKeys, LeaderElectionOptions, LockBackend, LockName};

use crate::orphan::release_orphan;

/// Tries to acquire `key` within `options.wait_time()`; never returns `Step::RetryAfter`
/// or `Step::TryNextSlot`.
///
/// A request that fails may still have been applied (its answer was lost), so its owner
/// token is released in the background before the error is returned (DESIGN §4.5).
pub(crate) fn acquire<B: LockBackend + 'static>(
    backend: &Arc<B>,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    drive(backend, &mut Attempts::new(key, options))
}

/// Tries to acquire one slot of the group `keys` within `options.wait_time()`, passes
/// starting at a random slot: the step, and the slot an `Acquired` step holds.
pub(crate) fn acquire_slot<B: LockBackend + 'static>(
    backend: &Arc<B>,
    options: &LeaderElectionOptions,
    keys: &GroupKeys,
) -> Result<(Step, u32), Error> {
    let mut attempts = Attempts::for_group(keys, SlotPass::random(keys.len()), options);
    let step = drive(backend, &mut attempts)?;
    Ok((step, attempts.slot()))
}

fn drive<B: LockBackend + 'static>(
    backend: &Arc<B>,
    attempts: &mut Attempts<'_>,
) -> Result<Step, Error> {
    let probe = AcquireProbe::start(backend.name(), &attempts.request());
    let result = probe.span().in_scope(|| {
        // One listener a pass: a group's slot released after it was tried still wakes
        // the wait that ends the pass.
        let mut listener = None;
        loop {
            if listener.is_none() {
                listener = attempts.listen(&**backend);
            }
            let request = attempts.request();
            let sent_at = Instant::now();
            let outcome = backend.try_acquire(request).inspect_err(|_| {
                let orphan = Orphan::new(
                    request.key.clone(),
                    request.owner,
                    sent_at,
                    request.lease_time,
                );
                release_orphan(Arc::clone(backend), orphan);
            })?;
            probe.answered(sent_at);
            match attempts.on_outcome(outcome, sent_at) {
                Step::TryNextSlot => {}
                Step::RetryAfter(delay) => match listener.take() {
                    Some(listener) => {
                        listener.wait_timeout(delay);
                    }
                    None => std::thread::sleep(delay),
                },
                done => return Ok(done),
            }
        }
    });
    probe.finish(&result);
    result
}
