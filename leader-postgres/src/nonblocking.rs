//! The async SPI: each call runs as a task on the backend's runtime, awaited from any
//! executor.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, Lease, ListPage, ListRequest, LockName, RecordWrite, RecordWriteOutcome,
    ReleaseOutcome, StoredRecord,
};

use crate::backend::PostgresBackend;
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

    async fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        _use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        self.run(Extend {
            key: lease.key.clone(),
            owner: lease.owner,
            lease_time,
        })
        .await
    }

    async fn release(
        &self,
        lease: &Lease,
        min_lease_time: Duration,
    ) -> Result<ReleaseOutcome, Error> {
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
