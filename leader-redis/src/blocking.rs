//! [`LockBackend`] for [`RedisBackend`]: each call runs one script on a pooled connection.

use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState, Lease,
    ListPage, ListRequest, LockBackend, LockName, ReleaseOutcome, SlotOutcome, SlotRequest,
};

use crate::backend::RedisBackend;
use crate::force_release::ForceRelease;
use crate::ops::{Acquire, Extend, Release, State};

/// Blocking calls wait at most the configured connect timeout plus the response timeout.
impl LockBackend for RedisBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.try_acquire_slot(SlotRequest::single(request))
            .map(SlotOutcome::into_acquire)
    }

    /// One script over every slot of the request (their keys share the group's hash tag).
    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        self.run_blocking(Acquire {
            request,
            key_prefix: self.key_prefix(),
            now: SystemTime::now(),
        })
    }

    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        self.run_blocking(Extend {
            lease,
            lease_time,
            use_db_time,
            now: SystemTime::now(),
        })
    }

    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error> {
        self.run_blocking(Release {
            lease,
            min_lease_time,
        })
        .map(ReleaseOutcome::from)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.run_blocking(State { key })
    }

    /// Pages by `SCAN` (never `KEYS`); see [`RedisBackend`]'s `# Listing`.
    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.list_blocking(request)
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.run_blocking(ForceRelease { key })
    }
}
