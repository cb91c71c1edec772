//! [`MongoBackend`]: construction, and how a call reaches the driver (the runner of
//! `calls` sends it so).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use leader_core::kit::Failure;
use leader_core::{Backend, RedactedError, ReleaseEvents, UrlSecrets};
use leader_runtime::{Background, Stopped};
use mongodb::Client;
use mongodb::error::ErrorKind;
use mongodb::options::ClientOptions;

use crate::clients::Clients;
use crate::config::MongoConfig;
use crate::error::{ConnectError, OpError};
use crate::listener::Listener;
use crate::ops::Store;

/// Locks in a MongoDB collection, one document per lock; blocking and async.
///
/// Implements [`LockBackend`](leader_core::LockBackend) and
/// [`AsyncLockBackend`](leader_core::AsyncLockBackend). Cloning is cheap and shares the
/// client, the collection and the background runtime.
///
/// See the [crate docs](crate) for the document layout, the clocks and the runtimes.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken, ReleaseRequest};
/// use leader_mongodb::{MongoBackend, MongoConfig};
///
/// let config = MongoConfig::new().with_database("ops");
/// let backend = MongoBackend::connect_with("mongodb://127.0.0.1:27017/", config)?;
/// let key = LockName::new("nightly-report")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30))
///     .with_db_time(true);
/// if let AcquireOutcome::Acquired(lease) = backend.try_acquire(request)? {
///     // ... the work only one node may do ...
///     backend.release(ReleaseRequest::new(&lease, Duration::ZERO))?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MongoBackend {
    inner: Arc<Inner>,
}

struct Inner {
    clients: Arc<Clients>,
    database: String,
    config: MongoConfig,
    events: ReleaseEvents,
    listener: OnceLock<Listener>,
    // Declared last: dropped after the client handles above.
    background: Background,
}

impl MongoBackend {
    /// A backend on the server(s) of `uri`, with the default [`MongoConfig`].
    ///
    /// TLS, credentials and every other driver option go in the connection string. The
    /// client is built on the backend's background runtime and connects lazily, so this
    /// returns at once; it may be called from any thread, inside an async runtime or not.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidUri`] when the connection string is rejected;
    /// [`ConnectError::Resolve`] when a `mongodb+srv://` name does not resolve.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_mongodb::{ConnectError, MongoBackend};
    ///
    /// let err = MongoBackend::connect("postgres://nope").unwrap_err();
    /// assert!(matches!(err, ConnectError::InvalidUri(_)));
    /// ```
    pub fn connect(uri: &str) -> Result<Self, ConnectError> {
        MongoBackend::connect_with(uri, MongoConfig::new())
    }

