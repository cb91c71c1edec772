//! [`SqliteBackend`]: one database file, and how every call reaches it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::{
    Backend, Error, ForceReleaseOutcome, Lease, LockName, ReleaseEvents, ReleaseOutcome,
    ReleaseRequest,
};
use parking_lot::Mutex;
use rusqlite::Connection;

use crate::config::SqliteConfig;
use crate::error::{BACKEND, ConnectError, OpError};
use crate::ops::{CHUNK, Released};
use crate::time::HostClock;
use crate::{path, schema};

/// Locks in one SQLite database file, shared by the processes of a host: the embedded
/// cross-process backend, with no server to run.
///
/// Build it once per process and share it: cloning is cheap, and clones share one
/// connection, on which calls from all threads take turns (SQLite lets one writer in at a
/// time anyway). Processes coordinate through the file's locks. Each call waits at most
/// its busy timeout in all, for its turn on the connection and for another process's
/// write together, so a stalled writer fails every caller after about one timeout.
///
/// See the [crate docs](crate) for the guarantees, the clock and the tables.
///
/// # Examples
///
/// ```
/// use leader_core::LockBackend;
/// use leader_sqlite::SqliteBackend;
///
/// let dir = std::env::temp_dir().join(format!("leader-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let backend = SqliteBackend::open(dir.join("locks.db"))?;
/// let state = backend.state(&leader_core::LockName::new("nightly-report")?)?;
/// assert!(state.leader().is_none());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SqliteBackend {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
    clock: HostClock,
    busy_timeout: Duration,
    events: ReleaseEvents,
}

impl SqliteBackend {
    /// The database at `path`, created if missing, with the default [`SqliteConfig`].
    ///
    /// # Errors
    ///
    /// An [`ConnectError`] naming the problem: a path other processes cannot share, such as
    /// `:memory:` or a `file:` URI with `mode=memory` or `nolock=1`
    /// ([`ConnectError::NotShared`]), a missing directory or no permission
    /// ([`ConnectError::CannotOpen`]), a file that is not an SQLite database
    /// ([`ConnectError::NotADatabase`]), a read-only database ([`ConnectError::ReadOnly`]), a
    /// database another connection keeps locked ([`ConnectError::Locked`]), tables of the
    /// same names made by someone else ([`ConnectError::ForeignTable`]) or by a newer version
    /// of this crate ([`ConnectError::NewerSchema`]). The file is checked before anything is
    /// written to it, so on an error it is left byte for byte as it was.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ConnectError> {
        SqliteBackend::open_with(path, SqliteConfig::new())
    }

    /// The database at `path` with `config`. See [`open`](Self::open).
    ///
    /// # Errors
    ///
    /// As for [`open`](Self::open).
    pub fn open_with(path: impl AsRef<Path>, config: SqliteConfig) -> Result<Self, ConnectError> {
        let path = path.as_ref().to_owned();
        path::check(&path)?;
        let clock = HostClock::new().map_err(|source| ConnectError::HostClock {
            path: path.clone(),
            source,
        })?;
        let conn = schema::open(&path, &config, &clock)?;
        Ok(SqliteBackend {
            inner: Arc::new(Inner {
                path,
                conn: Mutex::new(conn),
                clock,
                busy_timeout: config.busy_timeout(),
                events: ReleaseEvents::new(),
            }),
        })
    }

    /// [`open_with`](Self::open_with) for async code: the file is opened and prepared on
    /// a thread of the `blocking` crate's pool, so no executor thread waits on the disk or
    /// on another process's lock. Works on every runtime.
    ///
    /// # Errors
    ///
    /// As for [`open`](Self::open).
    pub async fn open_async(
        path: impl Into<PathBuf>,
        config: SqliteConfig,
    ) -> Result<Self, ConnectError> {
        let path = path.into();
        ::blocking::unblock(move || SqliteBackend::open_with(path, config)).await
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `op` on the connection, on the calling thread, within the busy timeout.
    pub(crate) fn run<T>(
        &self,
        key: &str,
        op: impl FnOnce(&mut Connection, &HostClock) -> Result<T, OpError>,
    ) -> Result<T, Error> {
        self.inner
            .call(Instant::now(), op)
            .map_err(|failure| failed(key, failure))
    }

    /// Runs `op` on the connection, on a thread of the `blocking` crate's pool, so no
    /// executor thread waits for the file's locks; any async runtime can await it. The
    /// busy timeout counts from now, the wait for a pool thread included.
    pub(crate) async fn run_async<T, F>(&self, key: &str, op: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &HostClock) -> Result<T, OpError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let started = Instant::now();
        let result = ::blocking::unblock(move || inner.call(started, op)).await;
        result.map_err(|failure| failed(key, failure))
    }

    /// Runs a batch form over `items` on the calling thread: [`CHUNK`] items at a time,
    /// each chunk one `op` (one transaction) with the connection and a busy timeout of its
    /// own, so that this process's other calls get their turn between chunks. Each
    /// answer's error names its own item's lock; a chunk that failed as a whole (no turn
    /// on the connection, SQLite itself) is every one of its locks' failure.
    pub(crate) fn run_batch<I: Keyed, T>(
        &self,
        items: &[I],
        op: impl Fn(&mut Connection, &HostClock, &[I]) -> Result<Vec<Result<T, OpError>>, OpError>,
    ) -> Vec<Result<T, Error>> {
        let mut answers = Vec::with_capacity(items.len());
        for chunk in items.chunks(CHUNK) {
            let chunk_answers = self
                .inner
                .call(Instant::now(), |conn, clock| op(conn, clock, chunk));
            answers.extend(per_lock(chunk, chunk_answers));
        }
        answers
    }

    /// [`run_batch`](Self::run_batch) with each chunk on a thread of the `blocking`
    /// crate's pool, as [`run_async`](Self::run_async) runs a single call.
    pub(crate) async fn run_batch_async<I, T, F>(
        &self,
        items: Vec<I>,
        op: F,
    ) -> Vec<Result<T, Error>>
    where
        I: Keyed + Send + Sync + 'static,
        T: Send + 'static,
        F: Fn(&mut Connection, &HostClock, &[I]) -> Result<Vec<Result<T, OpError>>, OpError>
            + Send
            + Sync
            + 'static,
    {
        let (items, op) = (Arc::new(items), Arc::new(op));
        let mut answers = Vec::with_capacity(items.len());
        for first in (0..items.len()).step_by(CHUNK) {
            let range = first..(first + CHUNK).min(items.len());
            let (inner, chunk_items, op) =
                (Arc::clone(&self.inner), Arc::clone(&items), Arc::clone(&op));
            let started = Instant::now();
            let sent = range.clone();
            let chunk_answers = ::blocking::unblock(move || {
                let chunk = chunk_items.get(sent).unwrap_or_default();
                inner.call(started, |conn, clock| op(conn, clock, chunk))
            })
            .await;
            answers.extend(per_lock(
                items.get(range).unwrap_or_default(),
                chunk_answers,
            ));
        }
        answers
    }

    /// Runs `op` on the connection, for tests that look into the file.
    #[cfg(test)]
    pub(crate) fn with_connection<T>(&self, op: impl FnOnce(&Connection) -> T) -> T {
        op(&self.inner.conn.lock())
    }

    /// After a release: wakes this process's waiters when the lock became free.
    /// (Other processes cannot be told; their waiters find the lock free at their next
    /// poll.)
    pub(crate) fn released(&self, lease: &Lease, released: &Released) {
        if matches!(released, Released::Freed) {
            self.inner
                .events
                .notify_token(lease.key.as_str(), lease.fencing_token);
        }
    }

    /// After a batch of `releases` answered `answers` (in order): wakes this process's
    /// waiters of each lock that became free, and answers each release.
    pub(crate) fn released_all(
        &self,
        releases: &[ReleaseRequest<'_>],
        answers: Vec<Result<Released, Error>>,
    ) -> Vec<Result<ReleaseOutcome, Error>> {
        releases
            .iter()
            .zip(answers)
            .map(|(request, answer)| {
                let released = answer?;
                self.released(request.lease, &released);
                Ok(released.outcome())
            })
            .collect()
    }

    /// After a force release: wakes this process's waiters as a release does.
    pub(crate) fn force_released(&self, key: &LockName, outcome: &ForceReleaseOutcome) {
        if let ForceReleaseOutcome::Released(holder) = outcome {
            self.inner
                .events
                .notify_token(key.as_str(), holder.fencing_token);
        }
    }
}

