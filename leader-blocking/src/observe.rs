//! [`Observer`]: the changes of who holds a lock (or a group's slots), as an iterator.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use leader_core::__private::{Observation, ObserveStep};
use leader_core::{
    Error, LeaderChange, LeaderState, LockBackend, ReleaseListener, ReleaseNotice, Shutdown,
};

/// While a shutdown may end a wait on a release notification, the wait is cut in slices
/// this long to look at the signal.
const SHUTDOWN_SLICE: Duration = Duration::from_millis(50);

/// The changes of who holds a lock, or every slot of a leader group: an iterator that
/// blocks until the next change. From [`LeaderElector::observe`](crate::LeaderElector::observe)
/// or [`LeaderGroupElector::observe`](crate::LeaderGroupElector::observe).
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
/// reads the lock: a release shows within about one round trip of the notification, and
/// the next holder as soon as it is in the store when that read is made. Everything else —
/// a new holder, an expiry, a release on a backend that does not notify — is seen by
/// polling: at the poll interval (1 s unless
/// [`with_poll_interval`](Observer::with_poll_interval) says otherwise), and just after a
/// lease the last read showed runs out, so an expiry shows when it happens.
///
/// # A slow reader
///
/// The observer buffers nothing that grows: it reads the lock when its reader asks for the
/// next change and none is pending. A reader that comes back late sees the lock as it is
/// then: the holder it last saw going, and who holds now; holders that came and went in
/// between are not reported, and `seen_at` is when it looked. Memory stays the same however
/// slow the reader is; run the observer on its own thread to see every change promptly.
///
/// # Errors
///
/// A failed read is an `Err` item: after a transient one the observer reads again at the
/// poll interval; a permanent one (an invalid record, bad credentials) ends it.
///
/// # Examples
///
/// ```
/// use leader_blocking::LeaderElector;
/// use leader_core::{ChangeKind, InMemoryBackend, LeaderElectionOptions, LeaseMode};
///
/// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let mut changes = elector.observe("nightly")?;
/// assert_eq!(changes.next().unwrap()?.kind, ChangeKind::Initial);
///
/// let held = elector.acquire("nightly", LeaseMode::watchdog())?;
/// let acquired = changes.next().unwrap()?;
/// assert_eq!(acquired.kind, ChangeKind::Acquired);
/// assert_eq!(acquired.holder.unwrap().fencing_token, held.fencing_token());
///
/// held.release()?; // the in-memory backend notifies: seen at once, not a poll later
/// assert_eq!(changes.next().unwrap()?.kind, ChangeKind::Released);
/// # Ok::<(), leader_core::Error>(())
/// ```
pub struct Observer<B> {
    backend: Arc<B>,
    /// What is observed (the keys, their names, where releases are notified) and every
    /// decision on it.
    engine: Observation,
    listener: Option<ReleaseListener>,
    shutdown: Option<Shutdown>,
}

impl<B> fmt::Debug for Observer<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("keys", &self.engine.keys())
            .field("poll_interval", &self.engine.poll_interval())
            .finish_non_exhaustive()
    }
}

impl<B: LockBackend> Observer<B> {
    /// An observer of what `engine` observes.
    pub(crate) fn new(backend: Arc<B>, engine: Observation) -> Self {
        Observer {
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

    /// Ends the iterator (`None`) once `shutdown` is triggered, within about 50 ms even
    /// while it waits.
    #[must_use]
    pub fn until(mut self, shutdown: &Shutdown) -> Self {
        self.shutdown = Some(shutdown.clone());
        self
    }

    fn read(&self) -> Result<Vec<LeaderState>, Error> {
        self.engine
            .keys()
            .iter()
            .map(|key| self.backend.state(key))
            .collect()
    }

    /// Waits until `until`, a release notification (what it said) or the shutdown.
    fn wait(&mut self, until: Instant) -> Option<ReleaseNotice> {
        loop {
            let now = Instant::now();
            if now >= until || self.is_shut_down() {
                return None;
            }
            let mut slice = until - now;
            if self.shutdown.is_some() {
                slice = slice.min(SHUTDOWN_SLICE);
            }
            let Some(listener) = self.listener.take() else {
                match &self.shutdown {
                    Some(shutdown) => {
                        shutdown.wait_until(until);
                    }
                    None => std::thread::sleep(slice),
                }
                continue;
            };
            // Waiting spends a listener, so the next slice's listens before this one
            // waits: a release as this slice ends wakes that one, and none falls between.
            let next = self.listen();
            if let Some(notice) = listener.wait_notice_timeout(slice) {
                return Some(notice);
            }
            self.listener = next;
        }
    }

    fn listen(&self) -> Option<ReleaseListener> {
        self.backend
            .release_events()
            .map(|events| events.listen(self.engine.listen_key()))
    }

    fn is_shut_down(&self) -> bool {
        self.shutdown.as_ref().is_some_and(Shutdown::is_triggered)
    }
}

impl<B: LockBackend> Iterator for Observer<B> {
    type Item = Result<LeaderChange, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.is_shut_down() {
                return None;
            }
            match self.engine.step(Instant::now()) {
                ObserveStep::Yield(change) => return Some(Ok(change)),
                ObserveStep::Done => return None,
                ObserveStep::Wait { until } => {
                    if let Some(notice) = self.wait(until) {
                        self.engine.notified(SystemTime::now(), &notice);
                    }
                }
                ObserveStep::Read => {
                    // Listen first: a release while the reader is busy wakes the next wait.
                    self.listener = self.listen();
                    let read = self.read();
                    // Stamped when the answer came: see `Observation::answer`.
                    let seen_at = SystemTime::now();
                    if let Some(err) = self.engine.answer(read, seen_at, Instant::now()) {
                        return Some(Err(err));
                    }
                }
            }
        }
    }
}
