//! The async SPI: each call runs on a thread of the `blocking` crate's pool and is awaited
//! there, so it works on every runtime (tokio, smol, async-std) without depending on one.
//!
//! A dropped future does not stop its call: the transaction still commits or rolls back
//! whole on its thread, and the electors release an acquisition they gave up on.

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, ListPage, ListRequest, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, StoredRecord,
};

use crate::backend::SqliteBackend;
use crate::operator;
use crate::ops::{self, Acquire};
use crate::records::{self, Write};

impl AsyncLockBackend for SqliteBackend {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let request = Acquire::from(request);
        let key = request.key.clone();
        self.run_async(key.as_str(), move |conn, clock| {
            ops::acquire(conn, clock, &request)
        })
        .await
    }

    /// As the blocking `try_acquire_batch`, on a pool thread.
    async fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        let requests: Vec<Acquire> = requests.iter().map(|r| Acquire::from(*r)).collect();
        self.run_batch_async(requests, ops::acquire_chunk).await
    }

    /// As the blocking `extend_batch`, on a pool thread.
    async fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        let renewals = ops::renewing(renewals);
        self.run_batch_async(renewals, ops::extend_chunk).await
    }

    /// As the blocking `release_batch`, on a pool thread.
    async fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> Vec<Result<ReleaseOutcome, Error>> {
        let releasing = ops::releasing(releases);
        let answers = self.run_batch_async(releasing, ops::release_chunk).await;
        self.released_all(releases, answers)
    }

    fn extend_batch_is_native(&self) -> bool {
        true
    }

    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        let (key, owner) = (lease.key.clone(), lease.owner);
        self.run_async(lease.key.as_str(), move |conn, clock| {
            ops::extend(conn, clock, &key, owner, lease_time)
        })
        .await
    }

    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let (key, owner) = (lease.key.clone(), lease.owner);
        let released = self
            .run_async(lease.key.as_str(), move |conn, clock| {
                ops::release(conn, clock, &key, owner, min_lease_time)
            })
            .await?;
        self.released(lease, &released);
        Ok(released.outcome())
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        let owned = key.clone();
        self.run_async(key.as_str(), move |conn, clock| {
            ops::state(conn, clock, &owned)
        })
        .await
    }

    async fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        let owned = request.clone();
        self.run_async(&request.prefix, move |conn, clock| {
            operator::list(conn, clock, &owned)
        })
        .await
    }

    async fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        let owned = key.clone();
        let outcome = self
            .run_async(key.as_str(), move |conn, clock| {
                operator::force_release(conn, clock, &owned, None)
            })
            .await?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    async fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let owned = key.clone();
        let outcome = self
            .run_async(key.as_str(), move |conn, clock| {
                operator::force_release(conn, clock, &owned, Some(fencing_token))
            })
            .await?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        let owned = key.clone();
        self.run_async(key.as_str(), move |conn, _| records::read(conn, &owned))
            .await
    }

    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let key = write.key().as_str();
        let write = Write::from(write);
        self.run_async(key, move |conn, _| records::write(conn, &write))
            .await
    }
}
