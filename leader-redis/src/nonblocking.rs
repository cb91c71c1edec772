//! [`AsyncLockBackend`] for [`RedisBackend`] (features `tokio`, `smol`, `async-std`).

use std::future::Future;
use std::time::SystemTime;

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, ListPage, ListRequest, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, SlotOutcome, SlotRequest, StoredRecord,
};

use crate::backend::RedisBackend;
use crate::operator::ForceRelease;
use crate::ops::{Acquire, Extend, ReadRecord, Release, State, WriteRecord, record_error};

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
        self.check_lease(request.request.key, request.request.lease_time)?;
        let requests = [request];
        let op = Acquire::new(
            &requests,
            self.key_prefix(),
            self.events(),
            SystemTime::now(),
        );
        self.run_async_one(requests[0].request.key, op).await
    }

    /// As the blocking `try_acquire_batch`; the scripts of a round trip go out at once on
    /// the multiplexed connection, which writes them together.
    async fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        let requests: Vec<_> = requests.iter().map(|r| SlotRequest::single(*r)).collect();
        let checked = self.check_leases(&requests, |r| r.request.lease_time, |r| r.request.key);
        let answers = self
            .run_async_batch(
                &checked.valid,
                (Acquire::CHUNK, Acquire::PIPELINED),
                |chunk, now| Acquire::new(chunk, self.key_prefix(), self.events(), now),
                |request| request.request.key,
            )
            .await;
        checked
            .answers(answers)
            .into_iter()
            .map(|a| a.map(SlotOutcome::into_acquire))
            .collect()
    }

    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        self.check_lease(&lease.key, lease_time)?;
        let renewal = [renewal];
        let op = Extend::new(&renewal, self.key_prefix(), SystemTime::now());
        self.run_async_one(&lease.key, op).await
    }

    /// As the blocking `extend_batch`.
    async fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        let checked = self.check_leases(renewals, |r| r.lease_time, |r| &r.lease.key);
        let answers = self
            .run_async_batch(
                &checked.valid,
                (Extend::CHUNK, Extend::PIPELINED),
                |chunk, now| Extend::new(chunk, self.key_prefix(), now),
                |renewal| &renewal.lease.key,
            )
            .await;
        checked.answers(answers)
    }

    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let lease = release.lease;
        let release = [release];
        let op = Release::new(&release, self.key_prefix());
        self.run_async_one(&lease.key, op)
            .await
            .map(ReleaseOutcome::from)
    }

    /// As the blocking `release_batch`.
    async fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> Vec<Result<ReleaseOutcome, Error>> {
        let answers = self
            .run_async_batch(
                releases,
                (Release::CHUNK, Release::PIPELINED),
                |chunk, _now| Release::new(chunk, self.key_prefix()),
                |release| &release.lease.key,
            )
            .await;
        answers
            .into_iter()
            .map(|a| a.map(ReleaseOutcome::from))
            .collect()
    }

    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send {
        self.run_async(State {
            key,
            watched: self.events().is_listened(key.as_str()),
            now: SystemTime::now(),
        })
    }

    /// Reads a name's index for a prefix inside its derived names, else pages by `SCAN`
    /// (never `KEYS`); see [`RedisBackend`]'s `# Listing`.
    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send {
        self.list_async(request)
    }

    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.run_async(ForceRelease {
            key,
            only: None,
            now: SystemTime::now(),
        })
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.run_async(ForceRelease {
            key,
            only: Some(fencing_token),
            now: SystemTime::now(),
        })
    }
    /// One script reads the record's hash, [`RedisBackend::record_key`].
    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.run_async_raw(ReadRecord { key })
            .await
            .map_err(|failure| record_error(key, &self.record_key(key), failure))
    }

    /// One script compares the version and writes the hash; with replica acknowledgement
    /// configured, the write waits for the replicas as an acquire does (`WAIT`), and one
    /// they did not acknowledge is a transient error (it may have landed).
    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let key = write.key();
        self.run_async_raw(WriteRecord { write })
            .await
            .and_then(|outcome| outcome)
            .map_err(|failure| record_error(key, &self.record_key(key), failure))
    }

    fn extend_batch_is_native(&self) -> bool {
        !self.is_cluster()
    }
}
