//! [`PostgresBackend`]: construction, and how a call reaches a session (the runner of
//! `calls` sends it so).

use leader_core::{Backend, ReleaseEvents};
use leader_runtime::Background;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use crate::config::PostgresConfig;
use crate::connector::Connector;
use crate::error::{BACKEND, ConnectError, OpError};
use crate::listener::Listener;
use crate::ops::Op;
use crate::pool::Pool;
use crate::table::Table;

/// Locks in one PostgreSQL table, one row per lock; blocking and async.
///
/// Implements [`LockBackend`](leader_core::LockBackend) and
/// [`AsyncLockBackend`](leader_core::AsyncLockBackend). Build it once and share it:
/// cloning is cheap, and clones share the connection pool, the `LISTEN` session and the
/// background runtime. Connections open on first use, so the server may start later than
/// the application; until then every call is a transient
/// [`Error::Backend`](leader_core::Error::Backend).
///
/// See the [crate docs](crate) for the table, the clock and the runtimes.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken, ReleaseRequest};
/// use leader_postgres::PostgresBackend;
///
/// let backend = PostgresBackend::connect("postgres://app@127.0.0.1/app")?;
/// let key = LockName::new("nightly-report")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// if let AcquireOutcome::Acquired(lease) = backend.try_acquire(request)? {
///     // ... the work only one node may do, passing lease.fencing_token along ...
///     backend.release(ReleaseRequest::new(&lease, Duration::ZERO))?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PostgresBackend {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Arc<Pool>,
    connector: Arc<Connector>,
    table: Table,
    config: PostgresConfig,
    events: ReleaseEvents,
    listener: OnceLock<Listener>,
    // Declared last: shut down after the sessions above are dropped.
    background: Background,
}

impl PostgresBackend {
    /// A backend for the server at `url`, with the default [`PostgresConfig`].
    ///
    /// `url` is `postgres://[user[:password]@]host[:port][/database][?param=value...]`
    /// (or `postgresql://`, or libpq's `key=value` form). `sslmode=require` asks for TLS
    /// (feature `tls`); otherwise connections are plain. Several hosts
    /// (`postgres://h1:5432,h2:5432/db`: a primary and its standbys) are tried in order for
    /// each new session, and the first that takes writes is used: every session is
    /// `target_session_attrs=read-write`, whether the URL says so or not (see the crate's
    /// "Standby and failover"). Nothing is sent yet.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidUrl`] when the URL is not understood or asks for
    /// `target_session_attrs=read-only` (a standby cannot hold locks),
    /// [`ConnectError::TlsNotBuilt`] for `sslmode=require` without the `tls` feature, or
    /// [`ConnectError::Runtime`] when the background runtime cannot start.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_postgres::{ConnectError, PostgresBackend};
    ///
    /// let backend = PostgresBackend::connect("postgres://app@127.0.0.1:5432/app")?; // nothing sent yet
    /// assert_eq!(backend.table(), "leader_locks");
    /// assert!(matches!(
    ///     PostgresBackend::connect("postgres://h:port/db"),
    ///     Err(ConnectError::InvalidUrl(_))
    /// ));
    /// # Ok::<(), ConnectError>(())
    /// ```
    pub fn connect(url: &str) -> Result<Self, ConnectError> {
        PostgresBackend::connect_with(url, PostgresConfig::new())
    }

