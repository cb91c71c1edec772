//! [`AsyncLockBackend`] for [`RedisBackend`] (features `tokio`, `smol`, `async-std`).

use std::future::Future;
use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, Lease, ListPage, ListRequest, LockName, ReleaseOutcome, Renewal, SlotOutcome,
    SlotRequest,
};

use crate::backend::RedisBackend;
use crate::force_release::ForceRelease;
use crate::ops::{Acquire, Extend, Release, State};

/// # Cancel safety
///
/// Dropping a future before it completes may leave its script run or not; a lock taken
/// that way runs out with its lease.
impl AsyncLockBackend for RedisBackend {
    fn try_acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<AcquireOutcome, Error>> + Send {
        let acquired = self.try_acquire_slot(SlotRequest::single(request));
        async move { acquired.await.map(SlotOutcome::into_acquire) }
    }

    /// One script over every slot of the request (their keys share the group's hash tag).
    fn try_acquire_slot(
        &self,
        request: SlotRequest<'_>,
    ) -> impl Future<Output = Result<SlotOutcome, Error>> + Send {
        self.run_async(Acquire {
            request,
            key_prefix: self.key_prefix(),
            now: SystemTime::now(),
        })
    }

    async fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        let renewal = [Renewal::new(lease, lease_time).with_db_time(use_db_time)];
        let mut answers = self.extend_batch(&renewal).await;
        answers.pop().unwrap_or(Err(Error::ShutDown))
    }

    /// As the blocking `extend_batch`: a script per chunk on a standalone server, one
    /// `extend` per lease on a cluster.
    async fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        let chunk = if self.is_cluster() { 1 } else { Extend::CHUNK };
        let mut answers = Vec::with_capacity(renewals.len());
        for chunk in renewals.chunks(chunk) {
            let Some(op) = Extend::new(chunk, self.key_prefix(), SystemTime::now()) else {
                continue;
            };
            answers.extend(self.renewed(chunk, self.run_async_raw(op).await));
        }
        answers
    }

    fn release(
        &self,
        lease: &Lease,
        min_lease_time: Duration,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        let released = self.run_async(Release {
            lease,
            min_lease_time,
        });
        async move { released.await.map(ReleaseOutcome::from) }
    }

    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send {
        self.run_async(State { key })
    }

    /// Pages by `SCAN` (never `KEYS`); see [`RedisBackend`]'s `# Listing`.
    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send {
        self.list_async(request)
    }

    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.run_async(ForceRelease { key })
    }
}
