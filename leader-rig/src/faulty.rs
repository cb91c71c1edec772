//! [`FaultyBackend`]: a backend wrapper that injects the faults a real server produces only
//! at awkward moments — an answer lost after the work was done, a server that stops
//! answering, an answer that comes after the lease it grants, a corrupted record — so
//! electors can be tested against them on demand.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use event_listener::{Event, Listener};
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, BackendError, BackendErrorKind,
    Error, ExtendOutcome, ForceReleaseOutcome, LeaderState, ListPage, ListRequest, LockBackend,
    LockName, RecordWrite, RecordWriteOutcome, ReleaseEvents, ReleaseOutcome, ReleaseRequest,
    Renewal, StoredRecord,
};
use parking_lot::Mutex;

/// One of the backend operations a fault can be set on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `try_acquire`.
    Acquire,
    /// `extend`.
    Extend,
    /// `release`.
    Release,
    /// `state`.
    State,
    /// `list` (the campaign's survey of ranked candidates uses it).
    List,
    /// `read_record` and `write_record` (the scheduler's tick claims).
    Record,
}

impl Op {
    const ALL: [Op; 6] = [
        Op::Acquire,
        Op::Extend,
        Op::Release,
        Op::State,
        Op::List,
        Op::Record,
    ];

    fn index(self) -> usize {
        match self {
            Op::Acquire => 0,
            Op::Extend => 1,
            Op::Release => 2,
            Op::State => 3,
            Op::List => 4,
            Op::Record => 5,
        }
    }
}

/// What happens to the calls of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer at once with a transient error, without reaching the store (connection refused).
    Fail,
    /// Do the work, then answer with a transient error (the answer was lost: a response
    /// timeout, a reset connection, a write-concern error).
    ApplyThenFail,
    /// Do the work, then answer only once the fault is cleared (a server that stopped
    /// answering after it applied the request).
    ApplyThenStall,
    /// Answer only once the fault is cleared, and do the work then (a paused server that
    /// applies a queued request when it resumes). An async call dropped while stalled
    /// never reaches the store.
    Stall,
    /// Wait this long, then do the work and answer (a process paused before its request
    /// reached the store, or a server paused with it queued: the work, done late, starts
    /// a fresh lease on the store's clock). An async call dropped while it waits never
    /// reaches the store.
    Delay(Duration),
    /// Do the work, then answer only this long after (a process paused after its commit
    /// and before it read the answer; a slow network on the way back).
    ApplyThenDelay(Duration),
}

/// Wraps a backend and injects [`Fault`]s per [`Op`]; without faults it passes every call
/// through. Implements the blocking and the async trait when the inner backend does.
///
/// Clones share the faults and the call counters.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireRequest, InMemoryBackend, LockBackend, LockName, OwnerToken};
/// use leader_rig::{Fault, FaultyBackend, Op};
///
/// let backend = FaultyBackend::new(InMemoryBackend::new());
/// backend.set(Op::Acquire, Fault::ApplyThenFail);
/// let key = LockName::new("job")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(30));
/// assert!(backend.try_acquire(request).is_err()); // ... yet the lock is taken:
/// assert!(backend.inner().state(&key)?.leader().is_some());
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Clone)]
pub struct FaultyBackend<B> {
    inner: B,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    faults: Mutex<[Option<Fault>; Op::ALL.len()]>,
    /// Faults on one key's calls only, ahead of `faults`.
    key_faults: Mutex<Vec<(Op, String, Fault)>>,
    changed: Event,
    calls: [AtomicUsize; Op::ALL.len()],
    /// Keys whose record is corrupted: every call on them fails permanently.
    corrupted: Mutex<HashSet<String>>,
}

impl<B: fmt::Debug> fmt::Debug for FaultyBackend<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultyBackend")
            .field("inner", &self.inner)
            .field("faults", &*self.shared.faults.lock())
            .finish()
    }
}

impl<B> FaultyBackend<B> {
    /// Wraps `inner`, with no faults.
    pub fn new(inner: B) -> Self {
        FaultyBackend {
            inner,
            shared: Arc::default(),
        }
    }

    /// The wrapped backend (unaffected by faults: use it as another, healthy node).
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Injects `fault` into every later call of `op` (and wakes calls stalled on it).
    pub fn set(&self, op: Op, fault: Fault) {
        self.shared.faults.lock()[op.index()] = Some(fault);
        self.shared.changed.notify(usize::MAX);
    }

