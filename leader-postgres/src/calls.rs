//! The store calls, for the backend kit (`leader_core::kit`): each is an [`Op`], one
//! statement (or a few) on a pooled session, sent by the runner below: the kit's owned
//! calls ([`calls`]), and the batches.
//!
//! - **Blocking**: the call is driven on the calling thread, its I/O on the backend's
//!   runtime, for at most the configured `operation_timeout`. Callable from any thread,
//!   including one that runs an async runtime (which it then blocks for that long, like
//!   any blocking call).
//! - **Async**: the call runs as a task of the backend's runtime, awaited from any
//!   executor, bounded by the same timeout on that runtime's timer. Cancel safety:
//!   dropping the future only stops waiting. A dropped `try_acquire` may still take the
//!   lock (the electors release it with the same owner token); a dropped `release` still
//!   releases.
//!
//! `use_db_time` changes nothing: every time is the server's clock, always.

use std::future::Future;

use leader_core::kit::{Failure, Runs, SharedStore, Store, Unsupported, calls};
use leader_core::{
    AcquireRequest, LockName, ReleaseEvents, ReleaseRequest, Renewal, Role, SharedRequest,
    SlotOutcome,
};

use crate::backend::PostgresBackend;
use crate::batches::{self, AcquireBatch, ExtendBatch, ReleaseBatch};
use crate::error::OpError;
use crate::ops::Op;
use crate::shared::{AcquireShared, ExtendShared, ReleaseShared, StateShared};

impl<O> Runs<O> for PostgresBackend
where
    O: Op,
    O::Output: 'static,
{
    fn run_blocking(&self, call: O) -> Result<O::Output, Failure> {
        self.block_on(call).map_err(OpError::into_failure)
    }

    fn run_async(&self, call: O) -> impl Future<Output = Result<O::Output, Failure>> + Send {
        let run = self.run(call);
        async move { run.await.map_err(OpError::into_failure) }
    }
}

/// The calls own what they send: they run on the backend's runtime.
impl Store for PostgresBackend {
    type Acquire<'a> = calls::Acquire;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> calls::Acquire {
        request.into()
    }

    type AcquireBatch<'a> = AcquireBatch;
    /// One statement per 1,000 requests, pipelined on one session (see the crate's
    /// README); a batch that names a lock twice goes as single calls.
    fn plan_acquire_batch<'a>(
        &'a self,
        requests: &'a [AcquireRequest<'a>],
    ) -> Option<AcquireBatch> {
        batches::plan_acquire(requests)
    }

    type Slot<'a> = Unsupported<SlotOutcome>;

    type Extend<'a> = calls::Extend;
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> calls::Extend {
        renewal.into()
    }

    type ExtendBatch<'a> = ExtendBatch;
    /// One statement per 1,000 leases, pipelined on one session, which skips a row another
    /// session holds locked (that lease's answer is a transient error) instead of waiting
    /// for it; a batch that names a lock twice goes as single calls.
    fn plan_extend_batch<'a>(&'a self, renewals: &'a [Renewal<'a>]) -> Option<ExtendBatch> {
        batches::plan_extend(renewals)
    }

    /// `true`: a batch renews its leases together, and no locked row holds up the others.
    fn extend_batch_is_native(&self) -> bool {
        true
    }

    type Release<'a> = calls::Release;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> calls::Release {
        release.into()
    }

    type ReleaseBatch<'a> = ReleaseBatch;
    /// One statement per 1,000 leases, pipelined on one session; a batch that names a
    /// lock twice goes as single calls.
    fn plan_release_batch<'a>(
        &'a self,
        releases: &'a [ReleaseRequest<'a>],
    ) -> Option<ReleaseBatch> {
        batches::plan_release(releases)
    }

    /// Waiters in this process wake at once after a release of this process, without
    /// waiting for the server's notification to come back.
    fn local_waiters(&self) -> Option<&ReleaseEvents> {
        Some(self.events())
    }
}

/// Read/write locks: each call one statement, the table's read/write function (see the
/// crate's README, Read/write locks), on the server's clock.
impl SharedStore for PostgresBackend {
    type AcquireShared<'a> = AcquireShared;
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> AcquireShared {
        AcquireShared {
            acquire: request.request.into(),
            role: request.role,
            max_readers: request.max_readers.get(),
        }
    }

    type ExtendShared<'a> = ExtendShared;
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role) -> ExtendShared {
        ExtendShared(renewal.into(), role)
    }

    type ReleaseShared<'a> = ReleaseShared;
    fn plan_release_shared<'a>(&'a self, release: ReleaseRequest<'a>, role: Role) -> ReleaseShared {
        ReleaseShared(release.into(), role)
    }

    type StateShared<'a> = StateShared;
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> StateShared {
        StateShared(key.clone())
    }
}
