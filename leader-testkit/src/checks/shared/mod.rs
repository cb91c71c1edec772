//! Read/write locks: the contract of
//! [`SharedLockBackend`](leader_core::SharedLockBackend) (its `# Contract` lists the rules),
//! checked on the async side; a blocking backend runs them through
//! [`Blocking`](crate::Blocking). Expanded by
//! [`shared_contract_tests!`](crate::shared_contract_tests).

use std::time::{Duration, SystemTime};

use leader_core::{
    AsyncSharedLockBackend, ExtendOutcome, Lease, LockName, MaxReaders, OwnerToken, ReleaseOutcome,
    ReleaseRequest, Renewal, Role, SharedOutcome, SharedRequest, SharedState,
};

use super::{LONG_LEASE, request};

pub(super) async fn ask<B: AsyncSharedLockBackend>(
    backend: &B,
    role: Role,
    key: &LockName,
    owner: OwnerToken,
    node: &str,
    lease: Duration,
) -> SharedOutcome {
    let request = SharedRequest::new(request(key, owner, node, lease), role, MaxReaders::DEFAULT);
    backend
        .try_acquire_shared(request)
        .await
        .unwrap_or_else(|err| panic!("try_acquire_shared ({}) failed: {err}", role.as_str()))
}

/// A grant: the lease, or a panic naming what was expected.
pub(super) fn granted(outcome: SharedOutcome, what: &str) -> Lease {
    match outcome {
        SharedOutcome::Acquired(lease) => lease,
        other => panic!("{what}: expected a grant, got {other:?}"),
    }
}

pub(super) async fn read<B: AsyncSharedLockBackend>(
    backend: &B,
    key: &LockName,
    node: &str,
) -> Lease {
    let outcome = ask(
        backend,
        Role::Read,
        key,
        OwnerToken::random(),
        node,
        LONG_LEASE,
    )
    .await;
    granted(outcome, &format!("a read by {node}"))
}

pub(super) async fn release<B: AsyncSharedLockBackend>(
    backend: &B,
    lease: &Lease,
    role: Role,
) -> ReleaseOutcome {
    backend
        .release_shared(ReleaseRequest::new(lease, Duration::ZERO), role)
        .await
        .unwrap_or_else(|err| panic!("release_shared ({}) failed: {err}", role.as_str()))
}

pub(super) async fn extend<B: AsyncSharedLockBackend>(
    backend: &B,
    lease: &Lease,
    role: Role,
    lease_time: Duration,
) -> ExtendOutcome {
    backend
        .extend_shared(Renewal::new(lease, lease_time), role)
        .await
        .unwrap_or_else(|err| panic!("extend_shared ({}) failed: {err}", role.as_str()))
}

pub(super) async fn state<B: AsyncSharedLockBackend>(backend: &B, key: &LockName) -> SharedState {
    backend
        .state_shared(key)
        .await
        .unwrap_or_else(|err| panic!("state_shared failed: {err}"))
}

/// A lease value naming `owner` on `key`, to release or renew by owner alone (as an
/// elector does for a writer that gives up waiting: it has no token).
pub(super) fn by_owner(key: &LockName, owner: OwnerToken) -> Lease {
    let now = SystemTime::now();
    Lease::new(key.clone(), owner, "node", 0, now, now)
}

mod holds;
mod limits;
mod model;

pub use holds::*;
pub use limits::*;
pub use model::*;
