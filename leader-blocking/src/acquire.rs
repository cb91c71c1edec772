//! The blocking acquire loop: the decisions come from [`Attempts`]; this only does the I/O.

use std::sync::Arc;
use std::time::Instant;

use leader_core::__private::{AcquireProbe, Attempts, Orphan, SharedSide, Step, random_slot};
use leader_core::{
    Backend, Error, GroupKeys, LeaderElectionOptions, LockBackend, LockName, ReleaseRequest,
    SharedLockBackend, SlotOutcome, SlotRequest,
};

use crate::orphan::release_orphan;

/// Tries to acquire `key` within `options.wait_time()`; never returns `Step::RetryAfter`.
///
/// A request that fails may still have been applied (its answer was lost), so its owner
/// token is released in the background before the error is returned. An acquisition
/// answered after its lease's deadline is released in the background too and counts as a
/// failed attempt: retried within the wait, then [`Error::LeaseLost`].
pub(crate) fn acquire<B: LockBackend + 'static>(
    backend: &Arc<B>,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    drive(backend, &mut Attempts::new(backend.name(), key, options))
}

/// Tries to acquire one slot of the group `keys` within `options.wait_time()`, every
/// attempt trying the slots from the same random one: the step, and the slot an
/// `Acquired` step holds.
pub(crate) fn acquire_slot<B: LockBackend + 'static>(
    backend: &Arc<B>,
    options: &LeaderElectionOptions,
    keys: &GroupKeys,
) -> Result<(Step, u32), Error> {
    let first = random_slot(keys.len());
    let mut attempts = Attempts::for_group(backend.name(), keys, first, options);
    let step = drive(backend, &mut attempts)?;
    Ok((step, attempts.slot()))
}

/// Tries one side (read or write) of the read/write lock `key` within
/// `options.wait_time()`, as [`acquire`] does a lock. A writer that gives up while queued
/// behind readers withdraws its intent (released as an orphan), so it holds no reader out.
pub(crate) fn acquire_shared<B: SharedLockBackend + 'static>(
    side: &Arc<SharedSide<B>>,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    let mut attempts = Attempts::new(side.name(), key, options);
    drive_with(side, &mut attempts, |request| {
        side.try_acquire_queued(request.request)
    })
}

fn drive<B: LockBackend + 'static>(
    backend: &Arc<B>,
    attempts: &mut Attempts<'_>,
) -> Result<Step, Error> {
    drive_with(backend, attempts, |request| {
        Ok((backend.try_acquire_slot(request)?, false))
    })
}

/// The acquire loop, sending each attempt with `send`: its answer, and whether it left
/// something in the store that is no hold (a writer's intent), to withdraw if the loop
/// gives up.
fn drive_with<B: LockBackend + 'static>(
    backend: &Arc<B>,
    attempts: &mut Attempts<'_>,
    mut send: impl FnMut(SlotRequest<'_>) -> Result<(SlotOutcome, bool), Error>,
) -> Result<Step, Error> {
    let probe = AcquireProbe::start(backend.name(), &attempts.request());
    let mut left = false;
    let result = probe.span().in_scope(|| {
        loop {
            let listener = attempts.listen(&**backend);
            let request = attempts.request();
            let sent_at = Instant::now();
            let (outcome, leaves) = send(request).inspect_err(|_| {
                release_orphan(Arc::clone(backend), Orphan::of_request(&request, sent_at));
            })?;
            probe.answered(sent_at);
            // Once queued, the owner's intent may be in the store until the loop ends.
            left |= leaves;
            let delay = match attempts.on_outcome(outcome, sent_at, Instant::now()) {
                Step::RetryAfter(delay) => delay,
                Step::Late(late) => {
                    let (orphan, next) = late.into_parts();
                    release_orphan(Arc::clone(backend), orphan);
                    next?
                }
                done => {
                    if left && !matches!(done, Step::Acquired(..)) {
                        withdraw(backend, Orphan::of_request(&request, sent_at));
                    }
                    return Ok(done);
                }
            };
            match listener {
                Some(listener) => {
                    listener.wait_timeout(delay);
                }
                None => std::thread::sleep(delay),
            }
        }
    });
    probe.finish(&result);
    result
}

/// Withdraws what a loop that gave up left in the store (a writer's intent) before it
/// returns, so that a process that exits right after leaves nothing behind; in the
/// background, as an orphan, when the store does not answer.
fn withdraw<B: LockBackend + 'static>(backend: &Arc<B>, orphan: Orphan) {
    let released = orphan.leases().iter().all(|lease| {
        backend
            .release(ReleaseRequest::new(lease, orphan.min_lease_time()))
            .is_ok()
    });
    if !released {
        release_orphan(Arc::clone(backend), orphan);
    }
}
