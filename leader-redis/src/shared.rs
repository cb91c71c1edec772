//! The read/write lock's store calls, for the backend kit ([`SharedStore`]): each planned
//! from its request without I/O as its one script call (`ops/shared.rs`), and sent by the
//! crate's runner (`calls.rs`) like the exclusive calls: on the blocking connections or
//! the async one, with replica acknowledgement (`WAIT`) after an acquire and a renewal
//! when it is on. A lease too long for the scripts is refused when planned, and nothing is
//! sent. Errors name the read/write lock's Redis key ([`RedisBackend::shared_key`]).
//!
//! The call types are `pub` because they are the associated types of a public trait impl
//! (`SharedStore for RedisBackend`), and unnameable outside this crate.

use std::time::SystemTime;

use leader_core::kit::{Call, Failure, Released, SharedStore};
use leader_core::{
    ExtendOutcome, LockName, ReleaseRequest, Renewal, Role, SharedOutcome, SharedRequest,
    SharedState,
};

use crate::backend::RedisBackend;
use crate::calls::RedisCall;
use crate::error::OpError;
use crate::ops;

/// `try_acquire_shared`: one script.
#[derive(Debug)]
pub struct AcquireShared<'a> {
    key: &'a LockName,
    op: Result<ops::AcquireShared<'a, 'a>, Failure>,
}

impl Call for AcquireShared<'_> {
    type Output = SharedOutcome;
    const NAME: &'static str = "acquire_shared";
    fn outcome(output: &SharedOutcome) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for AcquireShared<'_> {
    fn send(self, backend: &RedisBackend) -> Result<SharedOutcome, Failure> {
        let answer = backend.run_op(self.op?);
        backend.shared_answer(self.key, answer.and_then(|outcome| outcome))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<SharedOutcome, Failure> {
        let answer = backend.run_op_async(self.op?).await;
        backend.shared_answer(self.key, answer.and_then(|outcome| outcome))
    }
}

/// `extend_shared`: one script.
#[derive(Debug)]
pub struct ExtendShared<'a> {
    key: &'a LockName,
    op: Result<ops::ExtendShared<'a>, Failure>,
}

impl Call for ExtendShared<'_> {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend_shared";
    fn outcome(output: &ExtendOutcome) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for ExtendShared<'_> {
    fn send(self, backend: &RedisBackend) -> Result<ExtendOutcome, Failure> {
        let answer = backend.run_op(self.op?);
        backend.shared_answer(self.key, answer.and_then(|outcome| outcome))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<ExtendOutcome, Failure> {
        let answer = backend.run_op_async(self.op?).await;
        backend.shared_answer(self.key, answer.and_then(|outcome| outcome))
    }
}

/// `release_shared`: one script, which publishes the release when a waiter marked the
/// lock.
#[derive(Debug)]
pub struct ReleaseShared<'a>(ops::ReleaseShared<'a>, &'a LockName);

impl Call for ReleaseShared<'_> {
    type Output = Released;
    const NAME: &'static str = "release_shared";
    fn outcome(output: &Released) -> &'static str {
        output.as_str()
    }
}

impl RedisCall for ReleaseShared<'_> {
    fn send(self, backend: &RedisBackend) -> Result<Released, Failure> {
        backend.shared_answer(self.1, backend.run_op(self.0))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<Released, Failure> {
        let answer = backend.run_op_async(self.0).await;
        backend.shared_answer(self.1, answer)
    }
}

/// `state_shared`: one script; a waiter of this node listening on the lock has it mark
/// the lock, so that a release is announced.
#[derive(Debug)]
pub struct StateShared<'a>(ops::StateShared<'a>, &'a LockName);

impl Call for StateShared<'_> {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";
}

impl RedisCall for StateShared<'_> {
    fn send(self, backend: &RedisBackend) -> Result<SharedState, Failure> {
        backend.shared_answer(self.1, backend.run_op(self.0))
    }

    #[cfg(any(feature = "tokio", feature = "smol"))]
    async fn send_async(self, backend: &RedisBackend) -> Result<SharedState, Failure> {
        let answer = backend.run_op_async(self.0).await;
        backend.shared_answer(self.1, answer)
    }
}

/// Each call borrows its request: it is sent in place, on the calling thread or in the
/// caller's future.
impl SharedStore for RedisBackend {
    type AcquireShared<'a> = AcquireShared<'a>;
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> AcquireShared<'a> {
        let key = request.request.key;
        let op = self
            .check_shared_lease(key, request.request.lease_time)
            .map(|()| ops::AcquireShared::new(request, self.events(), SystemTime::now()));
        AcquireShared { key, op }
    }

    type ExtendShared<'a> = ExtendShared<'a>;
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role) -> ExtendShared<'a> {
        let key = &renewal.lease.key;
        let op = self
            .check_shared_lease(key, renewal.lease_time)
            .map(|()| ops::ExtendShared::new(renewal, role, SystemTime::now()));
        ExtendShared { key, op }
    }

    type ReleaseShared<'a> = ReleaseShared<'a>;
    fn plan_release_shared<'a>(
        &'a self,
        release: ReleaseRequest<'a>,
        role: Role,
    ) -> ReleaseShared<'a> {
        ReleaseShared(ops::ReleaseShared::new(release, role), &release.lease.key)
    }

    type StateShared<'a> = StateShared<'a>;
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> StateShared<'a> {
        let watched = self.events().is_listened(key.as_str());
        StateShared(ops::StateShared::new(key, watched), key)
    }
}

impl RedisBackend {
    /// The answer of a read/write lock's call about `key`, its failure naming the read/write
    /// lock's Redis key.
    fn shared_answer<T>(&self, key: &LockName, answer: Result<T, OpError>) -> Result<T, Failure> {
        answer.map_err(|failure| failure.into_failure(&self.shared_key(key)))
    }
}
