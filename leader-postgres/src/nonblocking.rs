//! The async SPI: each call runs as a task on the backend's runtime, awaited from any
//! executor.

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, ListPage, ListRequest, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, StoredRecord,
};

use crate::backend::PostgresBackend;
use crate::backend::per_lock;
use crate::batches::{self, Planned};
use crate::operator::{ForceRelease, List};
use crate::ops::{Acquire, Extend, Release, State};
use crate::records::{ReadRecord, WriteRecord};

/// # Cancel safety
///
/// The call runs in a task of its own; dropping one of these futures only stops waiting
/// for it. A dropped `try_acquire` may still take the lock (the electors release it with
/// the same owner token); a dropped `release` still releases.
///
/// `use_db_time` changes nothing: every time is the server's clock, always.
impl AsyncLockBackend for PostgresBackend {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.run(Acquire::from(request)).await
    }

    /// One statement per 1,000 requests, pipelined on one session (see the crate's
    /// README); a batch that names a lock twice goes as single calls.
    async fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        let Some(Planned { op, keys }) = batches::plan_acquire(requests) else {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                answers.push(AsyncLockBackend::try_acquire(self, *request).await);
            }
            return answers;
        };
        per_lock(keys.iter(), self.run_raw(op).await)
    }

    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        self.run(Extend {
            key: lease.key.clone(),
            owner: lease.owner,
            lease_time,
        })
        .await
    }

    /// One statement per 1,000 leases, pipelined on one session, which skips a row another
    /// session holds locked (that lease's answer is a transient error) instead of waiting
    /// for it; a batch that names a lock twice goes as single calls.
    async fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        let Some(Planned { op, keys }) = batches::plan_extend(renewals) else {
            let mut answers = Vec::with_capacity(renewals.len());
            for r in renewals {
                answers.push(AsyncLockBackend::extend(self, *r).await);
            }
            return answers;
        };
        per_lock(keys.iter(), self.run_raw(op).await)
    }

    /// `true`: [`extend_batch`](Self::extend_batch) renews its leases together, and no
    /// locked row holds up the others.
    fn extend_batch_is_native(&self) -> bool {
        true
    }

    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let released = self
            .run(Release {
                key: lease.key.clone(),
                owner: lease.owner,
                min_lease_time,
                channel: self.release_channel(),
            })
            .await?;
        self.released(lease, released);
        Ok(released.outcome())
    }

    /// One statement per 1,000 leases, pipelined on one session; a batch that names a
    /// lock twice goes as single calls.
    async fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> Vec<Result<ReleaseOutcome, Error>> {
        let Some(Planned { op, keys }) = batches::plan_release(releases, self.release_channel())
        else {
            let mut answers = Vec::with_capacity(releases.len());
            for r in releases {
                answers.push(AsyncLockBackend::release(self, *r).await);
            }
            return answers;
        };
        let answers = per_lock(keys.iter(), self.run_raw(op).await);
        self.released_all(releases, answers)
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
                channel: self.release_channel(),
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
                channel: self.release_channel(),
                only: Some(fencing_token),
            })
            .await?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.run(ReadRecord { key: key.clone() }).await
    }

    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.run(WriteRecord::from(write)).await
    }
}
