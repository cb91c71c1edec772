//! The store calls, for the backend kit (`leader_core::kit`): each planned from its request
//! without I/O, and sent by the runner below on the blocking connections (`sync_conn.rs`)
//! or the async one (`async_conn.rs`).
//!
//! - **A lock's call** (`try_acquire`, `try_acquire_slot`, `extend`, `release`) is its one
//!   script call (`ops/`), planned with the lock's keys and the caller's clock; a lease
//!   too long for the scripts ([`MAX_SERVER_LEASE`](leader_core::MAX_SERVER_LEASE)) is
//!   refused when planned, and nothing is sent.
//! - **A group's slots** are one script over every slot (their keys share the group's hash
//!   tag, so a cluster runs it too): the kit never walks them.
//! - **Batches** are native on a standalone server: one script per chunk (100 acquires or
//!   releases, 1,000 renewals), each lock answered on its own, up to 10 scripts pipelined
//!   in one round trip (the async side writes them at once on the multiplexed
//!   connection). A cluster, whose keys of different hash tags cannot meet in one script,
//!   sends one script per lock, so its renewals are not native
//!   ([`extend_batch_is_native`](leader_core::LockBackend::extend_batch_is_native)).
//!   Leases too long are refused one by one; the others go on.
//! - **Errors** name the lock's Redis key ([`RedisBackend::lock_key`]), a record's hash
//!   ([`RedisBackend::record_key`]) or a listing's pattern, not the lock's name: the
//!   runner names them and the kit hands them on ([`Failure::from_error`]). A batch
//!   answers every lock, a failure of a whole script as each of its locks' own.
//! - **Waiters** of this process are woken by the release subscription, as any other
//!   process's are, not by the kit ([`Store::local_waiters`] is `None`): a release
//!   publishes only when a waiter marked the lease.
//!
//! The call types are `pub` because they are the associated types of a public trait impl
//! (`Store for RedisBackend`), and unnameable outside this crate.

use std::future::Future;
use std::time::SystemTime;

use leader_core::kit::{Call, Failure, Released, Runs, Store, calls};
use leader_core::{
    AcquireOutcome, AcquireRequest, ExtendOutcome, LockName, ReleaseRequest, Renewal, SlotOutcome,
    SlotRequest,
};

use crate::backend::RedisBackend;
use crate::error::OpError;
use crate::operator::ForceRelease;
use crate::ops::{self, ReadRecord, State, WriteRecord, record_error};
use crate::time::Checked;

/// A call as Redis sends it: on the blocking connections, or on the async one.
pub(crate) trait RedisCall: Call {
    /// Sends the call on `backend`'s blocking connections.
    fn send(self, backend: &RedisBackend) -> Result<Self::Output, Failure>;

    /// Sends the call on `backend`'s async connection.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    fn send_async(
        self,
        backend: &RedisBackend,
    ) -> impl Future<Output = Result<Self::Output, Failure>> + Send;
}

/// Blocking calls wait at most the configured connect timeout plus the response timeout.
///
/// # Cancel safety
///
/// Dropping an async call's future before it completes may leave its script run or not;
/// a lock taken that way runs out with its lease.
impl<C: RedisCall> Runs<C> for RedisBackend {
    fn run_blocking(&self, call: C) -> Result<C::Output, Failure> {
        call.send(self)
    }

    /// Without the `tokio` or `smol` feature there is no async connection: each async
    /// call is a permanent failure saying so.
    fn run_async(&self, call: C) -> impl Future<Output = Result<C::Output, Failure>> + Send {
        #[cfg(any(feature = "tokio", feature = "smol"))]
        {
            call.send_async(self)
        }
        #[cfg(not(any(feature = "tokio", feature = "smol")))]
        {
            drop(call);
            std::future::ready(Err(Failure::permanent(
                "leader-redis was built without an async runtime (features `tokio`, `smol`)",
            )))
        }
    }
}

/// A lock's script call as planned, or the failure that refused it before anything is
/// sent (a lease too long).
type Planned<O> = Result<O, Failure>;

/// `try_acquire_slot`: one script over every slot of the group.
#[derive(Debug)]
pub struct Slot<'a> {
    key: &'a LockName,
    op: Planned<ops::Acquire<'a, 'a>>,
}

