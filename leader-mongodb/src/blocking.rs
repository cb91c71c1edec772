//! The blocking SPI: each call drives the shared async operation on the background runtime.

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState,
    ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, StoredRecord,
};

use crate::backend::MongoBackend;
use crate::ops::Acquire;
use crate::records::WriteRecord;

/// Blocks the calling thread for at most the configured `operation_timeout` per call.
/// Callable from any thread, including a thread that runs an async runtime (which it then
/// blocks for that long, like any blocking call).
impl LockBackend for MongoBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let request = Acquire::from(request);
        let key = request.key.clone();
        self.block_on(key.as_str(), self.store().acquire(request))
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        let op = self
            .store()
            .extend(lease.key.clone(), lease.owner, lease_time);
        self.block_on(lease.key.as_str(), op)
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let op = self
            .store()
            .release(lease.key.clone(), lease.owner, min_lease_time);
        self.block_on(lease.key.as_str(), op)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.block_on(key.as_str(), self.store().state(key.clone()))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.block_on(&request.prefix, self.store().list(request.clone()))
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.block_on(key.as_str(), self.store().force_release(key.clone()))
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.block_on(
            key.as_str(),
            self.store().force_release_if(key.clone(), fencing_token),
        )
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.block_on(key.as_str(), self.store().read_record(key.clone()))
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let key = write.key().as_str();
        self.block_on(key, self.store().write_record(WriteRecord::from(write)))
    }
}