impl Inner {
    /// Runs `op` with what is left of the busy timeout of a call that started at
    /// `started`: first waiting for the connection (this process's other calls), then, as
    /// SQLite's own busy timeout, for another connection's write lock.
    fn call<T>(
        &self,
        started: Instant,
        op: impl FnOnce(&mut Connection, &HostClock) -> Result<T, OpError>,
    ) -> Result<T, OpError> {
        let budget = self.busy_timeout;
        let mut conn = match started.checked_add(budget) {
            Some(deadline) => self
                .conn
                .try_lock_until(deadline)
                .ok_or(OpError::Queued(budget))?,
            None => self.conn.lock(),
        };
        conn.busy_timeout(budget.saturating_sub(started.elapsed()))?;
        op(&mut conn, &self.clock)
    }
}

/// What a batch's answers are about: the lock of each of its items.
pub(crate) trait Keyed {
    /// The item's lock.
    fn key(&self) -> &LockName;
}

/// The answers of a batch over `items`: each error names its item's lock; a failure of
/// the whole call (no turn on the connection, SQLite itself) is every lock's.
fn per_lock<I: Keyed, T>(
    items: &[I],
    answers: Result<Vec<Result<T, OpError>>, OpError>,
) -> Vec<Result<T, Error>> {
    match answers {
        Ok(answers) => items
            .iter()
            .zip(answers)
            .map(|(item, answer)| answer.map_err(|failure| failed(item.key().as_str(), failure)))
            .collect(),
        Err(failure) => {
            let (kind, message) = (failure.kind(), failure.to_string());
            items
                .iter()
                .map(|item| {
                    Err(failed(
                        item.key().as_str(),
                        OpError::Batch {
                            kind,
                            message: message.clone(),
                        },
                    ))
                })
                .collect()
        }
    }
}

/// `key` names the lock (or, for a listing, the prefix) in the error.
fn failed(key: &str, failure: OpError) -> Error {
    tracing::debug!(lock = %key, error = %failure, "sqlite lock call failed");
    failure.into_core(key)
}

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        BACKEND
    }

    /// Releases made through this backend value (and its clones), in this process.
    fn release_events(&self) -> Option<&ReleaseEvents> {
        Some(&self.inner.events)
    }
}

impl fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}
