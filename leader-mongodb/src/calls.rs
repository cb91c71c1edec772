//! The store calls, for the backend kit (`leader_core::kit`): each call holds what it
//! sends and runs as one of the collection's operations (`ops`, `operator`, `records`),
//! which own everything they touch.
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
//!
//! The call types are `pub` because they are the associated types of a public trait impl
//! (`Store for MongoBackend`), and unnameable outside this crate.

use std::future::Future;
use std::time::Duration;

use leader_core::__private::{OwnedAcquire, OwnedRecordWrite};
use leader_core::kit::{self, Call, Failure, Released, Runs, Unsupported};
use leader_core::{
    AcquireOutcome, AcquireRequest, ExtendOutcome, ForceReleaseOutcome, LeaderState, ListPage,
    ListRequest, LockName, OwnerToken, RecordWrite, RecordWriteOutcome, ReleaseRequest, Renewal,
    SlotOutcome, StoredRecord,
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

/// `try_acquire`.
#[derive(Debug)]
pub struct Acquire(OwnedAcquire);

impl Call for Acquire {
    type Output = AcquireOutcome;
    const NAME: &'static str = "acquire";
    fn key(&self) -> &str {
        self.0.key.as_str()
    }
    fn outcome(output: &AcquireOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for Acquire {
    fn run(self, store: Store) -> impl Future<Output = Result<AcquireOutcome, OpError>> + Send {
        store.acquire(self.0)
    }
}

/// `extend`.
#[derive(Debug)]
pub struct Extend {
    key: LockName,
    owner: OwnerToken,
    lease_time: Duration,
}

impl Call for Extend {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend";
    fn key(&self) -> &str {
        self.key.as_str()
    }
    fn outcome(output: &ExtendOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for Extend {
    fn run(self, store: Store) -> impl Future<Output = Result<ExtendOutcome, OpError>> + Send {
        store.extend(self.key, self.owner, self.lease_time)
    }
}

/// `release`.
#[derive(Debug)]
pub struct Release {
    key: LockName,
    owner: OwnerToken,
    min_lease_time: Duration,
}

impl Call for Release {
    type Output = Released;
    const NAME: &'static str = "release";
    fn key(&self) -> &str {
        self.key.as_str()
    }
    fn outcome(output: &Released) -> &'static str {
        output.as_str()
    }
}

impl Op for Release {
    fn run(self, store: Store) -> impl Future<Output = Result<Released, OpError>> + Send {
        store.release(self.key, self.owner, self.min_lease_time)
    }
}

/// `state`.
#[derive(Debug)]
pub struct State(LockName);

impl Call for State {
    type Output = LeaderState;
    const NAME: &'static str = "state";
    fn key(&self) -> &str {
        self.0.as_str()
    }
}

impl Op for State {
    fn run(self, store: Store) -> impl Future<Output = Result<LeaderState, OpError>> + Send {
        store.state(self.0)
    }
}

/// `list`.
#[derive(Debug)]
pub struct List(ListRequest);

impl Call for List {
    type Output = ListPage;
    const NAME: &'static str = "list";
    fn key(&self) -> &str {
        &self.0.prefix
    }
    fn outcome(output: &ListPage) -> &'static str {
        match output.next {
            Some(_) => "page",
            None => "last_page",
        }
    }
}

impl Op for List {
    fn run(self, store: Store) -> impl Future<Output = Result<ListPage, OpError>> + Send {
        store.list(self.0)
    }
}

/// `force_release` and `force_release_if`.
#[derive(Debug)]
pub struct ForceRelease {
    key: LockName,
    only: Option<u64>,
}

impl Call for ForceRelease {
    type Output = ForceReleaseOutcome;
    const NAME: &'static str = "force_release";
    fn key(&self) -> &str {
        self.key.as_str()
    }
    fn outcome(output: &ForceReleaseOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for ForceRelease {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, OpError>> + Send {
        store.force_release(self.key, self.only)
    }
}

/// `read_record`.
#[derive(Debug)]
pub struct ReadRecord(LockName);

impl Call for ReadRecord {
    type Output = Option<StoredRecord>;
    const NAME: &'static str = "read_record";
    fn key(&self) -> &str {
        self.0.as_str()
    }
    fn outcome(output: &Option<StoredRecord>) -> &'static str {
        match output {
            Some(_) => "found",
            None => "none",
        }
    }
}

impl Op for ReadRecord {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<Option<StoredRecord>, OpError>> + Send {
        store.read_record(self.0)
    }
}

/// `write_record`.
#[derive(Debug)]
pub struct WriteRecord(OwnedRecordWrite);

impl Call for WriteRecord {
    type Output = RecordWriteOutcome;
    const NAME: &'static str = "write_record";
    fn key(&self) -> &str {
        self.0.key.as_str()
    }
    fn outcome(output: &RecordWriteOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for WriteRecord {
    fn run(self, store: Store) -> impl Future<Output = Result<RecordWriteOutcome, OpError>> + Send {
        store.write_record(self.0)
    }
}

/// The calls own what they send (they may be spawned). No batch is one call: each request
/// of a batch goes on its own, as do a group's slots. No local wake-ups: a release's
/// answer does not say whether it freed the lock; the change stream wakes waiters.
impl kit::Store for MongoBackend {
    type Acquire<'a> = Acquire;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> Acquire {
        Acquire(OwnedAcquire::from(request))
    }

    type AcquireBatch<'a> = Unsupported<Vec<Result<AcquireOutcome, Failure>>>;
    type Slot<'a> = Unsupported<SlotOutcome>;

    type Extend<'a> = Extend;
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> Extend {
        Extend {
            key: renewal.lease.key.clone(),
            owner: renewal.lease.owner,
            lease_time: renewal.lease_time,
        }
    }

    type ExtendBatch<'a> = Unsupported<Vec<Result<ExtendOutcome, Failure>>>;

    type Release<'a> = Release;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> Release {
        Release {
            key: release.lease.key.clone(),
            owner: release.lease.owner,
            min_lease_time: release.min_lease_time,
        }
    }

    type ReleaseBatch<'a> = Unsupported<Vec<Result<Released, Failure>>>;

    type State<'a> = State;
    fn plan_state<'a>(&'a self, key: &'a LockName) -> State {
        State(key.clone())
    }

    type List<'a> = List;
    fn plan_list<'a>(&'a self, request: &'a ListRequest) -> List {
        List(request.clone())
    }

    type ForceRelease<'a> = ForceRelease;
    fn plan_force_release<'a>(&'a self, key: &'a LockName, only: Option<u64>) -> ForceRelease {
        ForceRelease {
            key: key.clone(),
            only,
        }
    }

    type ReadRecord<'a> = ReadRecord;
    fn plan_read_record<'a>(&'a self, key: &'a LockName) -> ReadRecord {
        ReadRecord(key.clone())
    }

    type WriteRecord<'a> = WriteRecord;
    fn plan_write_record<'a>(&'a self, write: RecordWrite<'a>) -> WriteRecord {
        WriteRecord(OwnedRecordWrite::from(write))
    }
}
