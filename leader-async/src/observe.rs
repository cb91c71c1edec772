//! [`AsyncObserver`]: the changes of who holds a lock (or a group's slots), as a stream.

use std::fmt;
use std::future::pending;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures_lite::future::or;
use futures_util::Stream;
use leader_core::__private::{Observation, ObserveStep};
use leader_core::{
    AsyncLockBackend, Error, LeaderChange, LeaderState, ReleaseListener, ReleaseNotice, Shutdown,
};

use crate::rt;

/// The changes of who holds a lock, or every slot of a leader group: call
/// [`next`](AsyncObserver::next), or turn it into a `Stream` with
/// [`into_stream`](AsyncObserver::into_stream). From
/// [`AsyncLeaderElector::observe`](crate::AsyncLeaderElector::observe) or
/// [`AsyncLeaderGroupElector::observe`](crate::AsyncLeaderGroupElector::observe); it runs
/// on every runtime the electors do.
///
/// The first item is the lock as it is ([`ChangeKind::Initial`](leader_core::ChangeKind),
/// one per slot of a group); then one item per change: a new holder (`Acquired`), a holder
/// gone before its lease ran out (`Released`: released, or forced by an operator) or after
/// (`Expired`), each with the time this node saw it. Renewals are no change.
///
/// # How changes are seen
///
/// Where the backend sends release notifications (Redis pub/sub, PostgreSQL `NOTIFY`, etcd's
/// watch, the in-memory and SQLite backends in-process), a release wakes the observer at once, and it
/// reads the lock: a release shows within about one round trip of the notification.
/// Everything else — a new holder, an expiry, a release on a backend that does not notify
/// — is seen by polling: at the poll interval (1 s unless
/// [`with_poll_interval`](AsyncObserver::with_poll_interval) says otherwise), and just
/// after a lease the last read showed runs out, so an expiry shows when it happens.
///
/// # A slow reader
///
/// The observer buffers nothing that grows: it reads the lock when its reader asks for the
/// next change and none is pending. A reader that comes back late sees the lock as it is
/// then: the holder it last saw going, and who holds now; holders that came and went in
/// between are not reported, and `seen_at` is when it looked.
///
/// # Errors
///
/// A failed read is an `Err` item: after a transient one the observer reads again at the
/// poll interval; a permanent one (an invalid record, bad credentials) ends it.
///
/// # Cancel safety
///
/// `next` is cancel safe: a change it had not yet returned stays pending, a cancelled wait
/// keeps listening for releases, and a read in flight is dropped and made again.
///
/// # Examples
///
/// ```
/// use leader_async::AsyncLeaderElector;
/// use leader_core::{ChangeKind, InMemoryBackend, LeaderElectionOptions, LeaseMode};
///
/// # futures_lite::future::block_on(async {
/// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let mut changes = elector.observe("nightly")?;
/// assert_eq!(changes.next().await.unwrap()?.kind, ChangeKind::Initial);
///
/// let held = elector.acquire("nightly", LeaseMode::watchdog()).await?;
/// assert_eq!(changes.next().await.unwrap()?.kind, ChangeKind::Acquired);
/// held.release().await; // notified: seen at once
/// assert_eq!(changes.next().await.unwrap()?.kind, ChangeKind::Released);
/// # Ok::<(), leader_core::Error>(())
/// # }).unwrap();
/// ```
pub struct AsyncObserver<B> {
    backend: Arc<B>,
    /// What is observed (the keys, their names, where releases are notified) and every
    /// decision on it.
    engine: Observation,
    listener: Option<ReleaseListener>,
    shutdown: Option<Shutdown>,
}

impl<B> fmt::Debug for AsyncObserver<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncObserver")
            .field("keys", &self.engine.keys())
            .field("poll_interval", &self.engine.poll_interval())
            .finish_non_exhaustive()
    }
}

impl<B: AsyncLockBackend> AsyncObserver<B> {
    /// An observer of what `engine` observes.
    pub(crate) fn new(backend: Arc<B>, engine: Observation) -> Self {
        AsyncObserver {
            backend,
            engine,
            listener: None,
            shutdown: None,
        }
    }

    /// Reads at least every `interval` (1 s by default; at least 1 ms): the bound on how
    /// late a change that no notification announces is seen.
    #[must_use]
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.engine.set_poll_interval(interval);
        self
    }

    /// Ends the observer (`next` returns `None`) once `shutdown` is triggered, at once even
    /// while it waits.
    #[must_use]
    pub fn until(mut self, shutdown: &Shutdown) -> Self {
        self.shutdown = Some(shutdown.clone());
        self
    }

    /// The next change; `None` once the shutdown is triggered or after a permanent error.
    pub async fn next(&mut self) -> Option<Result<LeaderChange, Error>> {
        loop {
            if self.shutdown.as_ref().is_some_and(Shutdown::is_triggered) {
                return None;
            }
            match self.engine.step(Instant::now()) {
                ObserveStep::Yield(change) => return Some(Ok(change)),
                ObserveStep::Done => return None,
                ObserveStep::Wait { until } => {
                    if let Some(notice) = self.wait(until).await {
                        self.engine.notified(SystemTime::now(), &notice);
                    }
                }
                ObserveStep::Read => {
                    // Listen first: a release while the reader is busy wakes the next wait.
                    self.listener = self
                        .backend
                        .release_events()
                        .map(|events| events.listen(self.engine.listen_key()));
                    let read = self.read().await;
                    // Stamped when the answer came: see `Observation::answer`.
                    let seen_at = SystemTime::now();
                    if let Some(err) = self.engine.answer(read, seen_at, Instant::now()) {
                        return Some(Err(err));
                    }
                }
            }
        }
    }

    /// The observer as a `Stream` of its changes.
    ///
    /// ```
    /// use futures_util::StreamExt;
    /// use leader_async::AsyncLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// # futures_lite::future::block_on(async {
    /// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let changes = elector.observe("nightly")?.into_stream();
    /// let first: Vec<_> = changes.take(1).collect().await;
    /// assert_eq!(first[0].as_ref().unwrap().to_string(), "nightly free");
    /// # Ok::<(), leader_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn into_stream(self) -> impl Stream<Item = Result<LeaderChange, Error>> + Send
    where
        B: 'static,
    {
        futures_util::stream::unfold(self, |mut observer| async move {
            let item = observer.next().await?;
            Some((item, observer))
        })
    }

    async fn read(&self) -> Result<Vec<LeaderState>, Error> {
        let keys = self.engine.keys();
        let mut states = Vec::with_capacity(keys.len());
        for key in keys {
            states.push(self.backend.state(key).await?);
        }
        Ok(states)
    }

    /// Waits until `until`, a release notification (what it said) or the shutdown.
    async fn wait(&mut self, until: Instant) -> Option<ReleaseNotice> {
        let shutdown = self.shutdown.clone();
        // Borrowed, not taken: a wait that is cancelled keeps listening.
        let listener = self.listener.as_mut();
        let released = async move {
            match listener {
                Some(listener) => Some(listener.await),
                None => pending().await,
            }
        };
        let stopped = async move {
            match shutdown {
                Some(shutdown) => shutdown.triggered().await,
                None => pending().await,
            }
            None
        };
        let timer = async move {
            rt::sleep_until(until).await;
            None
        };
        let notice = or(released, or(stopped, timer)).await;
        if notice.is_some() {
            // Spent: the next read listens again.
            self.listener = None;
        }
        notice
    }
}
