//! The async SPI: each call runs on a thread of the `blocking` crate's pool and is awaited
//! there, so it works on every runtime (tokio, smol, async-std) without depending on one.
//!
//! A dropped future does not stop its call: the transaction still commits or rolls back
//! whole on its thread, and the electors release an acquisition they gave up on.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Error, ExtendOutcome, LeaderState, Lease,
    LockName, ReleaseOutcome,
};

use crate::backend::SqliteBackend;
use crate::ops::{self, Acquire};

impl AsyncLockBackend for SqliteBackend {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let request = Acquire::from(request);
        let key = request.key.clone();
        self.run_async(&key, move |conn| ops::acquire(conn, &request))
            .await
    }

    async fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        _use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        let (key, owner) = (lease.key.clone(), lease.owner);
        self.run_async(&lease.key, move |conn| {
            ops::extend(conn, &key, owner, lease_time)
        })
        .await
    }

    async fn release(
        &self,
        lease: &Lease,
        min_lease_time: Duration,
    ) -> Result<ReleaseOutcome, Error> {
        let (key, owner) = (lease.key.clone(), lease.owner);
        let released = self
            .run_async(&lease.key, move |conn| {
                ops::release(conn, &key, owner, min_lease_time)
            })
            .await?;
        self.released(&lease.key, &released);
        Ok(released.outcome())
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        let owned = key.clone();
        self.run_async(key, move |conn| ops::state(conn, &owned))
            .await
    }
}
