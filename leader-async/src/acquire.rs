//! The async acquire loop: the decisions come from [`Attempts`]; this only does the I/O.

use std::sync::Arc;
use std::time::Instant;

use std::future::Future;

use leader_core::__private::{AcquireProbe, Attempts, Orphan, SharedSide, Step, random_slot};
use leader_core::{
    AsyncLockBackend, AsyncSharedLockBackend, Backend, Error, GroupKeys, LeaderElectionOptions,
    LockName, ReleaseRequest, SlotOutcome, SlotRequest,
};

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
    let mut attempts = Attempts::new(backend.name(), key, options);
    drive(backend, &mut attempts, &Slots(&**backend)).await
}

/// Tries one side (read or write) of the read/write lock `key` within
/// `options.wait_time()`, as [`acquire`] does a lock, and as cancel safe. A writer that
/// gives up while queued behind readers (or is dropped meanwhile) withdraws its intent
/// (released as an orphan), so it holds no reader out.
pub(crate) async fn acquire_shared<B: AsyncSharedLockBackend + 'static>(
    side: &Arc<SharedSide<B>>,
    options: &LeaderElectionOptions,
    key: &LockName,
) -> Result<Step, Error> {
    let mut attempts = Attempts::new(side.name(), key, options);
    drive(side, &mut attempts, &**side).await
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
    let step = drive(backend, &mut attempts, &Slots(&**backend)).await?;
    Ok((step, attempts.slot()))
}

/// How the acquire loop sends one attempt: the answer, and whether it left something in
/// the store that is no hold (a writer's intent), to withdraw if the loop gives up.
trait Attempt: Sync {
    fn attempt<'a>(
        &'a self,
        request: SlotRequest<'a>,
    ) -> impl Future<Output = Result<(SlotOutcome, bool), Error>> + Send + 'a;
}

/// A lock's (or a group's) slots: `try_acquire_slot`, which leaves nothing but a hold.
struct Slots<'b, B>(&'b B);

impl<B: AsyncLockBackend> Attempt for Slots<'_, B> {
    async fn attempt<'a>(&'a self, request: SlotRequest<'a>) -> Result<(SlotOutcome, bool), Error> {
        Ok((self.0.try_acquire_slot(request).await?, false))
    }
}

impl<B: AsyncSharedLockBackend> Attempt for SharedSide<B> {
    fn attempt<'a>(
        &'a self,
        request: SlotRequest<'a>,
    ) -> impl Future<Output = Result<(SlotOutcome, bool), Error>> + Send + 'a {
        self.try_acquire_queued_async(request.request)
    }
}

async fn drive<B: AsyncLockBackend + 'static>(
    backend: &Arc<B>,
    attempts: &mut Attempts<'_>,
    sender: &impl Attempt,
) -> Result<Step, Error> {
    let probe = AcquireProbe::start(backend.name(), &attempts.request());
    // Once an attempt was queued, the owner's intent may be in the store until the loop
    // ends with the lock: withdrawn if it ends otherwise, or the future is dropped.
    let mut queued: Option<OnDrop<_>> = None;
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
            let (outcome, leaves) = sender.attempt(request).await?;
            in_flight.disarm();
            probe.answered(sent_at);
            if leaves && queued.is_none() {
                let backend = Arc::clone(backend);
                let orphan = Orphan::of_request(&request, sent_at);
                queued = Some(OnDrop::new(move || release_orphan(backend, orphan)));
            }
            let delay = match attempts.on_outcome(outcome, sent_at, Instant::now()) {
                Step::RetryAfter(delay) => delay,
                Step::Late(late) => {
                    let (orphan, next) = late.into_parts();
                    release_orphan(Arc::clone(backend), orphan);
                    next?
                }
                done => {
                    if let Some(armed) = queued.take() {
                        // Given up: withdraw the intent before returning (the armed
                        // release stays the fallback if this future is dropped meanwhile).
                        if matches!(done, Step::Acquired(..))
                            || withdraw(&**backend, Orphan::of_request(&request, sent_at)).await
                        {
                            armed.disarm();
                        }
                    }
                    return Ok(done);
                }
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

/// Withdraws what a loop that gave up left in the store (a writer's intent) before it
/// returns: whether the store answered (otherwise the orphan release takes it over).
async fn withdraw<B: AsyncLockBackend>(backend: &B, orphan: Orphan) -> bool {
    for lease in orphan.leases() {
        let request = ReleaseRequest::new(lease, orphan.min_lease_time());
        if backend.release(request).await.is_err() {
            return false;
        }
    }
    true
}
