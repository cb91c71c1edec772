//! The store calls, for the backend kit (`leader_core::kit`): each is an [`Op`], one
//! statement (or a few) on a pooled session, sent by the runner below. They are the kit's
//! owned calls ([`calls`]), but for a release and a force release, which carry the
//! channel their `NOTIFY` goes to.
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

use leader_core::kit::{Failure, Runs, Store, Unsupported, calls};
use leader_core::{
    AcquireRequest, ListRequest, LockName, RecordWrite, ReleaseEvents, ReleaseRequest, Renewal,
    SlotOutcome,
};

use crate::backend::PostgresBackend;
use crate::batches::{self, AcquireBatch, ExtendBatch, ReleaseBatch};
use crate::error::OpError;
use crate::operator::ForceRelease;
use crate::ops::{Op, Release};

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

    type Release<'a> = Release;
    /// The release notifies the table's channel when it frees the lock.
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> Release {
        Release::new(release, self.release_channel())
    }

    type ReleaseBatch<'a> = ReleaseBatch;
    /// One statement per 1,000 leases, pipelined on one session; a batch that names a
    /// lock twice goes as single calls.
    fn plan_release_batch<'a>(
        &'a self,
        releases: &'a [ReleaseRequest<'a>],
    ) -> Option<ReleaseBatch> {
        batches::plan_release(releases, self.release_channel())
    }

    type State<'a> = calls::State;
    fn plan_state<'a>(&'a self, key: &'a LockName) -> calls::State {
        key.into()
    }

    type List<'a> = calls::List;
    fn plan_list<'a>(&'a self, request: &'a ListRequest) -> calls::List {
        request.into()
    }

    type ForceRelease<'a> = ForceRelease;
    fn plan_force_release<'a>(&'a self, key: &'a LockName, only: Option<u64>) -> ForceRelease {
        ForceRelease {
            key: key.clone(),
            channel: self.release_channel(),
            only,
        }
    }

    type ReadRecord<'a> = calls::ReadRecord;
    fn plan_read_record<'a>(&'a self, key: &'a LockName) -> calls::ReadRecord {
        key.into()
    }

    type WriteRecord<'a> = calls::WriteRecord;
    fn plan_write_record<'a>(&'a self, write: RecordWrite<'a>) -> calls::WriteRecord {
        write.into()
    }

    /// Waiters in this process wake at once after a release of this process, without
    /// waiting for the server's notification to come back.
    fn local_waiters(&self) -> Option<&ReleaseEvents> {
        Some(self.events())
    }
}
