//! The contract checks, one public function per guarantee.
//!
//! The numbers in their docs are those of the `# Contract` on
//! [`LockBackend`](leader_core::LockBackend): 1 mutual exclusion, 2 ownership, 3 fencing,
//! 4 fail closed, 5 no expired lease in `state`, 6 minimum lease, 7 clock; and the
//! unnumbered parts (listing, force release, records). (The
//! repository's `ARCHITECTURE.md` numbers the electors' own guarantees from 8 on.)
//!
//! Each check makes a fresh random lock name, drives the backend through a [`Runner`](crate::Runner) and
//! panics with a message naming the broken guarantee.

mod derived;
mod faults;
mod groups;
mod listing;
mod notifications;
mod operator;
mod ownership;
mod properties;
mod records;
pub(crate) mod refusals;
mod shared;

pub use derived::*;
pub use faults::*;
pub use groups::*;
pub use listing::*;
pub use notifications::*;
pub use operator::*;
pub use ownership::*;
pub use properties::*;
pub use records::*;
pub use refusals::*;
pub use shared::*;

use std::time::{Duration, SystemTime};

use leader_core::{AcquireOutcome, AcquireRequest, AsyncLockBackend, Lease, LockName, OwnerToken};

pub(super) const LONG_LEASE: Duration = Duration::from_secs(30);

pub(super) fn request<'a>(
    key: &'a LockName,
    owner: OwnerToken,
    node: &'a str,
    lease: Duration,
) -> AcquireRequest<'a> {
    AcquireRequest::new(key, owner, node, lease)
}

pub(super) async fn acquire<B: AsyncLockBackend>(
    backend: &B,
    request: AcquireRequest<'_>,
) -> AcquireOutcome {
    backend
        .try_acquire(request)
        .await
        .unwrap_or_else(|err| panic!("try_acquire failed: {err}"))
}

pub(super) async fn must_acquire<B: AsyncLockBackend>(
    backend: &B,
    request: AcquireRequest<'_>,
) -> Lease {
    match acquire(backend, request).await {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("expected to acquire {}, got {other:?}", request.key),
    }
}

/// Whether `actual` lies in `[earliest - tolerance, latest + tolerance]`: a time read
/// between two clock readings, allowing for clocks that differ by up to `tolerance`.
pub(super) fn between(
    actual: SystemTime,
    earliest: SystemTime,
    latest: SystemTime,
    tolerance: Duration,
) -> bool {
    let low = earliest
        .checked_sub(tolerance)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    actual >= low && actual <= latest + tolerance
}

pub(super) fn within(actual: SystemTime, expected: SystemTime, tolerance: Duration) -> bool {
    let diff = match actual.duration_since(expected) {
        Ok(d) => d,
        Err(e) => e.duration(),
    };
    diff <= tolerance
}