    /// Injects `fault` into every later call of `op` on the key `key` alone (a row locked
    /// by another client, a key on a stuck shard), ahead of any fault [`set`](Self::set)
    /// for `op`. [`clear`](Self::clear) and [`heal`](Self::heal) lift it too.
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_core::{AcquireRequest, InMemoryBackend, LockBackend, LockName, OwnerToken};
    /// use leader_rig::{Fault, FaultyBackend, Op};
    ///
    /// let backend = FaultyBackend::new(InMemoryBackend::new());
    /// let (stuck, fine) = (LockName::new("stuck")?, LockName::new("fine")?);
    /// backend.set_on_key(Op::Acquire, &stuck, Fault::Fail);
    /// let lease = Duration::from_secs(30);
    /// assert!(backend.try_acquire(AcquireRequest::new(&stuck, OwnerToken::random(), "n", lease)).is_err());
    /// assert!(backend.try_acquire(AcquireRequest::new(&fine, OwnerToken::random(), "n", lease)).is_ok());
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn set_on_key(&self, op: Op, key: &LockName, fault: Fault) {
        let mut faults = self.shared.key_faults.lock();
        faults.retain(|(o, k, _)| !(*o == op && k == key.as_str()));
        faults.push((op, key.as_str().to_owned(), fault));
        drop(faults);
        self.shared.changed.notify(usize::MAX);
    }

    /// Injects `fault` into every operation (`Fault::Fail`: the store is unreachable).
    pub fn set_all(&self, fault: Fault) {
        for op in Op::ALL {
            self.set(op, fault);
        }
    }

    /// Clears the faults of `op` (on every key): stalled calls of it go on.
    pub fn clear(&self, op: Op) {
        self.shared.faults.lock()[op.index()] = None;
        self.shared.key_faults.lock().retain(|(o, ..)| *o != op);
        self.shared.changed.notify(usize::MAX);
    }

    /// Clears every fault.
    pub fn heal(&self) {
        for op in Op::ALL {
            self.clear(op);
        }
    }

    /// Makes the record of `key` corrupted: from now on every call on it (any operation)
    /// answers a permanent error without reaching the store, as a backend answers a
    /// record it cannot read. Other keys are unaffected.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_core::{AcquireRequest, InMemoryBackend, LockBackend, LockName, OwnerToken};
    /// use leader_rig::FaultyBackend;
    ///
    /// let backend = FaultyBackend::new(InMemoryBackend::new());
    /// let key = LockName::new("job#1")?;
    /// backend.corrupt(&key);
    /// let request = AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(30));
    /// let err = backend.try_acquire(request).unwrap_err();
    /// assert!(!err.is_transient());
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn corrupt(&self, key: &LockName) {
        self.shared.corrupted.lock().insert(key.as_str().to_owned());
    }

    /// How many calls of `op` were made so far (faulted or not).
    pub fn calls(&self, op: Op) -> usize {
        self.shared.calls[op.index()].load(Ordering::SeqCst)
    }

    fn enter(&self, op: Op, key: &str) -> Option<Fault> {
        self.shared.calls[op.index()].fetch_add(1, Ordering::SeqCst);
        self.fault(op, key)
    }

    /// The permanent error of a call on `key`, when its record is corrupted.
    fn corrupted(&self, op: Op, key: &str) -> Result<(), Error> {
        if !self.shared.corrupted.lock().contains(key) {
            return Ok(());
        }
        let message = format!("injected fault: corrupted record (on {op:?})");
        Err(BackendError::new("faulty", key, BackendErrorKind::Permanent, message).into())
    }

    fn fault(&self, op: Op, key: &str) -> Option<Fault> {
        let on_key = self
            .shared
            .key_faults
            .lock()
            .iter()
            .find(|(o, k, _)| *o == op && k == key)
            .map(|(.., fault)| *fault);
        on_key.or(self.shared.faults.lock()[op.index()])
    }

    /// Blocks until `op` on `key` no longer stalls.
    fn wait_blocking(&self, op: Op, key: &str) {
        loop {
            let listener = self.shared.changed.listen();
            if !self.stalls(op, key) {
                return;
            }
            listener.wait();
        }
    }

    async fn wait_async(&self, op: Op, key: &str) {
        loop {
            let listener = self.shared.changed.listen();
            if !self.stalls(op, key) {
                return;
            }
            listener.await;
        }
    }

    fn stalls(&self, op: Op, key: &str) -> bool {
        matches!(
            self.fault(op, key),
            Some(Fault::Stall | Fault::ApplyThenStall)
        )
    }

