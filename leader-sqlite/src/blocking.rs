//! The blocking SPI: each call runs on the calling thread.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, LeaderState, Lease, LockBackend,
    LockName, ReleaseOutcome,
};

use crate::backend::SqliteBackend;
use crate::ops::{self, Acquire};

impl LockBackend for SqliteBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let request = Acquire::from(request);
        self.run(&request.key, |conn| ops::acquire(conn, &request))
    }

    /// `use_db_time` changes nothing: every time comes from the host's clock.
    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        _use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        self.run(&lease.key, |conn| {
            ops::extend(conn, &lease.key, lease.owner, lease_time)
        })
    }

    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error> {
        let released = self.run(&lease.key, |conn| {
            ops::release(conn, &lease.key, lease.owner, min_lease_time)
        })?;
        self.released(&lease.key, &released);
        Ok(released.outcome())
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.run(key, |conn| ops::state(conn, key))
    }
}
