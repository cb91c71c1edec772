//! [`SqliteBackend`]: one database file, and how every call reaches it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_core::{Backend, ReleaseEvents};
use parking_lot::Mutex;
use rusqlite::Connection;

use crate::config::SqliteConfig;
use crate::error::{BACKEND, ConnectError, OpError};

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

    /// Runs `op` in a transaction of its own on the connection, with what is left of the
    /// busy timeout of a call made at `started` (see `Inner::call`).
    pub(crate) fn transaction<T>(
        &self,
        started: Instant,
        op: impl FnOnce(&mut Connection, &HostClock) -> Result<T, OpError>,
    ) -> Result<T, OpError> {
        self.inner.call(started, op)
    }

    /// This process's waiters, which a call that freed a lock wakes at once (other
    /// processes' find the lock free at their next poll).
    pub(crate) fn events(&self) -> &ReleaseEvents {
        &self.inner.events
    }

    /// Runs `op` on the connection, for tests that look into the file.
    #[cfg(test)]
    pub(crate) fn with_connection<T>(&self, op: impl FnOnce(&Connection) -> T) -> T {
        op(&self.inner.conn.lock())
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
