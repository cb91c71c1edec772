//! The store calls, for the backend kit (`leader_core::kit`): the kit's owned calls
//! ([`calls`]) and a group's slots in one transaction, each an [`Op`], one etcd
//! transaction (after a lease grant where a new expiry is needed), sent by the runner
//! below on the backend's runtime.
//!
//! - **Blocking**: the call is driven on the calling thread, its I/O on the backend's
//!   runtime, for at most the configured `operation_timeout`. Callable from any thread,
//!   including one that runs an async runtime (which it then blocks for that long, like
//!   any blocking call).
//! - **Async**: the call runs on the backend's runtime, awaited from any executor, within
//!   the same timeout.
//! - **Batches**: every request at once, each its own transaction (those of one lock in
//!   their order): a batch costs about one call's round trips, not one per request.
//!
//! `use_db_time` changes nothing: expiry is always the cluster's (an etcd lease), and etcd
//! has no clock to read, so timestamps are this host's.
//!
//! The call types are `pub` because they are the associated types of a public trait impl
//! (`Store for EtcdBackend`), and unnameable outside this crate.

use std::future::Future;

use leader_core::kit::{Call, Failure, Released, Runs, SharedStore, Store, calls};
use leader_core::{
    AcquireOutcome, AcquireRequest, LockName, ReleaseEvents, ReleaseRequest, Renewal, Role,
    SharedRequest, SlotRequest,
};

use crate::backend::{Answers, EtcdBackend};
use crate::ops::{
    AcquireShared, AcquireSlot, ExtendShared, Op, ReleaseShared, StateShared, slot_fits_one_txn,
};

impl<O> Runs<O> for EtcdBackend
where
    O: Op,
{
    fn run_blocking(&self, call: O) -> Result<O::Output, Failure> {
        self.block_on(call)
    }

    fn run_async(&self, call: O) -> impl Future<Output = Result<O::Output, Failure>> + Send {
        self.run(call)
    }
}

/// `try_acquire_batch`: every acquire at once.
#[derive(Debug)]
pub struct AcquireBatch(Vec<calls::Acquire>);

impl Call for AcquireBatch {
    type Output = Vec<Result<AcquireOutcome, Failure>>;
    const NAME: &'static str = "acquire_batch";
    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

impl Runs<AcquireBatch> for EtcdBackend {
    fn run_blocking(&self, call: AcquireBatch) -> Answers<AcquireOutcome> {
        self.block_on_each(call.0)
    }

    fn run_async(
        &self,
        call: AcquireBatch,
    ) -> impl Future<Output = Answers<AcquireOutcome>> + Send {
        self.run_each(call.0)
    }
}

/// `release_batch`: every release at once.
#[derive(Debug)]
pub struct ReleaseBatch(Vec<calls::Release>);

impl Call for ReleaseBatch {
    type Output = Vec<Result<Released, Failure>>;
    const NAME: &'static str = "release_batch";
    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

impl Runs<ReleaseBatch> for EtcdBackend {
    fn run_blocking(&self, call: ReleaseBatch) -> Answers<Released> {
        self.block_on_each(call.0)
    }

    fn run_async(&self, call: ReleaseBatch) -> impl Future<Output = Answers<Released>> + Send {
        self.run_each(call.0)
    }
}

/// The calls own what they send: they run on the backend's runtime, and are sent again
/// after a member refused them.
impl Store for EtcdBackend {
    type Acquire<'a> = calls::Acquire;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> calls::Acquire {
        request.into()
    }

    type AcquireBatch<'a> = AcquireBatch;
    fn plan_acquire_batch<'a>(
        &'a self,
        requests: &'a [AcquireRequest<'a>],
    ) -> Option<AcquireBatch> {
        Some(AcquireBatch(calls::each(requests)))
    }

    type Slot<'a> = AcquireSlot;
    /// One transaction over every slot, when the group is small enough for one (see
    /// the crate docs); otherwise the slots are walked one acquire at a time.
    fn plan_slot<'a>(&'a self, request: SlotRequest<'a>) -> Option<AcquireSlot> {
        slot_fits_one_txn(&request).then(|| AcquireSlot::from(request))
    }

    type Extend<'a> = calls::Extend;
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> calls::Extend {
        renewal.into()
    }

    type ExtendBatch<'a> =
        leader_core::kit::Unsupported<Vec<Result<leader_core::ExtendOutcome, Failure>>>;

    type Release<'a> = calls::Release;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> calls::Release {
        release.into()
    }

    type ReleaseBatch<'a> = ReleaseBatch;
    fn plan_release_batch<'a>(
        &'a self,
        releases: &'a [ReleaseRequest<'a>],
    ) -> Option<ReleaseBatch> {
        Some(ReleaseBatch(calls::each(releases)))
    }

    /// Waiters in this process wake at once after a release of this process, without
    /// waiting for the watch to report it.
    fn local_waiters(&self) -> Option<&ReleaseEvents> {
        Some(self.events())
    }
}

/// Read/write locks: each call one transaction on the lock's whole record (see the crate
/// docs, "Read/write locks").
impl SharedStore for EtcdBackend {
    type AcquireShared<'a> = AcquireShared;
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> AcquireShared {
        request.into()
    }

    type ExtendShared<'a> = ExtendShared;
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role) -> ExtendShared {
        ExtendShared::new(renewal, role)
    }

    type ReleaseShared<'a> = ReleaseShared;
    fn plan_release_shared<'a>(&'a self, release: ReleaseRequest<'a>, role: Role) -> ReleaseShared {
        ReleaseShared::new(release, role)
    }

    type StateShared<'a> = StateShared;
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> StateShared {
        StateShared::new(key)
    }
}