impl Call for Slot<'_> {
    type Output = SlotOutcome;
    const NAME: &'static str = "acquire_slot";
    fn outcome(output: &SlotOutcome) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for Slot<'_> {
    fn send(self, backend: &RedisBackend) -> Result<SlotOutcome, Failure> {
        backend.run_one(self.key, self.op?)
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<SlotOutcome, Failure> {
        backend.run_one_async(self.key, self.op?).await
    }
}

/// `try_acquire`: the script of a group of one slot.
#[derive(Debug)]
pub struct Acquire<'a>(Slot<'a>);

impl Call for Acquire<'_> {
    type Output = AcquireOutcome;
    const NAME: &'static str = "acquire";
    fn outcome(output: &AcquireOutcome) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for Acquire<'_> {
    fn send(self, backend: &RedisBackend) -> Result<AcquireOutcome, Failure> {
        self.0.send(backend).map(SlotOutcome::into_acquire)
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<AcquireOutcome, Failure> {
        let answer = self.0.send_async(backend).await;
        answer.map(SlotOutcome::into_acquire)
    }
}

/// `try_acquire_batch`: the requests whose lease the scripts take, in chunks.
#[derive(Debug)]
pub struct AcquireBatch<'a> {
    requests: Checked<SlotRequest<'a>>,
}

impl Call for AcquireBatch<'_> {
    type Output = Vec<Result<AcquireOutcome, Failure>>;
    const NAME: &'static str = "acquire_batch";
    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

/// The sizes of an acquire batch's chunks and round trips.
const ACQUIRES: (usize, usize) = (ops::Acquire::CHUNK, ops::Acquire::PIPELINED);

impl RedisCall for AcquireBatch<'_> {
    fn send(self, backend: &RedisBackend) -> Result<Self::Output, Failure> {
        let answers = backend.run_batch(
            &self.requests.valid,
            ACQUIRES,
            |chunk, now| ops::Acquire::new(chunk, backend.key_prefix(), backend.events(), now),
            |request| request.request.key,
        );
        Ok(acquired(self.requests.answers(answers)))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<Self::Output, Failure> {
        let answers = backend
            .run_batch_async(
                &self.requests.valid,
                ACQUIRES,
                |chunk, now| ops::Acquire::new(chunk, backend.key_prefix(), backend.events(), now),
                |request| request.request.key,
            )
            .await;
        Ok(acquired(self.requests.answers(answers)))
    }
}

/// The answers of `try_acquire_batch`, each slot request being a lock of its own.
fn acquired(answers: Vec<Result<SlotOutcome, Failure>>) -> Vec<Result<AcquireOutcome, Failure>> {
    answers
        .into_iter()
        .map(|answer| answer.map(SlotOutcome::into_acquire))
        .collect()
}

/// `extend`.
#[derive(Debug)]
pub struct Extend<'a> {
    key: &'a LockName,
    op: Planned<ops::Extend<'a, 'a>>,
}

impl Call for Extend<'_> {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend";
    fn outcome(output: &ExtendOutcome) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for Extend<'_> {
    fn send(self, backend: &RedisBackend) -> Result<ExtendOutcome, Failure> {
        backend.run_one(self.key, self.op?)
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<ExtendOutcome, Failure> {
        backend.run_one_async(self.key, self.op?).await
    }
}

/// `extend_batch`: the renewals whose lease the scripts take, in chunks.
#[derive(Debug)]
pub struct ExtendBatch<'a> {
    renewals: Checked<Renewal<'a>>,
}

impl Call for ExtendBatch<'_> {
    type Output = Vec<Result<ExtendOutcome, Failure>>;
    const NAME: &'static str = "extend_batch";
    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

/// The sizes of a renewal batch's chunks and round trips.
const EXTENDS: (usize, usize) = (ops::Extend::CHUNK, ops::Extend::PIPELINED);

impl RedisCall for ExtendBatch<'_> {
    fn send(self, backend: &RedisBackend) -> Result<Self::Output, Failure> {
        let answers = backend.run_batch(
            &self.renewals.valid,
            EXTENDS,
            |chunk, now| ops::Extend::new(chunk, backend.key_prefix(), now),
            |renewal| &renewal.lease.key,
        );
        Ok(self.renewals.answers(answers))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<Self::Output, Failure> {
        let answers = backend
            .run_batch_async(
                &self.renewals.valid,
                EXTENDS,
                |chunk, now| ops::Extend::new(chunk, backend.key_prefix(), now),
                |renewal| &renewal.lease.key,
            )
            .await;
        Ok(self.renewals.answers(answers))
    }
}