    /// A backend on the server(s) of `uri`, with `config`. See [`connect`](Self::connect).
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect).
    pub fn connect_with(uri: &str, config: MongoConfig) -> Result<Self, ConnectError> {
        let background = background()?;
        let parse = parse_options(uri.to_owned(), config.clone());
        let parsed = background.block_on(Some(config.operation_timeout()), parse)??;
        Ok(MongoBackend::from_parsed(parsed, config, background))
    }

    /// [`connect_with`](Self::connect_with) for async callers: the connection string is
    /// parsed (a `mongodb+srv://` name resolved) without blocking the caller's thread.
    /// Works on any async runtime.
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect).
    pub async fn connect_async(uri: &str, config: MongoConfig) -> Result<Self, ConnectError> {
        let background = background()?;
        let parse = parse_options(uri.to_owned(), config.clone());
        // On the background runtime: the client's monitor tasks must not live on the caller's.
        let parsed = background
            .run_here(Some(config.operation_timeout()), parse)
            .await??;
        Ok(MongoBackend::from_parsed(parsed, config, background))
    }

    fn from_parsed(
        (client, options): (Client, ClientOptions),
        config: MongoConfig,
        background: Background,
    ) -> Self {
        let database = config.database_or(options.default_database.as_deref());
        let store = Store::on(&client, &database, &config);
        let clients = Clients::owned(store, options, background.handle().clone());
        MongoBackend::assemble(clients, database, config, background)
    }

    /// A backend on an existing client (its timeouts and pool are kept).
    ///
    /// Unlike a backend built by [`connect`](Self::connect), it never replaces the client
    /// when operations stop getting answers (after a partition that lost bytes): recovery
    /// is then up to the driver's own monitoring.
    ///
    /// Under tokio the operations run on the caller's runtime; elsewhere, and for the
    /// blocking API, on the backend's background runtime. Either way the client's own tasks
    /// stay on the runtime it was built on, which must keep running. Avoid calling the
    /// blocking API from the thread of a current-thread runtime that drives this client.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Runtime`] when the background runtime cannot start.
    pub fn from_client(client: Client, config: MongoConfig) -> Result<Self, ConnectError> {
        let background = background()?;
        let uri_database = client.default_database().map(|db| db.name().to_owned());
        let database = config.database_or(uri_database.as_deref());
        let clients = Clients::borrowed(Store::on(&client, &database, &config));
        Ok(MongoBackend::assemble(
            clients, database, config, background,
        ))
    }

    fn assemble(
        clients: Clients,
        database: String,
        config: MongoConfig,
        background: Background,
    ) -> Self {
        MongoBackend {
            inner: Arc::new(Inner {
                clients: Arc::new(clients),
                database,
                config,
                events: ReleaseEvents::new(),
                listener: OnceLock::new(),
                background,
            }),
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &MongoConfig {
        &self.inner.config
    }

    /// The name of the database holding the lock collection.
    pub fn database_name(&self) -> &str {
        &self.inner.database
    }

    /// `true` while the change streams for release notifications (the lock collection's
    /// and the read/write locks' collection's) are both up. They start with the
    /// first call of [`Backend::release_events`] (waiting electors make it), and are never
    /// up when release notifications are off or the server offers no change streams.
    pub fn is_listening(&self) -> bool {
        self.inner
            .listener
            .get()
            .is_some_and(Listener::is_listening)
    }

    /// A handle on the store for one operation (cheap: the collection is reference-counted),
    /// on a fresh client when the last one stopped answering (see [`Clients`]).
    pub(crate) fn store(&self) -> Store {
        self.inner.clients.store()
    }

    /// The failure of a call the runtime gave no answer for; a call left unanswered at
    /// the operation timeout makes the next call build a fresh client (see [`Clients`]).
    fn failed(&self, stopped: Stopped) -> Failure {
        if matches!(stopped, Stopped::TimedOut(_)) {
            self.inner.clients.no_answer();
        }
        OpError::from(stopped).into_failure()
    }

    /// Runs `op` on the calling thread (within the background runtime's context), blocking
    /// it; unfinished at the operation timeout, `op` goes on on the background runtime.
    pub(crate) fn block_on<T, F>(&self, op: F) -> Result<T, Failure>
    where
        F: Future<Output = Result<T, OpError>> + Send + 'static,
        T: Send + 'static,
    {
        let deadline = self.inner.config.operation_timeout();
        match self.inner.background.block_on(Some(deadline), op) {
            Ok(result) => result.map_err(OpError::into_failure),
            Err(stopped) => Err(self.failed(stopped)),
        }
    }

    /// Runs `op` as a task (on the caller's tokio runtime, else the background one) and
    /// awaits it.
    pub(crate) async fn run<T, F>(&self, op: F) -> Result<T, Failure>
    where
        F: Future<Output = Result<T, OpError>> + Send + 'static,
        T: Send + 'static,
    {
        let deadline = self.inner.config.operation_timeout();
        match self.inner.background.run(Some(deadline), op).await {
            Ok(result) => result.map_err(OpError::into_failure),
            Err(stopped) => Err(self.failed(stopped)),
        }
    }
}

/// The backend's background runtime. Async calls from a tokio runtime run on the caller's
/// runtime (the driver's tasks and timer work on any), blocking calls on the calling
/// thread, each within the operation timeout, after which it goes on in the background: a
/// driver future is never dropped mid-flight.
fn background() -> Result<Background, ConnectError> {
    Background::builder("leader-mongodb")
        .on_caller_runtime(true)
        .build()
        .map_err(ConnectError::Runtime)
}

/// Parses `uri` (resolving a `mongodb+srv://` name) and builds the driver's client; runs
/// on the background runtime.
async fn parse_options(
    uri: String,
    config: MongoConfig,
) -> Result<(Client, ClientOptions), ConnectError> {
    let secrets = UrlSecrets::from_url(&uri);
    let mut options = ClientOptions::parse(&uri)
        .await
        .map_err(|err| connect_error(&err, &secrets))?;
    config.apply_to(&mut options);
    let client =
        Client::with_options(options.clone()).map_err(|err| connect_error(&err, &secrets))?;
    Ok((client, options))
}

/// The driver's refusal of the connection string, its message masked with the string's
/// `secrets` (it may quote a host or an option, where a password written without encoding
/// can end up).
fn connect_error(err: &mongodb::error::Error, secrets: &UrlSecrets) -> ConnectError {
    let redacted = Box::new(RedactedError::new(err, secrets));
    match err.kind.as_ref() {
        ErrorKind::DnsResolve { .. } => ConnectError::Resolve(redacted),
        _ => ConnectError::InvalidUri(redacted),
    }
}

impl Backend for MongoBackend {
    fn name(&self) -> &'static str {
        crate::error::BACKEND
    }

    /// The shared release notifications (`None` when turned off in [`MongoConfig`]). The
    /// first call opens the change stream on the background runtime; it reopens on its
    /// own, and waiters poll while it is down.
    fn release_events(&self) -> Option<&ReleaseEvents> {
        if !self.inner.config.release_notifications() {
            return None;
        }
        self.inner.listener.get_or_init(|| {
            Listener::start(
                self.inner.background.handle(),
                Arc::clone(&self.inner.clients),
                self.inner.events.clone(),
                self.inner.config.operation_timeout(),
            )
        });
        Some(&self.inner.events)
    }
}

impl fmt::Debug for MongoBackend {
    // The client's options may hold credentials: show only where the locks are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MongoBackend")
            .field("database", &self.database_name())
            .field("collection", &self.inner.config.collection())
            .finish_non_exhaustive()
    }
}
