//! The async SPI: each call spawns the shared async operation and awaits its join handle.

use std::future::Future;

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, ListPage, ListRequest, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, StoredRecord,
};

use crate::backend::MongoBackend;
use crate::ops::Acquire;
use crate::records::WriteRecord;

/// # Cancel safety
///
/// The driver's work runs in a spawned task; dropping one of these futures only stops
/// waiting for it. A dropped `try_acquire` may still take the lock, which then runs out
/// after its lease; a dropped `release` still releases.
impl AsyncLockBackend for MongoBackend {
    fn try_acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<AcquireOutcome, Error>> + Send {
        let request = Acquire::from(request);
        let key = request.key.to_string();
        self.run(key, self.store().acquire(request))
    }

    fn extend(
        &self,
        renewal: Renewal<'_>,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        let op = self
            .store()
            .extend(lease.key.clone(), lease.owner, lease_time);
        self.run(lease.key.to_string(), op)
    }

    fn release(
        &self,
        release: ReleaseRequest<'_>,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let op = self
            .store()
            .release(lease.key.clone(), lease.owner, min_lease_time);
        self.run(lease.key.to_string(), op)
    }

    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send {
        self.run(key.to_string(), self.store().state(key.clone()))
    }

    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send {
        self.run(request.prefix.clone(), self.store().list(request.clone()))
    }

    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.run(key.to_string(), self.store().force_release(key.clone()))
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.run(
            key.to_string(),
            self.store().force_release_if(key.clone(), fencing_token),
        )
    }

    fn read_record(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<Option<StoredRecord>, Error>> + Send {
        self.run(key.to_string(), self.store().read_record(key.clone()))
    }

    fn write_record(
        &self,
        write: RecordWrite<'_>,
    ) -> impl Future<Output = Result<RecordWriteOutcome, Error>> + Send {
        let key = write.key().to_string();
        self.run(key, self.store().write_record(WriteRecord::from(write)))
    }
}
