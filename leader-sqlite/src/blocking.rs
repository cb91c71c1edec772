//! The blocking SPI: each call runs on the calling thread.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState, Lease,
    ListPage, ListRequest, LockBackend, LockName, ReleaseOutcome,
};

use crate::backend::SqliteBackend;
use crate::operator;
use crate::ops::{self, Acquire};

impl LockBackend for SqliteBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let request = Acquire::from(request);
        self.run(request.key.as_str(), |conn| ops::acquire(conn, &request))
    }

    /// `use_db_time` changes nothing: every time comes from the host's clock.
    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        _use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        self.run(lease.key.as_str(), |conn| {
            ops::extend(conn, &lease.key, lease.owner, lease_time)
        })
    }

    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error> {
        let released = self.run(lease.key.as_str(), |conn| {
            ops::release(conn, &lease.key, lease.owner, min_lease_time)
        })?;
        self.released(&lease.key, &released);
        Ok(released.outcome())
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.run(key.as_str(), |conn| ops::state(conn, key))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.run(&request.prefix, |conn| operator::list(conn, request))
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self.run(key.as_str(), |conn| {
            operator::force_release(conn, key, None)
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let outcome = self.run(key.as_str(), |conn| {
            operator::force_release(conn, key, Some(fencing_token))
        })?;
        self.force_released(key, &outcome);
        Ok(outcome)
    }
}
