//! [`SharedSide`]: one side (read or write) of a backend's read/write locks, presented as
//! a [`LockBackend`] so that the electors' whole lease machinery (the acquire loop's
//! [`Attempts`](crate::__private::Attempts), renewals, late leases, orphan releases, the
//! minimum lease) runs on read/write locks unchanged: `extend` and `release` are the
//! side's role's, and an acquire answered [`SharedOutcome::Queued`] is a refusal whose
//! intent the acquire loop withdraws if it gives up ([`SharedSide::slot_outcome`]).

use std::future::Future;
use std::sync::Arc;

use crate::error::{BackendError, BackendErrorKind, Error};
use crate::name::LockName;
use crate::spi::backend::{AsyncLockBackend, Backend, LockBackend};
use crate::spi::listing::{ForceReleaseOutcome, ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome, ReleaseOutcome, SlotOutcome};
use crate::spi::record::{RecordWrite, RecordWriteOutcome, StoredRecord};
use crate::spi::release_events::ReleaseEvents;
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal};
use crate::spi::shared::{
    AsyncSharedLockBackend, MaxReaders, Role, SharedLockBackend, SharedOutcome, SharedRequest,
    SharedState,
};
use crate::spi::state::{LeaderLease, LeaderState};

/// The read side or the write side of `B`'s read/write locks.
#[derive(Debug)]
pub struct SharedSide<B> {
    inner: Arc<B>,
    role: Role,
    max_readers: MaxReaders,
}

impl<B> SharedSide<B> {
    /// The `role` side of `inner`'s read/write locks; reads among at most `max_readers`.
    pub fn new(inner: Arc<B>, role: Role, max_readers: MaxReaders) -> Self {
        SharedSide {
            inner,
            role,
            max_readers,
        }
    }

    /// The backend.
    pub fn inner(&self) -> &Arc<B> {
        &self.inner
    }

    /// Read or write.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The request of this side for `request`.
    pub fn request<'a>(&self, request: AcquireRequest<'a>) -> SharedRequest<'a> {
        SharedRequest::new(request, self.role, self.max_readers)
    }

    /// `outcome` as the acquire loop takes it, and whether it left something of the
    /// request's in the store that is no hold: a writer's intent (`Queued`), which the loop
    /// withdraws (releases as an orphan) if it gives up.
    pub fn slot_outcome(outcome: SharedOutcome) -> (SlotOutcome, bool) {
        match outcome {
            SharedOutcome::Acquired(lease) => (SlotOutcome::Acquired { slot: 0, lease }, false),
            SharedOutcome::Held(state) => (SlotOutcome::Held(first_holder(state)), false),
            SharedOutcome::Queued(state) => (SlotOutcome::Held(first_holder(state)), true),
        }
    }
}

/// The holder an error names: the writer, else the first reader.
fn first_holder(state: SharedState) -> Option<LeaderLease> {
    state.writer.or_else(|| state.readers.into_iter().next())
}

/// The snapshot as a single holder (the writer, else the first reader).
fn as_leader_state(state: SharedState) -> LeaderState {
    let name = state.lock_name.clone();
    match first_holder(state) {
        Some(holder) => LeaderState::occupied(name, holder),
        None => LeaderState::empty(name),
    }
}

fn no_such_call<B: Backend>(backend: &B, key: &str, call: &str) -> Error {
    Error::Backend(BackendError::new(
        backend.name(),
        key,
        BackendErrorKind::Permanent,
        format!("{call} is no operation of a read/write lock's side"),
    ))
}

impl<B: Backend> Backend for SharedSide<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn release_events(&self) -> Option<&ReleaseEvents> {
        self.inner.release_events()
    }

    fn storage_key(&self, name: &LockName) -> String {
        self.inner.storage_key(name)
    }
}

impl<B: SharedLockBackend> SharedSide<B> {
    /// Tries this side of `request`'s lock: the answer as the acquire loop takes it (see
    /// [`slot_outcome`](Self::slot_outcome)).
    ///
    /// # Errors
    ///
    /// The backend's.
    pub fn try_acquire_queued(
        &self,
        request: AcquireRequest<'_>,
    ) -> Result<(SlotOutcome, bool), Error> {
        let outcome = self.inner.try_acquire_shared(self.request(request))?;
        Ok(Self::slot_outcome(outcome))
    }
}

impl<B: AsyncSharedLockBackend> SharedSide<B> {
    /// The async [`try_acquire_queued`](Self::try_acquire_queued).
    ///
    /// # Errors
    ///
    /// The backend's.
    pub async fn try_acquire_queued_async(
        &self,
        request: AcquireRequest<'_>,
    ) -> Result<(SlotOutcome, bool), Error> {
        let outcome = self.inner.try_acquire_shared(self.request(request)).await?;
        Ok(Self::slot_outcome(outcome))
    }
}

impl<B: SharedLockBackend> LockBackend for SharedSide<B> {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let (outcome, _) = self.try_acquire_queued(request)?;
        Ok(outcome.into_acquire())
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        self.inner.extend_shared(renewal, self.role)
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        self.inner.release_shared(release, self.role)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.inner.state_shared(key).map(as_leader_state)
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        Err(no_such_call(self, &request.prefix, "list"))
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        Err(no_such_call(self, key.as_str(), "force_release"))
    }

    fn force_release_if(&self, key: &LockName, _: u64) -> Result<ForceReleaseOutcome, Error> {
        Err(no_such_call(self, key.as_str(), "force_release_if"))
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        Err(no_such_call(self, key.as_str(), "read_record"))
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        Err(no_such_call(self, write.key().as_str(), "write_record"))
    }
}

impl<B: AsyncSharedLockBackend> AsyncLockBackend for SharedSide<B> {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let (outcome, _) = self.try_acquire_queued_async(request).await?;
        Ok(outcome.into_acquire())
    }

    fn extend(
        &self,
        renewal: Renewal<'_>,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send {
        self.inner.extend_shared(renewal, self.role)
    }

    fn release(
        &self,
        release: ReleaseRequest<'_>,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        self.inner.release_shared(release, self.role)
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.inner.state_shared(key).await.map(as_leader_state)
    }

    async fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        Err(no_such_call(self, &request.prefix, "list"))
    }

    async fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        Err(no_such_call(self, key.as_str(), "force_release"))
    }

    async fn force_release_if(&self, key: &LockName, _: u64) -> Result<ForceReleaseOutcome, Error> {
        Err(no_such_call(self, key.as_str(), "force_release_if"))
    }

    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        Err(no_such_call(self, key.as_str(), "read_record"))
    }

    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        Err(no_such_call(self, write.key().as_str(), "write_record"))
    }
}