    /// Runs a blocking call of `op` through its fault.
    fn blocking<T>(
        &self,
        op: Op,
        key: &str,
        call: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        let fault = self.enter(op, key);
        self.corrupted(op, key)?;
        match fault {
            None => call(),
            Some(Fault::Fail) => Err(lost(op, key)),
            Some(Fault::ApplyThenFail) => call().and_then(|_| Err(lost(op, key))),
            Some(Fault::ApplyThenStall) => {
                let answer = call();
                self.wait_blocking(op, key);
                answer
            }
            Some(Fault::Stall) => {
                self.wait_blocking(op, key);
                call()
            }
            Some(Fault::Delay(delay)) => {
                std::thread::sleep(delay);
                call()
            }
            Some(Fault::ApplyThenDelay(delay)) => {
                let answer = call();
                std::thread::sleep(delay);
                answer
            }
        }
    }

    /// Runs an async call of `op` through its fault. The call's future is made only when
    /// the work is due (backends may do it when the future is made).
    async fn nonblocking<T, F: Future<Output = Result<T, Error>>>(
        &self,
        op: Op,
        key: &str,
        call: impl FnOnce() -> F,
    ) -> Result<T, Error> {
        let fault = self.enter(op, key);
        self.corrupted(op, key)?;
        match fault {
            None => call().await,
            Some(Fault::Fail) => Err(lost(op, key)),
            Some(Fault::ApplyThenFail) => call().await.and_then(|_| Err(lost(op, key))),
            Some(Fault::ApplyThenStall) => {
                let answer = call().await;
                self.wait_async(op, key).await;
                answer
            }
            Some(Fault::Stall) => {
                self.wait_async(op, key).await;
                call().await
            }
            Some(Fault::Delay(delay)) => {
                async_io::Timer::after(delay).await;
                call().await
            }
            Some(Fault::ApplyThenDelay(delay)) => {
                let answer = call().await;
                async_io::Timer::after(delay).await;
                answer
            }
        }
    }
}

/// The transient error a faulted call answers with.
fn lost(op: Op, key: &str) -> Error {
    let io = std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("injected fault: no answer to {op:?}"),
    );
    BackendError::new("faulty", key, BackendErrorKind::Transient, io).into()
}

impl<B: Backend> Backend for FaultyBackend<B> {
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

impl<B: LockBackend> LockBackend for FaultyBackend<B> {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.blocking(Op::Acquire, request.key.as_str(), || {
            self.inner.try_acquire(request)
        })
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let lease = renewal.lease;
        self.blocking(Op::Extend, lease.key.as_str(), || {
            self.inner.extend(renewal)
        })
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let lease = release.lease;
        self.blocking(Op::Release, lease.key.as_str(), || {
            self.inner.release(release)
        })
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.blocking(Op::State, key.as_str(), || self.inner.state(key))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.blocking(Op::List, &request.prefix, || self.inner.list(request))
    }

    /// Force-release passes through unfaulted.
    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release(key)
    }

    /// Passes through unfaulted, as `force_release`.
    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release_if(key, fencing_token)
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.blocking(Op::Record, key.as_str(), || self.inner.read_record(key))
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.blocking(Op::Record, write.key().as_str(), || {
            self.inner.write_record(write)
        })
    }
}

impl<B: AsyncLockBackend> AsyncLockBackend for FaultyBackend<B> {
    fn try_acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<AcquireOutcome, Error>> + Send {
        self.nonblocking(Op::Acquire, request.key.as_str(), move || {
            self.inner.try_acquire(request)
        })
    }

    fn extend(
        &self,
        renewal: Renewal<'_>,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send {
        let lease = renewal.lease;
        self.nonblocking(Op::Extend, lease.key.as_str(), move || {
            self.inner.extend(renewal)
        })
    }

    fn release(
        &self,
        release: ReleaseRequest<'_>,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        let lease = release.lease;
        self.nonblocking(Op::Release, lease.key.as_str(), move || {
            self.inner.release(release)
        })
    }

    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send {
        self.nonblocking(Op::State, key.as_str(), move || self.inner.state(key))
    }

    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send {
        self.nonblocking(Op::List, &request.prefix, move || self.inner.list(request))
    }

    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.inner.force_release(key)
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        self.inner.force_release_if(key, fencing_token)
    }

    fn read_record(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<Option<StoredRecord>, Error>> + Send {
        self.nonblocking(Op::Record, key.as_str(), move || {
            self.inner.read_record(key)
        })
    }

    fn write_record(
        &self,
        write: RecordWrite<'_>,
    ) -> impl Future<Output = Result<RecordWriteOutcome, Error>> + Send {
        self.nonblocking(Op::Record, write.key().as_str(), move || {
            self.inner.write_record(write)
        })
    }
}
