//! The async SPI: each call runs as a task on the backend's runtime, awaited from any
//! executor.

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, ListPage, ListRequest, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, SlotOutcome, SlotRequest, StoredRecord,
};

use crate::backend::EtcdBackend;
use crate::operator::{ForceRelease, List};
use crate::ops::{
    Acquire, AcquireSlot, Extend, ReadRecord, Release, State, WriteRecord, slot_fits_one_txn,
};

/// # Cancel safety
///
/// The call runs in a task of its own; dropping one of these futures only stops waiting
/// for it. A dropped `try_acquire` may still take the lock (the electors release it with
/// the same owner token); a dropped `release` still releases.
///
/// `use_db_time` changes nothing: expiry is always the cluster's (an etcd lease), and
/// etcd has no clock to read, so timestamps are this host's.
impl AsyncLockBackend for EtcdBackend {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.run(Acquire::from(request)).await
    }

    /// Every request at once, each its own transaction: a batch costs about one acquire's
    /// round trips, not one per request.
    async fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        self.run_each(requests.iter().map(|r| Acquire::from(*r)).collect())
            .await
    }

    async fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        if slot_fits_one_txn(&request) {
            return self.run(AcquireSlot::from(request)).await;
        }
        let mut walk = request.walk();
        while let Some(request) = walk.next_request() {
            match AsyncLockBackend::try_acquire(self, request).await {
                Ok(answer) => {
                    if let Some(done) = walk.answer(answer) {
                        return Ok(done);
                    }
                }
                Err(err) => walk.failed(err)?,
            }
        }
        walk.finish()
    }

    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        self.run(Extend {
            lease: lease.clone(),
            lease_time,
        })
        .await
    }

    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let released = self
            .run(Release {
                lease: lease.clone(),
                min_lease_time,
            })
            .await?;
        self.released(lease, released);
        Ok(released.outcome())
    }

    /// Every release at once, each its own transaction.
    async fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> Vec<Result<ReleaseOutcome, Error>> {
        let answers = self
            .run_each(releases.iter().map(Release::from).collect())
            .await;
        self.released_each(releases, answers)
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.run(State { key: key.clone() }).await
    }

    async fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.run(List {
            request: request.clone(),
        })
        .await
    }

    async fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self
            .run(ForceRelease {
                key: key.clone(),
                only: None,
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
        let outcome = self
            .run(ForceRelease {
                key: key.clone(),
                only: Some(fencing_token),
            })
            .await?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    /// One linearizable read of the record's key, `{prefix}/record/{name}`.
    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.run(ReadRecord { key: key.clone() }).await
    }

    /// A transaction that puts the record's key only while it is as expected: absent, or
    /// unchanged since a read found it at the version expected.
    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.run(WriteRecord::from(write)).await
    }
}
