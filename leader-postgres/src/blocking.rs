//! The blocking SPI: each call is driven on the calling thread, its I/O on the backend's
//! runtime.

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState,
    ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, StoredRecord,
};

use crate::backend::PostgresBackend;
use crate::backend::per_lock;
use crate::batches::{self, Planned};
use crate::operator::{ForceRelease, List};
use crate::ops::{Acquire, Extend, Release, State};
use crate::records::{ReadRecord, WriteRecord};

/// Blocks the calling thread for at most the configured `operation_timeout` per call.
/// Callable from any thread, including one that runs an async runtime (which it then
/// blocks for that long, like any blocking call).
///
/// `use_db_time` changes nothing: every time is the server's clock, always.
impl LockBackend for PostgresBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.block_on(Acquire::from(request))
    }

    /// One statement per 1,000 requests, pipelined on one session (see the crate's
    /// README); a batch that names a lock twice goes as single calls.
    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        let Some(Planned { op, keys }) = batches::plan_acquire(requests) else {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                answers.push(LockBackend::try_acquire(self, *request));
            }
            return answers;
        };
        per_lock(keys.iter(), self.block_on_raw(op))
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        self.block_on(Extend {
            key: lease.key.clone(),
            owner: lease.owner,
            lease_time,
        })
    }

    /// One statement per 1,000 leases, pipelined on one session, which skips a row another
    /// session holds locked (that lease's answer is a transient error) instead of waiting
    /// for it; a batch that names a lock twice goes as single calls.
    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        let Some(Planned { op, keys }) = batches::plan_extend(renewals) else {
            let mut answers = Vec::with_capacity(renewals.len());
            for r in renewals {
                answers.push(LockBackend::extend(self, *r));
            }
            return answers;
        };
        per_lock(keys.iter(), self.block_on_raw(op))
    }

    /// `true`: [`extend_batch`](Self::extend_batch) renews its leases together, and no
    /// locked row holds up the others.
    fn extend_batch_is_native(&self) -> bool {
        true
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let released = self.block_on(Release {
            key: lease.key.clone(),
            owner: lease.owner,
            min_lease_time,
            channel: self.release_channel(),
        })?;
        self.released(lease, released);
        Ok(released.outcome())
    }

    /// One statement per 1,000 leases, pipelined on one session; a batch that names a
    /// lock twice goes as single calls.
    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        let Some(Planned { op, keys }) = batches::plan_release(releases, self.release_channel())
        else {
            let mut answers = Vec::with_capacity(releases.len());
            for r in releases {
                answers.push(LockBackend::release(self, *r));
            }
            return answers;
        };
        let answers = per_lock(keys.iter(), self.block_on_raw(op));
        self.released_all(releases, answers)
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
            channel: self.release_channel(),
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
            channel: self.release_channel(),
            only: Some(fencing_token),
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.block_on(ReadRecord { key: key.clone() })
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.block_on(WriteRecord::from(write))
    }
}
