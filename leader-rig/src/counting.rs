//! [`CountingBackend`]: a blocking backend wrapper that counts its calls, for tests and
//! benches that report how many calls (round trips, on a server backend) work costs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Error, ExtendOutcome, ForceReleaseOutcome,
    LeaderState, ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome,
    ReleaseEvents, ReleaseOutcome, ReleaseRequest, Renewal, SlotOutcome, SlotRequest, StoredRecord,
};

/// One method of [`LockBackend`], as [`CallCounter`] counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// `try_acquire`.
    TryAcquire,
    /// `try_acquire_slot`.
    TryAcquireSlot,
    /// `try_acquire_batch`.
    TryAcquireBatch,
    /// `extend`.
    Extend,
    /// `extend_batch`.
    ExtendBatch,
    /// `release`.
    Release,
    /// `release_batch`.
    ReleaseBatch,
    /// `state`.
    State,
    /// `list`.
    List,
    /// `force_release` and `force_release_if`.
    ForceRelease,
    /// `read_record` and `write_record`.
    Record,
}

impl Call {
    const COUNT: usize = 11;

    fn index(self) -> usize {
        self as usize
    }
}

/// The calls a [`CountingBackend`] saw, per [`Call`]: how many, and how many locks they
/// carried (one for a single call, the batch's length for a batch). Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct CallCounter {
    counts: Arc<[(AtomicU64, AtomicU64); Call::COUNT]>,
}

impl CallCounter {
    /// How many calls of `call` were made.
    pub fn calls(&self, call: Call) -> u64 {
        self.counts[call.index()].0.load(Ordering::SeqCst)
    }

    /// How many locks the calls of `call` carried.
    pub fn locks(&self, call: Call) -> u64 {
        self.counts[call.index()].1.load(Ordering::SeqCst)
    }

    /// Sets every count back to zero.
    pub fn reset(&self) {
        for (calls, locks) in self.counts.iter() {
            calls.store(0, Ordering::SeqCst);
            locks.store(0, Ordering::SeqCst);
        }
    }

    fn count(&self, call: Call, locks: usize) {
        let (calls, carried) = &self.counts[call.index()];
        calls.fetch_add(1, Ordering::SeqCst);
        carried.fetch_add(u64::try_from(locks).unwrap_or(u64::MAX), Ordering::SeqCst);
    }
}

/// Wraps a blocking backend and passes every call through, counting it (see
/// [`CallCounter`]); batches stay batches, so a backend's own batching is what is counted.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireRequest, InMemoryBackend, LockBackend, LockName, OwnerToken};
/// use leader_rig::{Call, CountingBackend};
///
/// let backend = CountingBackend::new(InMemoryBackend::new());
/// let counter = backend.counter();
/// let keys = [LockName::new("a")?, LockName::new("b")?];
/// let requests: Vec<_> = keys
///     .iter()
///     .map(|key| AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30)))
///     .collect();
/// backend.try_acquire_batch(&requests);
/// assert_eq!((counter.calls(Call::TryAcquireBatch), counter.locks(Call::TryAcquireBatch)), (1, 2));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
pub struct CountingBackend<B> {
    inner: B,
    counter: CallCounter,
}

impl<B> CountingBackend<B> {
    /// Wraps `inner`, every count at zero.
    pub fn new(inner: B) -> Self {
        CountingBackend {
            inner,
            counter: CallCounter::default(),
        }
    }

    /// The counts, shared with this backend (keep it when the backend moves into an elector).
    pub fn counter(&self) -> CallCounter {
        self.counter.clone()
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }
}

impl<B: Backend> Backend for CountingBackend<B> {
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

impl<B: LockBackend> LockBackend for CountingBackend<B> {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.counter.count(Call::TryAcquire, 1);
        self.inner.try_acquire(request)
    }

    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        self.counter.count(Call::TryAcquireSlot, request.len());
        self.inner.try_acquire_slot(request)
    }

    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        self.counter.count(Call::TryAcquireBatch, requests.len());
        self.inner.try_acquire_batch(requests)
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time, db) = (renewal.lease, renewal.lease_time, renewal.use_db_time);
        self.counter.count(Call::Extend, 1);
        self.inner
            .extend(Renewal::new(lease, lease_time).with_db_time(db))
    }

    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        self.counter.count(Call::ExtendBatch, renewals.len());
        self.inner.extend_batch(renewals)
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        self.counter.count(Call::Release, 1);
        self.inner.release(release)
    }

    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        self.counter.count(Call::ReleaseBatch, releases.len());
        self.inner.release_batch(releases)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.counter.count(Call::State, 1);
        self.inner.state(key)
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.counter.count(Call::List, 1);
        self.inner.list(request)
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.counter.count(Call::ForceRelease, 1);
        self.inner.force_release(key)
    }

    fn extend_batch_is_native(&self) -> bool {
        self.inner.extend_batch_is_native()
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.counter.count(Call::ForceRelease, 1);
        self.inner.force_release_if(key, fencing_token)
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.counter.count(Call::Record, 1);
        self.inner.read_record(key)
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.counter.count(Call::Record, 1);
        self.inner.write_record(write)
    }
}
