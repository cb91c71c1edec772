//! [`EtcdBackend`]: construction, and how a call reaches the cluster (the runner of
//! `calls` sends it so).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use leader_core::kit::Failure;
use leader_core::{Backend, LockName, ReleaseEvents};
use leader_runtime::Background;

use crate::config::EtcdConfig;
use crate::conn::Connection;
use crate::error::{BACKEND, ConnectError, OpError};
use crate::keys::Keys;
use crate::listener::Listener;
use crate::ops::{BatchOp, Op};
use crate::url::Target;

/// How long a call is tried again after a member refused its connection (nothing was
/// sent). The client's balancer keeps a member that is down among its choices and, as a
/// refusal comes back at once, that member looks idle and is picked for about two calls
/// in three (of the two members its power-of-two choice draws, it wins whenever drawn);
/// the next try may go to another member. A fixed eight retries still failed about a call
/// in forty with one member of three down; some forty tries (a quarter of a second, at
/// the pause below) fail one in ten million. Every request of a call may be sent again
/// (each is guarded by the owner token or revokes what it granted). A cluster with no
/// member up fails after this long with the refusal, not a timeout.
const REFUSED_BUDGET: std::time::Duration = std::time::Duration::from_millis(250);
/// The pause before such a retry, so that a cluster with no member up is not spun on.
const REFUSED_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// Locks in an etcd cluster, three keys per lock on an etcd lease; blocking and async.
///
/// Implements [`LockBackend`](leader_core::LockBackend) and
/// [`AsyncLockBackend`](leader_core::AsyncLockBackend). Build it once and share it:
/// cloning is cheap, and clones share the client (its connections to the members), the
/// release watch and the background runtime. The client connects on first use, so the
/// cluster may start later than the application; until then every call is a transient
/// [`Error::Backend`](leader_core::Error::Backend).
///
/// See the [crate docs](crate) for the keys, the leases, the fencing tokens and the
/// runtimes.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken, ReleaseRequest};
/// use leader_etcd::EtcdBackend;
///
/// let backend = EtcdBackend::connect("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379")?;
/// let key = LockName::new("nightly-report")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// if let AcquireOutcome::Acquired(lease) = backend.try_acquire(request)? {
///     // ... the work only one node may do, passing lease.fencing_token along ...
///     backend.release(ReleaseRequest::new(&lease, Duration::ZERO))?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct EtcdBackend {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Arc<Connection>,
    config: EtcdConfig,
    shown_url: String,
    events: ReleaseEvents,
    listener: OnceLock<Listener>,
    // Declared last: shut down after the client and the watch above are dropped.
    background: Background,
}

impl EtcdBackend {
    /// A backend for the cluster at `url`, with the default [`EtcdConfig`].
    ///
    /// `url` is `etcd://[user[:password]@]host[:port][,host[:port]...][/prefix]`, or
    /// `etcds://...` for TLS (feature `tls`): every member the client may talk to (port
    /// 2379 when left out), the user and password of etcd's authentication, and the key
    /// prefix (`leader` when left out). Nothing is sent yet.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidUrl`] when the URL is not understood,
    /// [`ConnectError::TlsNotBuilt`] for `etcds://` without the `tls` feature, or
    /// [`ConnectError::Runtime`] when the background runtime cannot start.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_etcd::{ConnectError, EtcdBackend};
    ///
    /// let backend = EtcdBackend::connect("etcd://127.0.0.1:2379/billing")?; // nothing sent yet
    /// assert_eq!(backend.prefix(), "billing");
    /// assert!(matches!(
    ///     EtcdBackend::connect("etcd://h:port"),
    ///     Err(ConnectError::InvalidUrl(_))
    /// ));
    /// # Ok::<(), ConnectError>(())
    /// ```
    pub fn connect(url: &str) -> Result<Self, ConnectError> {
        EtcdBackend::connect_with(url, EtcdConfig::new())
    }

