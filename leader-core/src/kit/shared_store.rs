//! [`SharedStore`]: a store's read/write lock calls, planned as data, and
//! [`SharedLockBackend`] and [`AsyncSharedLockBackend`] for every store whose runner runs
//! them (traced, failures named, local waiters woken, as for the exclusive calls).

use crate::error::Error;
use crate::kit::call::Call;
use crate::kit::runs::Runs;
use crate::kit::store::{Released, Store};
use crate::kit::{blocking, nonblocking};
use crate::name::LockName;
use crate::spi::backend::{AsyncLockBackend, LockBackend};
use crate::spi::outcome::{ExtendOutcome, ReleaseOutcome};
use crate::spi::request::{ReleaseRequest, Renewal};
use crate::spi::shared::{
    AsyncSharedLockBackend, Role, SharedLockBackend, SharedOutcome, SharedRequest, SharedState,
};

/// A store's read/write lock calls (the `SharedLockBackend` contract), each planned as a
/// value and sent by the store's runner, as [`Store`]'s are.
pub trait SharedStore: Store {
    /// `try_acquire_shared`.
    type AcquireShared<'a>: Call<Output = SharedOutcome>
    where
        Self: 'a;
    /// Plans an acquire of `request`.
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> Self::AcquireShared<'a>;

    /// `extend_shared`.
    type ExtendShared<'a>: Call<Output = ExtendOutcome>
    where
        Self: 'a;
    /// Plans the renewal of a hold in `role`.
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role)
    -> Self::ExtendShared<'a>;

    /// `release_shared`.
    type ReleaseShared<'a>: Call<Output = Released>
    where
        Self: 'a;
    /// Plans the release of a hold (or a writer's intent) in `role`.
    fn plan_release_shared<'a>(
        &'a self,
        release: ReleaseRequest<'a>,
        role: Role,
    ) -> Self::ReleaseShared<'a>;

    /// `state_shared`.
    type StateShared<'a>: Call<Output = SharedState>
    where
        Self: 'a;
    /// Plans a snapshot of `key`.
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> Self::StateShared<'a>;
}

impl<S> SharedLockBackend for S
where
    S: SharedStore + LockBackend,
    for<'a> S: Runs<S::AcquireShared<'a>>
        + Runs<S::ExtendShared<'a>>
        + Runs<S::ReleaseShared<'a>>
        + Runs<S::StateShared<'a>>,
{
    fn try_acquire_shared(&self, request: SharedRequest<'_>) -> Result<SharedOutcome, Error> {
        let key = request.request.key.as_str();
        blocking::single(self, key, self.plan_acquire_shared(request))
    }

    fn extend_shared(&self, renewal: Renewal<'_>, role: Role) -> Result<ExtendOutcome, Error> {
        let key = renewal.lease.key.as_str();
        blocking::single(self, key, self.plan_extend_shared(renewal, role))
    }

    fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> Result<ReleaseOutcome, Error> {
        let key = release.lease.key.as_str();
        let answer = blocking::single(self, key, self.plan_release_shared(release, role))?;
        Ok(released_shared(self, key, answer))
    }

    fn state_shared(&self, key: &LockName) -> Result<SharedState, Error> {
        blocking::single(self, key.as_str(), self.plan_state_shared(key))
    }
}

impl<S> AsyncSharedLockBackend for S
where
    S: SharedStore + AsyncLockBackend,
    for<'a> S: Runs<S::AcquireShared<'a>>
        + Runs<S::ExtendShared<'a>>
        + Runs<S::ReleaseShared<'a>>
        + Runs<S::StateShared<'a>>,
{
    async fn try_acquire_shared(&self, request: SharedRequest<'_>) -> Result<SharedOutcome, Error> {
        let key = request.request.key.as_str();
        nonblocking::single(self, key, self.plan_acquire_shared(request)).await
    }

    async fn extend_shared(
        &self,
        renewal: Renewal<'_>,
        role: Role,
    ) -> Result<ExtendOutcome, Error> {
        let key = renewal.lease.key.as_str();
        nonblocking::single(self, key, self.plan_extend_shared(renewal, role)).await
    }

    async fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> Result<ReleaseOutcome, Error> {
        let key = release.lease.key.as_str();
        let answer =
            nonblocking::single(self, key, self.plan_release_shared(release, role)).await?;
        Ok(released_shared(self, key, answer))
    }

    async fn state_shared(&self, key: &LockName) -> Result<SharedState, Error> {
        nonblocking::single(self, key.as_str(), self.plan_state_shared(key)).await
    }
}

/// After a read/write release of `key` answered `released`: waiters in this process wake
/// at once when it freed a hold. The notice names no token: a read/write lock's counter is
/// its own, and an observer of the exclusive lock of the same name must not read a token
/// of it as its holder's end.
fn released_shared<S: Store>(store: &S, key: &str, released: Released) -> ReleaseOutcome {
    if released == Released::Freed
        && let Some(waiters) = store.local_waiters()
    {
        waiters.notify(key);
    }
    released.outcome()
}