    /// A backend for the server at `url`, with `config`. See [`connect`](Self::connect).
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect), and [`ConnectError::InvalidTable`] or
    /// [`ConnectError::InvalidConfig`] for a setting that cannot work.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_postgres::{ConnectError, PostgresBackend, PostgresConfig};
    ///
    /// let config = PostgresConfig::new().with_table("ops.locks");
    /// let backend = PostgresBackend::connect_with("postgres://app@127.0.0.1/app", config)?;
    /// assert_eq!(backend.table(), "ops.locks");
    ///
    /// let bad = PostgresConfig::new().with_table("locks; DROP TABLE users");
    /// assert!(matches!(
    ///     PostgresBackend::connect_with("postgres://app@127.0.0.1/app", bad),
    ///     Err(ConnectError::InvalidTable { .. })
    /// ));
    /// # Ok::<(), ConnectError>(())
    /// ```
    pub fn connect_with(url: &str, config: PostgresConfig) -> Result<Self, ConnectError> {
        if let Some(problem) = config.problem() {
            return Err(ConnectError::InvalidConfig(problem));
        }
        let table = Table::parse(config.table()).map_err(|reason| ConnectError::InvalidTable {
            table: config.table().to_owned(),
            reason,
        })?;
        let connector = Arc::new(Connector::new(url, &config)?);
        // Every call on the background runtime (its sessions must outlive any caller's
        // runtime); a blocking one driven on the calling thread, which keeps its deadline
        // and drops it there (the call then closes its session).
        let background = Background::builder("leader-postgres")
            .drop_blocking_calls_at_deadline(true)
            .build()
            .map_err(ConnectError::Runtime)?;
        let pool = Arc::new(Pool::new(
            Arc::clone(&connector),
            table.clone(),
            config.pool_size(),
        ));
        Ok(PostgresBackend {
            inner: Arc::new(Inner {
                pool,
                connector,
                table,
                config,
                events: ReleaseEvents::new(),
                listener: OnceLock::new(),
                background,
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &PostgresConfig {
        &self.inner.config
    }

    /// The lock table, as configured (`table` or `schema.table`).
    pub fn table(&self) -> &str {
        self.inner.table.name()
    }

    /// The channel releases are notified on: `<table>_released`.
    pub fn channel(&self) -> String {
        self.inner.table.channel()
    }

    /// `true` while the `LISTEN` session for release notifications is up. It starts with
    /// the first call of [`Backend::release_events`] (waiting electors make it), and is
    /// never up when release notifications are off.
    pub fn is_listening(&self) -> bool {
        self.inner
            .listener
            .get()
            .is_some_and(Listener::is_listening)
    }

    /// Runs `op` on a pooled session within the operation timeout, driven on the calling
    /// thread, which keeps the deadline and drops the call at it.
    pub(crate) fn block_on<O: Op>(&self, op: O) -> Result<O::Output, OpError> {
        let deadline = self.inner.config.operation_timeout();
        self.inner
            .background
            .block_on(Some(deadline), self.call(op))
            .unwrap_or_else(|stopped| Err(OpError::from(stopped)))
    }

    /// Runs `op` on a pooled session within the operation timeout, as a task of the
    /// background runtime, awaited from any executor.
    pub(crate) async fn run<O: Op>(&self, op: O) -> Result<O::Output, OpError> {
        self.inner
            .background
            .run(None, self.timed_call(op))
            .await
            .unwrap_or_else(|stopped| Err(OpError::from(stopped)))
    }

    /// The call as a future owning what it needs, without a deadline. Dropped unfinished,
    /// it closes the session it holds (the server may be mid-statement on it).
    fn call<O: Op>(
        &self,
        op: O,
    ) -> impl Future<Output = Result<O::Output, OpError>> + Send + 'static {
        let pool = Arc::clone(&self.inner.pool);
        async move {
            let mut lent = pool.get().await?;
            let result = match lent.conn() {
                Some(conn) => op.run(conn).await,
                None => Err(OpError::ShutDown),
            };
            lent.finish(result.as_ref().err());
            result
        }
    }

    /// [`call`](Self::call) bounded by the operation timeout, on the background runtime's
    /// timer: dropped at the deadline, not left to finish.
    fn timed_call<O: Op>(
        &self,
        op: O,
    ) -> impl Future<Output = Result<O::Output, OpError>> + Send + 'static {
        let deadline = self.inner.config.operation_timeout();
        let call = self.call(op);
        async move {
            tokio::time::timeout(deadline, call)
                .await
                .unwrap_or(Err(OpError::TimedOut(deadline)))
        }
    }

    /// The release notifications of waiters in this process.
    pub(crate) fn events(&self) -> &ReleaseEvents {
        &self.inner.events
    }

    fn start_listener(&self) -> Listener {
        let inner = &self.inner;
        Listener::start(
            inner.background.handle(),
            Arc::clone(&inner.connector),
            inner.table.listen(),
            inner.events.clone(),
            inner.config.operation_timeout(),
        )
    }
}

impl Backend for PostgresBackend {
    fn name(&self) -> &'static str {
        BACKEND
    }

    /// The shared release notifications (`None` when turned off in [`PostgresConfig`]).
    /// The first call starts the `LISTEN` session on the background runtime; it connects
    /// (and reconnects) on its own, and waiters poll while it is down.
    fn release_events(&self) -> Option<&ReleaseEvents> {
        if !self.inner.config.release_notifications() {
            return None;
        }
        self.inner.listener.get_or_init(|| self.start_listener());
        Some(&self.inner.events)
    }
}

impl fmt::Debug for PostgresBackend {
    // The URL may hold a password: show only where the locks are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("table", &self.table())
            .field("listening", &self.is_listening())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leader_core::{AcquireRequest, LockName, OwnerToken};

    use super::PostgresBackend;
    use leader_core::kit::calls;

    /// A call's future is moved whole on its way to and through its task, so its size is
    /// paid in copies on every call: it once carried the opening of a session inline
    /// (10,032 bytes), which made the async `run_if_leader` 7.6x the instructions of its
    /// raw statements. Opening a session is boxed now.
    #[test]
    fn a_calls_future_does_not_carry_the_opening_of_a_session() {
        let backend = PostgresBackend::connect("postgres://127.0.0.1:1/locks").unwrap();
        let name = LockName::new("size").unwrap();
        let request =
            AcquireRequest::new(&name, OwnerToken::random(), "node", Duration::from_secs(1));
        let call = backend.timed_call(calls::Acquire::from(request));
        let size = std::mem::size_of_val(&call);
        assert!(size <= 4096, "a call's future is {size} bytes");
    }
}
