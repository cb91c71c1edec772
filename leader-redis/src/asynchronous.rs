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
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        AsyncLockBackend::try_acquire_slot(self, SlotRequest::single(request))
            .await
            .map(SlotOutcome::into_acquire)
    }

    /// One script over every slot of the request (their keys share the group's hash tag).
    async fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        let requests = [request];
        let answer = match Acquire::new(&requests, self.key_prefix(), SystemTime::now()) {
            Some(op) => self.run_async_raw(op).await,
            None => Ok(Vec::new()),
        };
        let mut answers = self.acquired(&requests, answer);
        answers.pop().unwrap_or(Err(Error::ShutDown))
    }

    /// As the blocking `try_acquire_batch`: a script per chunk of requests on a standalone
    /// server, one per request on a cluster; the scripts of up to 1,000 requests at once on
    /// the multiplexed connection, which writes them out together.
    async fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        let requests: Vec<_> = requests.iter().map(|r| SlotRequest::single(*r)).collect();
        let chunk = if self.is_cluster() { 1 } else { Acquire::CHUNK };
        let mut answers = Vec::with_capacity(requests.len());
        for round_trip in requests.chunks(chunk * Acquire::PIPELINED) {
            let now = SystemTime::now();
            let chunks: Vec<_> = round_trip.chunks(chunk).collect();
            let calls = chunks.iter().filter_map(|chunk| {
                let op = Acquire::new(chunk, self.key_prefix(), now)?;
                Some(self.run_async_raw(op))
            });
            let replies = futures_util::future::join_all(calls).await;
            for (chunk, answer) in chunks.iter().zip(replies) {
                answers.extend(self.acquired(chunk, answer));
            }
        }
        answers
            .into_iter()
            .map(|a| a.map(SlotOutcome::into_acquire))
            .collect()
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