    /// A backend for the cluster at `url`, with `config`. A prefix in the URL replaces the
    /// config's. See [`connect`](Self::connect).
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect), and [`ConnectError::InvalidConfig`] for a
    /// setting that cannot work.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_etcd::{ConnectError, EtcdBackend, EtcdConfig};
    ///
    /// let config = EtcdConfig::new().with_prefix("ops").with_operation_timeout(Duration::from_secs(2));
    /// let backend = EtcdBackend::connect_with("etcd://127.0.0.1:2379", config)?;
    /// assert_eq!(backend.prefix(), "ops");
    ///
    /// let bad = EtcdConfig::new().with_operation_timeout(Duration::ZERO);
    /// assert!(matches!(
    ///     EtcdBackend::connect_with("etcd://127.0.0.1:2379", bad),
    ///     Err(ConnectError::InvalidConfig(_))
    /// ));
    /// # Ok::<(), ConnectError>(())
    /// ```
    pub fn connect_with(url: &str, config: EtcdConfig) -> Result<Self, ConnectError> {
        let target = Target::parse(url)?;
        let config = match &target.prefix {
            Some(prefix) => config.with_prefix(prefix.clone()),
            None => config,
        };
        if let Some(problem) = config.problem() {
            return Err(ConnectError::InvalidConfig(problem));
        }
        let keys = Keys::new(config.prefix());
        // Every call on the background runtime (the client's connections must outlive any
        // caller's runtime); a blocking one driven on the calling thread.
        let background = Background::builder("leader-etcd")
            .drop_blocking_calls_at_deadline(true)
            .build()
            .map_err(ConnectError::Runtime)?;
        let connection = Arc::new(Connection::new(
            &target,
            &config,
            keys,
            background.handle().clone(),
        )?);
        Ok(EtcdBackend {
            inner: Arc::new(Inner {
                connection,
                shown_url: crate::url::redacted_url(url),
                config,
                events: ReleaseEvents::new(),
                listener: OnceLock::new(),
                background,
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &EtcdConfig {
        &self.inner.config
    }

    /// The key prefix: lock `name` lives at `{prefix}/lock/{name}`,
    /// `{prefix}/holder/{name}` and `{prefix}/fence/{name}`.
    pub fn prefix(&self) -> &str {
        self.inner.config.prefix()
    }

    /// `true` while the watch for release notifications is up. It starts with the first
    /// call of [`Backend::release_events`] (waiting electors make it), and is never up
    /// when release notifications are off.
    pub fn is_listening(&self) -> bool {
        self.inner
            .listener
            .get()
            .is_some_and(Listener::is_listening)
    }

    /// Runs `op` within the operation timeout, on the calling thread.
    pub(crate) fn block_on<O: Op>(&self, op: O) -> Result<O::Output, Failure> {
        match self.inner.background.block_on(None, self.call(op)) {
            Ok(result) => result.map_err(OpError::into_failure),
            Err(stopped) => Err(OpError::from(stopped).into_failure()),
        }
    }

    /// Runs `op` within the operation timeout, on the background runtime, awaited from
    /// any executor.
    pub(crate) async fn run<O: Op>(&self, op: O) -> Result<O::Output, Failure> {
        match self.inner.background.run(None, self.call(op)).await {
            Ok(result) => result.map_err(OpError::into_failure),
            Err(stopped) => Err(OpError::from(stopped).into_failure()),
        }
    }

    /// Runs `ops` at once (at most [`IN_FLIGHT`] in flight), each within the operation
    /// timeout, on the calling thread: one answer per op, in their order.
    pub(crate) fn block_on_each<O: BatchOp>(&self, ops: Vec<O>) -> Answers<O::Output> {
        match self.inner.background.block_on(None, self.call_each(ops)) {
            Ok(answers) => Ok(answers),
            Err(stopped) => Err(OpError::from(stopped).into_failure()),
        }
    }

    /// [`block_on_each`](Self::block_on_each), awaited from any executor.
    pub(crate) async fn run_each<O: BatchOp>(&self, ops: Vec<O>) -> Answers<O::Output> {
        match self.inner.background.run(None, self.call_each(ops)).await {
            Ok(answers) => Ok(answers),
            Err(stopped) => Err(OpError::from(stopped).into_failure()),
        }
    }

    /// The ops as one future: the ops of different keys at once, so that one slow or
    /// failing key holds up no other (etcd multiplexes the calls over the client's
    /// connections); those of one key one after the other, in their order, so a batch
    /// that names a key twice answers as the same calls made in turn would.
    fn call_each<O: BatchOp>(
        &self,
        ops: Vec<O>,
    ) -> impl Future<Output = Vec<Result<O::Output, Failure>>> + Send + 'static {
        use futures_util::StreamExt;
        let count = ops.len();
        let mut chains: Vec<Vec<(usize, O)>> = Vec::new();
        let mut chain_of: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        for (index, op) in ops.into_iter().enumerate() {
            let chain = *chain_of.entry(op.lock().to_owned()).or_insert_with(|| {
                chains.push(Vec::new());
                chains.len() - 1
            });
            chains[chain].push((index, op));
        }
        let calls: Vec<_> = chains
            .into_iter()
            .map(|chain| {
                let chain: Vec<_> = chain
                    .into_iter()
                    .map(|(index, op)| (index, self.call(op)))
                    .collect();
                async move {
                    let mut answered = Vec::with_capacity(chain.len());
                    for (index, call) in chain {
                        answered.push((index, call.await.map_err(OpError::into_failure)));
                    }
                    answered
                }
            })
            .collect();
        async move {
            let mut slots: Vec<Option<Result<O::Output, Failure>>> =
                (0..count).map(|_| None).collect();
            let mut chains = futures_util::stream::iter(calls).buffer_unordered(IN_FLIGHT);
            while let Some(answered) = chains.next().await {
                for (index, answer) in answered {
                    if let Some(slot) = slots.get_mut(index) {
                        *slot = Some(answer);
                    }
                }
            }
            slots.into_iter().flatten().collect()
        }
    }

    /// The call as a future owning what it needs, bounded by the operation timeout.
    fn call<O: Op>(
        &self,
        op: O,
    ) -> impl Future<Output = Result<O::Output, OpError>> + Send + 'static {
        let connection = Arc::clone(&self.inner.connection);
        let deadline = self.inner.config.operation_timeout();
        async move {
            let call = async move {
                let started = Instant::now();
                let budget = REFUSED_BUDGET.min(deadline);
                loop {
                    let conn = connection.get().await?;
                    // Boxed: an op's future holds the client's gRPC call, some 5 KB, and
                    // the call's future is moved whole on its way through a task or a
                    // `block_on`; boxed, it is written once.
                    match Box::pin(op.clone().run(conn)).await {
                        Err(err)
                            if err.never_sent() && started.elapsed() + REFUSED_PAUSE < budget =>
                        {
                            tokio::time::sleep(REFUSED_PAUSE).await;
                        }
                        result => return result,
                    }
                }
            };
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
            Arc::clone(&inner.connection),
            inner.events.clone(),
            inner.config.operation_timeout(),
        )
    }
}

/// How many calls of one batch are in flight at once.
const IN_FLIGHT: usize = 64;

/// A batch's answers, one per call in order, or the failure of the whole batch (it did
/// not run).
pub(crate) type Answers<T> = Result<Vec<Result<T, Failure>>, Failure>;

impl Backend for EtcdBackend {
    fn name(&self) -> &'static str {
        BACKEND
    }

    /// The shared release notifications (`None` when turned off in [`EtcdConfig`]). The
    /// first call starts the watch on the background runtime; it restarts on its own, and
    /// waiters poll while it is down.
    fn release_events(&self) -> Option<&ReleaseEvents> {
        if !self.inner.config.release_notifications() {
            return None;
        }
        self.inner.listener.get_or_init(|| self.start_listener());
        Some(&self.inner.events)
    }

    /// The lock key: `{prefix}/lock/{name}`.
    fn storage_key(&self, name: &LockName) -> String {
        format!(
            "{}{}",
            self.inner.connection.keys().lock_prefix(),
            name.as_str()
        )
    }
}

impl fmt::Debug for EtcdBackend {
    // The URL may hold a password: show it masked.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdBackend")
            .field("url", &self.inner.shown_url)
            .field("prefix", &self.prefix())
            .field("listening", &self.is_listening())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leader_core::{AcquireRequest, LockName, OwnerToken};

    use super::EtcdBackend;
    use leader_core::kit::calls;

    /// A call's future is moved whole on its way through a task or a `block_on`, so its
    /// size is paid in copies on every call: it once carried the client's connect and its
    /// gRPC call inline (11,648 bytes for an acquire). Both are boxed now.
    #[test]
    fn a_calls_future_carries_neither_the_connect_nor_the_grpc_call() {
        let backend = EtcdBackend::connect("etcd://127.0.0.1:1").unwrap();
        let name = LockName::new("size").unwrap();
        let request =
            AcquireRequest::new(&name, OwnerToken::random(), "node", Duration::from_secs(1));
        let call = backend.call(calls::Acquire::from(request));
        let size = std::mem::size_of_val(&call);
        assert!(size <= 2048, "a call's future is {size} bytes");
    }
}