/// `release`.
#[derive(Debug)]
pub struct Release<'a> {
    key: &'a LockName,
    op: ops::Release<'a, 'a>,
}

impl Call for Release<'_> {
    type Output = Released;
    const NAME: &'static str = "release";
    fn outcome(output: &Released) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for Release<'_> {
    fn send(self, backend: &RedisBackend) -> Result<Released, Failure> {
        backend.run_one(self.key, self.op)
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<Released, Failure> {
        backend.run_one_async(self.key, self.op).await
    }
}

/// `release_batch`, in chunks.
#[derive(Debug)]
pub struct ReleaseBatch<'a> {
    releases: &'a [ReleaseRequest<'a>],
}

impl Call for ReleaseBatch<'_> {
    type Output = Vec<Result<Released, Failure>>;
    const NAME: &'static str = "release_batch";
    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

/// The sizes of a release batch's chunks and round trips.
const RELEASES: (usize, usize) = (ops::Release::CHUNK, ops::Release::PIPELINED);

impl RedisCall for ReleaseBatch<'_> {
    fn send(self, backend: &RedisBackend) -> Result<Self::Output, Failure> {
        Ok(backend.run_batch(
            self.releases,
            RELEASES,
            |chunk, _now| ops::Release::new(chunk, backend.key_prefix()),
            |release| &release.lease.key,
        ))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<Self::Output, Failure> {
        let answers = backend
            .run_batch_async(
                self.releases,
                RELEASES,
                |chunk, _now| ops::Release::new(chunk, backend.key_prefix()),
                |release| &release.lease.key,
            )
            .await;
        Ok(answers)
    }
}

/// `state`: one script reads the lock hash; a waiter of this node listening on the lock
/// has it mark the holder's lease, so that its release is announced.
impl RedisCall for calls::State {
    fn send(self, backend: &RedisBackend) -> Result<leader_core::LeaderState, Failure> {
        let op = state(&self.key, backend);
        backend
            .run_op(op)
            .map_err(|failure| backend.failure(&self.key, failure))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<leader_core::LeaderState, Failure> {
        let answer = backend.run_op_async(state(&self.key, backend)).await;
        answer.map_err(|failure| backend.failure(&self.key, failure))
    }
}

/// The `state` script call of `key`.
fn state<'a>(key: &'a LockName, backend: &RedisBackend) -> State<'a> {
    State {
        key,
        watched: backend.events().is_listened(key.as_str()),
        now: SystemTime::now(),
    }
}

/// `list`: reads a name's index for a prefix inside its derived names, else pages by
/// `SCAN` (never `KEYS`); see [`RedisBackend`]'s `# Listing`.
impl RedisCall for calls::List {
    fn send(self, backend: &RedisBackend) -> Result<leader_core::ListPage, Failure> {
        backend
            .list_blocking(&self.request)
            .map_err(Failure::from_error)
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<leader_core::ListPage, Failure> {
        let page = backend.list_async(&self.request).await;
        page.map_err(Failure::from_error)
    }
}

/// `force_release` and `force_release_if`: one script frees the lock (only from the holder
/// with the fencing token given, for the latter).
impl RedisCall for calls::ForceRelease {
    fn send(self, backend: &RedisBackend) -> Result<leader_core::ForceReleaseOutcome, Failure> {
        backend
            .run_op(force_release(&self))
            .map_err(|failure| backend.failure(&self.key, failure))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(
        self,
        backend: &RedisBackend,
    ) -> Result<leader_core::ForceReleaseOutcome, Failure> {
        let answer = backend.run_op_async(force_release(&self)).await;
        answer.map_err(|failure| backend.failure(&self.key, failure))
    }
}

/// The `force_release` script call of `call`.
fn force_release(call: &calls::ForceRelease) -> ForceRelease<'_> {
    ForceRelease {
        key: &call.key,
        only: call.only,
        now: SystemTime::now(),
    }
}

/// `read_record`: one script reads the record's hash, [`RedisBackend::record_key`].
impl RedisCall for calls::ReadRecord {
    fn send(self, backend: &RedisBackend) -> Result<Option<leader_core::StoredRecord>, Failure> {
        backend
            .run_op(ReadRecord { key: &self.key })
            .map_err(|failure| record_failure(backend, &self.key, failure))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(
        self,
        backend: &RedisBackend,
    ) -> Result<Option<leader_core::StoredRecord>, Failure> {
        let answer = backend.run_op_async(ReadRecord { key: &self.key }).await;
        answer.map_err(|failure| record_failure(backend, &self.key, failure))
    }
}

/// `write_record`: one script compares the version and writes the hash; with replica
/// acknowledgement configured, the write waits for the replicas as an acquire does
/// (`WAIT`), and one they did not acknowledge is a transient error (it may have landed).
impl RedisCall for calls::WriteRecord {
    fn send(self, backend: &RedisBackend) -> Result<leader_core::RecordWriteOutcome, Failure> {
        backend
            .run_op(WriteRecord { write: &self })
            .and_then(|outcome| outcome)
            .map_err(|failure| record_failure(backend, &self.key, failure))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(
        self,
        backend: &RedisBackend,
    ) -> Result<leader_core::RecordWriteOutcome, Failure> {
        let answer = backend.run_op_async(WriteRecord { write: &self }).await;
        answer
            .and_then(|outcome| outcome)
            .map_err(|failure| record_failure(backend, &self.key, failure))
    }
}

/// The failure of a record call on `key`: [`record_error`]'s error.
fn record_failure(backend: &RedisBackend, key: &LockName, failure: OpError) -> Failure {
    Failure::from_error(record_error(key, &backend.record_key(key), failure))
}

/// Each lock's call borrows its request: it is sent in place, on the calling thread or in
/// the caller's future.
impl Store for RedisBackend {
    type Acquire<'a> = Acquire<'a>;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> Acquire<'a> {
        Acquire(self.slot(SlotRequest::single(request)))
    }

