//! The store calls, for the backend kit (`leader_core::kit`): the kit's owned calls
//! ([`calls`]), each run as one of the collection's operations (`ops`, `operator`,
//! `records`), which own everything they touch.
//!
//! - **Blocking**: the call is driven on the calling thread for at most the configured
//!   `operation_timeout`; unfinished then, it goes on on the background runtime (a driver
//!   future is never dropped mid-flight). Callable from any thread, including one that
//!   runs an async runtime (which it then blocks for that long, like any blocking call).
//! - **Async**: the call runs as a task (on the caller's tokio runtime, else the background
//!   one), within the same timeout. Cancel safety: dropping the future only stops waiting.
//!   A dropped `try_acquire` may still take the lock, which then runs out after its lease;
//!   a dropped `release` still releases.
//!
//! Each call takes the store's handle when it is sent: a fresh client after the last one
//! stopped answering.

use std::future::Future;

use leader_core::kit::{self, Call, Failure, Released, Runs, Unsupported, calls};
use leader_core::{
    AcquireOutcome, AcquireRequest, ExtendOutcome, ForceReleaseOutcome, LeaderState, ListPage,
    RecordWriteOutcome, ReleaseRequest, Renewal, SlotOutcome, StoredRecord,
};

use crate::backend::MongoBackend;
use crate::error::OpError;
use crate::ops::Store;

/// A call as one operation on the store's handle.
pub(crate) trait Op: Call + 'static {
    /// The operation, owning what it needs.
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<Self::Output, OpError>> + Send + 'static;
}

impl<O> Runs<O> for MongoBackend
where
    O: Op,
    O::Output: 'static,
{
    fn run_blocking(&self, call: O) -> Result<O::Output, Failure> {
        self.block_on(call.run(self.store()))
    }

    fn run_async(&self, call: O) -> impl Future<Output = Result<O::Output, Failure>> + Send {
        self.run(call.run(self.store()))
    }
}

impl Op for calls::Acquire {
    fn run(self, store: Store) -> impl Future<Output = Result<AcquireOutcome, OpError>> + Send {
        store.acquire(self)
    }
}

impl Op for calls::Extend {
    fn run(self, store: Store) -> impl Future<Output = Result<ExtendOutcome, OpError>> + Send {
        store.extend(self.lease.key, self.lease.owner, self.lease_time)
    }
}

impl Op for calls::Release {
    fn run(self, store: Store) -> impl Future<Output = Result<Released, OpError>> + Send {
        store.release(self.lease.key, self.lease.owner, self.min_lease_time)
    }
}

impl Op for calls::State {
    fn run(self, store: Store) -> impl Future<Output = Result<LeaderState, OpError>> + Send {
        store.state(self.key)
    }
}

impl Op for calls::List {
    fn run(self, store: Store) -> impl Future<Output = Result<ListPage, OpError>> + Send {
        store.list(self.request)
    }
}

impl Op for calls::ForceRelease {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, OpError>> + Send {
        store.force_release(self.key, self.only)
    }
}

impl Op for calls::ReadRecord {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<Option<StoredRecord>, OpError>> + Send {
        store.read_record(self.key)
    }
}

impl Op for calls::WriteRecord {
    fn run(self, store: Store) -> impl Future<Output = Result<RecordWriteOutcome, OpError>> + Send {
        store.write_record(self)
    }
}

/// The calls own what they send (they may be spawned). No batch is one call: each request
/// of a batch goes on its own, as do a group's slots. No local wake-ups: a release's
/// answer does not say whether it freed the lock; the change stream wakes waiters.
impl kit::Store for MongoBackend {
    type Acquire<'a> = calls::Acquire;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> calls::Acquire {
        request.into()
    }

    type AcquireBatch<'a> = Unsupported<Vec<Result<AcquireOutcome, Failure>>>;
    type Slot<'a> = Unsupported<SlotOutcome>;

    type Extend<'a> = calls::Extend;
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> calls::Extend {
        renewal.into()
    }

    type ExtendBatch<'a> = Unsupported<Vec<Result<ExtendOutcome, Failure>>>;

    type Release<'a> = calls::Release;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> calls::Release {
        release.into()
    }

    type ReleaseBatch<'a> = Unsupported<Vec<Result<Released, Failure>>>;
}
