//! The async acquire loop: the decisions come from [`Attempts`]; this only does the I/O.

use std::sync::Arc;
use std::time::Instant;

use leader_core::__private::{AcquireProbe, Attempts, Orphan, Step, random_slot};
use leader_core::{AsyncLockBackend, Error, GroupKeys, LeaderElectionOptions, LockName};

use tracing::Instrument;

use crate::on_drop::OnDrop;
use crate::orphan::release_orphan;
use crate::rt;

/// Tries to acquire `key` within `options.wait_time()`; never returns `Step::RetryAfter`.
///
/// # Cancel safety
///
/// Dropping the future while a request is in flight releases that request's owner token
/// in the background, as does a request that fails: no lock is left taken by an owner
/// nobody knows. An acquisition answered after its lease's deadline is released in the
/// background too and counts as a failed attempt: retried within the wait, then
/// [`Error::LeaseLost`].
pub(crate) async fn acquire<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    drive(backend, &mut Attempts::new(backend.name(), key, options)).await
}

/// Tries to acquire one slot of the group `keys` within `options.wait_time()`, every
/// attempt trying the slots from the same random one: the step, and the slot an
/// `Acquired` step holds. Cancel safe as [`acquire`].
pub(crate) async fn acquire_slot<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    options: &LeaderElectionOptions,
    keys: &GroupKeys,
) -> Result<(Step, u32), Error> {
    let first = random_slot(keys.len());
    let mut attempts = Attempts::for_group(backend.name(), keys, first, options);
    let step = drive(backend, &mut attempts).await?;
    Ok((step, attempts.slot()))
}

async fn drive<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    attempts: &mut Attempts<'_>,
) -> Result<Step, Error> {
    let probe = AcquireProbe::start(backend.name(), &attempts.request());
    // Instrumented where it is built: a future kept in a local and then wrapped would
    // take its room twice in the caller's future.
    let result = async {
        loop {
            let listener = attempts.listen(&**backend);
            let request = attempts.request();
            let sent_at = Instant::now();
            // Unless answered, the request may take the lock anyway: if this future is
            // dropped while it is on its way, or it fails, its owner token is released.
            let in_flight = OnDrop::new(|| {
                tracing::debug!(lock = %request.group_name(), "an acquire was cancelled or failed after it was sent: releasing its owner token");
                release_orphan(Arc::clone(backend), Orphan::of_request(&request, sent_at));
            });
            let outcome = backend.try_acquire_slot(request).await?;
            in_flight.disarm();
            probe.answered(sent_at);
            let delay = match attempts.on_outcome(outcome, sent_at, Instant::now()) {
                Step::RetryAfter(delay) => delay,
                Step::Late(late) => {
                    let (orphan, next) = late.into_parts();
                    release_orphan(Arc::clone(backend), orphan);
                    next?
                }
                done => return Ok(done),
            };
            match listener {
                Some(listener) => {
                    rt::timeout(delay, listener).await;
                }
                None => rt::sleep(delay).await,
            }
        }
    }
    .instrument(probe.span().clone())
    .await;
    probe.finish(&result);
    result
}
