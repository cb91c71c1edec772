//! The blocking SPI: each call is driven on the calling thread, its I/O on the backend's
//! runtime.

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState,
    ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, SlotOutcome, SlotRequest, StoredRecord,
};

use crate::backend::EtcdBackend;
use crate::operator::{ForceRelease, List};
use crate::ops::{
    Acquire, AcquireSlot, Extend, ReadRecord, Release, State, WriteRecord, slot_fits_one_txn,
};

/// Blocks the calling thread for at most the configured `operation_timeout` per call.
/// Callable from any thread, including one that runs an async runtime (which it then
/// blocks for that long, like any blocking call).
///
/// `use_db_time` changes nothing: expiry is always the cluster's (an etcd lease), and
/// etcd has no clock to read, so timestamps are this host's.
impl LockBackend for EtcdBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.block_on(Acquire::from(request))
    }

    /// Every request at once, each its own transaction: a batch costs about one acquire's
    /// round trips, not one per request.
    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        self.block_on_each(requests.iter().map(|r| Acquire::from(*r)).collect())
    }

    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        if slot_fits_one_txn(&request) {
            return self.block_on(AcquireSlot::from(request));
        }
        let mut walk = request.walk();
        while let Some(request) = walk.next_request() {
            match LockBackend::try_acquire(self, request) {
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

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        self.block_on(Extend {
            lease: lease.clone(),
            lease_time,
        })
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let released = self.block_on(Release {
            lease: lease.clone(),
            min_lease_time,
        })?;
        self.released(lease, released);
        Ok(released.outcome())
    }

    /// Every release at once, each its own transaction.
    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        let answers = self.block_on_each(releases.iter().map(Release::from).collect());
        self.released_each(releases, answers)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.block_on(State { key: key.clone() })
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.block_on(List {
            request: request.clone(),
        })
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self.block_on(ForceRelease {
            key: key.clone(),
            only: None,
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self.block_on(ForceRelease {
            key: key.clone(),
            only: Some(fencing_token),
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    /// One linearizable read of the record's key, `{prefix}/record/{name}`.
    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.block_on(ReadRecord { key: key.clone() })
    }

    /// A transaction that puts the record's key only while it is as expected: absent, or
    /// unchanged since a read found it at the version expected.
    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.block_on(WriteRecord::from(write))
    }
}