    type AcquireBatch<'a> = AcquireBatch<'a>;
    fn plan_acquire_batch<'a>(
        &'a self,
        requests: &'a [AcquireRequest<'a>],
    ) -> Option<AcquireBatch<'a>> {
        if requests.is_empty() {
            return None;
        }
        let requests: Vec<_> = requests.iter().map(|r| SlotRequest::single(*r)).collect();
        let requests = self.check_leases(&requests, |r| r.request.lease_time, |r| r.request.key);
        Some(AcquireBatch { requests })
    }

    type Slot<'a> = Slot<'a>;
    /// One script over every slot of the request (their keys share the group's hash tag).
    fn plan_slot<'a>(&'a self, request: SlotRequest<'a>) -> Option<Slot<'a>> {
        Some(self.slot(request))
    }

    type Extend<'a> = Extend<'a>;
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> Extend<'a> {
        let key = &renewal.lease.key;
        let op = self
            .check_lease(key, renewal.lease_time)
            .map(|()| ops::Extend::one(renewal, self.key_prefix(), SystemTime::now()));
        Extend { key, op }
    }

    type ExtendBatch<'a> = ExtendBatch<'a>;
    fn plan_extend_batch<'a>(&'a self, renewals: &'a [Renewal<'a>]) -> Option<ExtendBatch<'a>> {
        if renewals.is_empty() {
            return None;
        }
        let renewals = self.check_leases(renewals, |r| r.lease_time, |r| &r.lease.key);
        Some(ExtendBatch { renewals })
    }

    /// On a standalone server (scripts pipelined in one round trip); not on a cluster,
    /// which renews one lease after the other.
    fn extend_batch_is_native(&self) -> bool {
        !self.is_cluster()
    }

    type Release<'a> = Release<'a>;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> Release<'a> {
        Release {
            key: &release.lease.key,
            op: ops::Release::one(release, self.key_prefix()),
        }
    }

    type ReleaseBatch<'a> = ReleaseBatch<'a>;
    fn plan_release_batch<'a>(
        &'a self,
        releases: &'a [ReleaseRequest<'a>],
    ) -> Option<ReleaseBatch<'a>> {
        (!releases.is_empty()).then_some(ReleaseBatch { releases })
    }
}

impl RedisBackend {
    /// The script over every slot of `request`, or its lease refused.
    fn slot<'a>(&'a self, request: SlotRequest<'a>) -> Slot<'a> {
        let key = request.request.key;
        let op = self.check_lease(key, request.request.lease_time).map(|()| {
            ops::Acquire::one(request, self.key_prefix(), self.events(), SystemTime::now())
        });
        Slot { key, op }
    }
}
