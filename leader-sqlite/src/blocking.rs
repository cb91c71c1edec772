//! The blocking SPI: each call runs on the calling thread.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState, Lease,
    ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    StoredRecord,
};

use crate::backend::SqliteBackend;
use crate::operator;
use crate::ops::{self, Acquire};
use crate::records::{self, Write};

impl LockBackend for SqliteBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let request = Acquire::from(request);
        self.run(request.key.as_str(), |conn, clock| {
            ops::acquire(conn, clock, &request)
        })
    }

    /// `use_db_time` changes nothing: every time comes from the host's clocks.
    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        _use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        self.run(lease.key.as_str(), |conn, clock| {
            ops::extend(conn, clock, &lease.key, lease.owner, lease_time)
        })
    }

    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error> {
        let released = self.run(lease.key.as_str(), |conn, clock| {
            ops::release(conn, clock, &lease.key, lease.owner, min_lease_time)
        })?;
        self.released(lease, &released);
        Ok(released.outcome())
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.run(key.as_str(), |conn, clock| ops::state(conn, clock, key))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.run(&request.prefix, |conn, clock| {
            operator::list(conn, clock, request)
        })
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self.run(key.as_str(), |conn, clock| {
            operator::force_release(conn, clock, key, None)
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self.run(key.as_str(), |conn, clock| {
            operator::force_release(conn, clock, key, Some(fencing_token))
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.run(key.as_str(), |conn, _| records::read(conn, key))
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let write = Write::from(write);
        self.run(write.key.as_str(), |conn, _| records::write(conn, &write))
    }
}
