//! How the checks get a backend and make its time pass.

use std::future::{Future, ready};
use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, AsyncSharedLockBackend, Backend, Error,
    ExtendOutcome, ForceReleaseOutcome, InMemoryBackend, LeaderState, ListPage, ListRequest,
    LockBackend, LockName, ManualClock, RecordWrite, RecordWriteOutcome, ReleaseEvents,
    ReleaseOutcome, ReleaseRequest, Renewal, Role, SharedLockBackend, SharedOutcome, SharedRequest,
    SharedState, SlotOutcome, SlotRequest, StoredRecord,
};
use rand::Rng;

/// What the contract checks need from a backend under test.
pub trait Harness: Send + Sync + 'static {
    /// The backend type under test.
    type Backend: Backend + 'static;

    /// A backend handle (a new one per call; several may share one store).
    fn backend(&self) -> impl Future<Output = Self::Backend>;

    /// Lets `by` pass on the backend's clock (a manual clock moves; a server's is waited for).
    fn advance(&self, by: Duration);

    /// Lets a lease of `lease` run out in the store: [`advance`](Self::advance) by one and a
    /// half leases unless the store frees expired locks later than that (etcd removes an
    /// expired lease's keys up to a second and a half after a lease it rounded up to whole
    /// seconds).
    fn expire(&self, lease: Duration) {
        self.advance(lease + lease / 2);
    }

    /// The backend's current time (a server's `TIME`, the in-memory clock).
    fn backend_now(&self) -> SystemTime;

    /// A lease short enough for the checks to wait out with [`advance`](Self::advance).
    fn short_lease(&self) -> Duration {
        Duration::from_millis(300)
    }

    /// How far a reported timestamp may stray from the clock it was taken from.
    fn clock_tolerance(&self) -> Duration {
        Duration::from_millis(250)
    }

    /// The longest name the checks may use; less than [`LockName::MAX_LEN`] when the
    /// backend under test stores names behind a prefix (tenant scoping).
    fn max_name_len(&self) -> usize {
        LockName::MAX_LEN
    }
}

/// A fresh random lock name with a readable prefix, so checks never share state.
pub fn fresh_name(check: &str) -> LockName {
    let suffix: u64 = rand::rng().random();
    LockName::new(format!("contract:{check}:{suffix:016x}")).expect("valid name")
}

/// [`InMemoryBackend`] on a [`ManualClock`] set one hour ahead of the system clock, so
/// that `use_db_time` is visible and expiry costs no sleeping.
#[derive(Debug, Clone)]
pub struct MemoryHarness {
    clock: ManualClock,
    backend: InMemoryBackend,
}

impl MemoryHarness {
    /// A harness with its own backend.
    pub fn new() -> Self {
        let clock = ManualClock::new(SystemTime::now() + Duration::from_secs(3600));
        let backend = InMemoryBackend::with_clock(clock.clone());
        MemoryHarness { clock, backend }
    }
}

impl Default for MemoryHarness {
    fn default() -> Self {
        MemoryHarness::new()
    }
}

impl Harness for MemoryHarness {
    type Backend = InMemoryBackend;

    fn backend(&self) -> impl Future<Output = InMemoryBackend> {
        ready(self.backend.clone())
    }

    fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    fn backend_now(&self) -> SystemTime {
        self.backend.now()
    }

    fn clock_tolerance(&self) -> Duration {
        Duration::from_millis(50)
    }
}

/// Runs the checks on a harness's *blocking* API: its backend is wrapped in [`BlockingAsAsync`].
#[derive(Debug, Clone)]
pub struct Blocking<H>(pub H);

impl<H> Harness for Blocking<H>
where
    H: Harness,
    H::Backend: LockBackend,
{
    type Backend = BlockingAsAsync<H::Backend>;

    async fn backend(&self) -> Self::Backend {
        BlockingAsAsync(self.0.backend().await)
    }

    fn advance(&self, by: Duration) {
        self.0.advance(by);
    }

    fn expire(&self, lease: Duration) {
        self.0.expire(lease);
    }

    fn backend_now(&self) -> SystemTime {
        self.0.backend_now()
    }

    fn short_lease(&self) -> Duration {
        self.0.short_lease()
    }

    fn clock_tolerance(&self) -> Duration {
        self.0.clock_tolerance()
    }

    fn max_name_len(&self) -> usize {
        self.0.max_name_len()
    }
}

/// Presents a blocking backend through the async trait by calling its blocking methods
/// when the future is created. For tests only: it blocks whatever thread polls it.
#[derive(Debug, Clone)]
pub struct BlockingAsAsync<B>(pub B);

impl<B: LockBackend> Backend for BlockingAsAsync<B> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn release_events(&self) -> Option<&ReleaseEvents> {
        self.0.release_events()
    }
}

impl<B: LockBackend> AsyncLockBackend for BlockingAsAsync<B> {
    fn try_acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<AcquireOutcome, Error>> + Send {
        ready(self.0.try_acquire(request))
    }

    fn try_acquire_slot(
        &self,
        request: SlotRequest<'_>,
    ) -> impl Future<Output = Result<SlotOutcome, Error>> + Send {
        ready(self.0.try_acquire_slot(request))
    }

    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> impl Future<Output = Vec<Result<AcquireOutcome, Error>>> + Send {
        ready(self.0.try_acquire_batch(requests))
    }

    fn extend(
        &self,
        renewal: Renewal<'_>,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send {
        ready(self.0.extend(renewal))
    }

    fn extend_batch(
        &self,
        renewals: &[Renewal<'_>],
    ) -> impl Future<Output = Vec<Result<ExtendOutcome, Error>>> + Send {
        ready(self.0.extend_batch(renewals))
    }

    fn release(
        &self,
        release: ReleaseRequest<'_>,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        ready(self.0.release(release))
    }

    fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> impl Future<Output = Vec<Result<ReleaseOutcome, Error>>> + Send {
        ready(self.0.release_batch(releases))
    }

    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send {
        ready(self.0.state(key))
    }

    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send {
        ready(self.0.list(request))
    }

    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        ready(self.0.force_release(key))
    }

    fn extend_batch_is_native(&self) -> bool {
        self.0.extend_batch_is_native()
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        ready(self.0.force_release_if(key, fencing_token))
    }

    fn read_record(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<Option<StoredRecord>, Error>> + Send {
        ready(self.0.read_record(key))
    }

    fn write_record(
        &self,
        write: RecordWrite<'_>,
    ) -> impl Future<Output = Result<RecordWriteOutcome, Error>> + Send {
        ready(self.0.write_record(write))
    }
}

impl<B: SharedLockBackend> AsyncSharedLockBackend for BlockingAsAsync<B> {
    fn try_acquire_shared(
        &self,
        request: SharedRequest<'_>,
    ) -> impl Future<Output = Result<SharedOutcome, Error>> + Send {
        ready(self.0.try_acquire_shared(request))
    }

    fn extend_shared(
        &self,
        renewal: Renewal<'_>,
        role: Role,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send {
        ready(self.0.extend_shared(renewal, role))
    }

    fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        ready(self.0.release_shared(release, role))
    }

    fn state_shared(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<SharedState, Error>> + Send {
        ready(self.0.state_shared(key))
    }
}
