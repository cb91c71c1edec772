//! [`RedisBackend`]: construction, the shared plumbing of every call (run by the kit's
//! runner, `calls.rs`), and `impl Backend`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use leader_core::__private::unanswered;
use leader_core::kit::Failure;
use leader_core::{Backend, BackendError, LockName, ReleaseEvents};
use redis::{RedisResult, Value};

use crate::acks::{ReplicaAcks, UrlAcks, split_url};
#[cfg(any(feature = "tokio", feature = "smol"))]
use crate::async_conn::AsyncPool;
use crate::clients::Target;
use crate::config::RedisConfig;
use crate::error::{BACKEND, ConnectError, OpError};
use crate::keys::{LockKeys, release_channel};
use crate::listener::Listener;
use crate::ops::{Op, ScriptCall, Unacknowledged, Undo, acknowledged, split};
use crate::started::Started;
use crate::sync_conn::SyncPool;
use crate::url::SentinelUrl;

/// How long after a failed start of the release subscription the next use tries again.
const SUBSCRIPTION_RETRY: Duration = Duration::from_secs(1);

/// Locks in Redis (a single server, a Redis Cluster, or the master of a set managed by
/// Redis Sentinel), for the blocking and the async electors alike.
///
/// Build it once and share it: cloning is cheap and clones share the connections and the
/// release subscription. Connections open on first use, so the server may start later
/// than the application; until then every call is a transient
/// [`Error::Backend`](leader_core::Error::Backend).
///
/// See the [crate docs](crate) for the data layout, the clocks and the runtimes.
///
/// # Listing
///
/// A prefix inside one name's derived names (`orders#`, `scheduler#rank:`: a leader
/// group's slots, a ranked campaign's candidates) is read from that name's index,
/// `{prefix}:{<name>}:derived`, in one script call a page: its cost is the page's members,
/// whatever else the server holds (see the crate docs' data layout), and its cursor is the
/// full name of the last member it looked at.
///
/// Any other prefix pages with `SCAN <cursor> MATCH {prefix}:{<name prefix>*} COUNT
/// <limit>` (never `KEYS`, and `COUNT` at most 1000), glob characters of both prefixes
/// escaped so they match literally. A page keeps scanning until it holds at least `limit` held locks or
/// the scan is complete, so it may hold up to one `SCAN` batch more than `limit`; the
/// records of each batch are read in one pipelined round trip. On a cluster it scans
/// every master in turn (ordered by address, from `CLUSTER SLOTS`), and its cursor is
/// `"<master index>:<scan cursor>"`; on one server it is the `SCAN` cursor. A cursor of
/// another shape is a permanent [`Error::Backend`](leader_core::Error::Backend). As with
/// any `SCAN`, a lock may be listed on two pages, and one taken or freed meanwhile may or
/// may not be.
///
/// # Force release
///
/// `force_release` is one script: it deletes the lock hash (a lock kept for its minimum
/// lease included) and publishes the release, so waiters wake, and reports the holder. The
/// fencing counter stays. A corrupted record is reported and left in place.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken, ReleaseRequest};
/// use leader_redis::RedisBackend;
///
/// let backend = RedisBackend::connect("redis://127.0.0.1/")?;
/// let key = LockName::new("nightly-report")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// if let AcquireOutcome::Acquired(lease) = backend.try_acquire(request)? {
///     // ... the critical section, passing lease.fencing_token along with every write ...
///     backend.release(ReleaseRequest::new(&lease, Duration::ZERO))?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct RedisBackend {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: RedisConfig,
    channel: String,
    target: Target,
    sync: SyncPool,
    #[cfg(any(feature = "tokio", feature = "smol"))]
    async_pool: AsyncPool,
    events: ReleaseEvents,
    listener: Started<Listener>,
}

impl RedisBackend {
    /// A backend for the server at `url`, with the default [`RedisConfig`].
    ///
    /// `url` is `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS
    /// (feature `tls`), or a Sentinel URL (`redis+sentinel://`, see
    /// [`connect_sentinel`](Self::connect_sentinel)). No connection is opened yet. The query
    /// parameters `replica_acks` and `replica_ack_timeout` set
    /// [`RedisConfig::with_replica_acks`] (they override the config's); the others go to
    /// the driver.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidUrl`] when the URL is not understood,
    /// [`ConnectError::InvalidUrlParameter`] for a bad `replica_acks` or
    /// `replica_ack_timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_redis::{ConnectError, RedisBackend};
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1:6379/")?; // nothing is sent yet
    /// assert_eq!(backend.key_prefix(), "leader");
    /// assert!(matches!(
    ///     RedisBackend::connect("http://127.0.0.1/"),
    ///     Err(ConnectError::InvalidUrl { .. })
    /// ));
    /// # Ok::<(), ConnectError>(())
    /// ```
    pub fn connect(url: &str) -> Result<Self, ConnectError> {
        RedisBackend::connect_with(url, RedisConfig::default())
    }

    /// A backend for the server at `url`, with `config`.
    ///
    /// # Errors
    ///
    /// [`ConnectError`] when the URL or a setting is rejected.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_redis::{RedisBackend, RedisConfig};
    ///
    /// let config = RedisConfig::default()
    ///     .with_key_prefix("billing")
    ///     .with_response_timeout(Duration::from_millis(500));
    /// let backend = RedisBackend::connect_with("redis://:secret@127.0.0.1/", config)?;
    /// assert_eq!(backend.key_prefix(), "billing");
    /// # Ok::<(), leader_redis::ConnectError>(())
    /// ```
    ///
    /// A `redis+sentinel://` or `rediss+sentinel://` URL is handed to
    /// [`connect_sentinel`](Self::connect_sentinel).
    pub fn connect_with(url: &str, config: RedisConfig) -> Result<Self, ConnectError> {
        if SentinelUrl::is_sentinel(url) {
            return RedisBackend::connect_sentinel(url, config);
        }
        let (url, config) = with_url_acks(&[url], config)?;
        config.validate()?;
        let target = Target::single(&url[0], &config)?;
        Ok(RedisBackend::build(target, config))
    }

    /// A backend for the master of a set managed by Redis Sentinel, found through the
    /// sentinels of `url`:
    /// `redis+sentinel://[user:password@]host[:port][,host[:port]...]/<master-name>[/db]`
    /// (port 26379 when left out), or `rediss+sentinel://...` for TLS to the sentinels
    /// and the servers alike (feature `tls`; [`RedisConfig::with_tls_root_certificate`]
    /// applies to both). The user and password are the servers' (`AUTH` on the master);
    /// the sentinels are asked without credentials. `%`-escapes in the master's name are
    /// decoded.
    ///
    /// The sentinels are asked for the master's address on the first call, in turn, and
    /// again whenever a call fails in a way that may mean a failover (a dropped, refused or
    /// timed-out connection, a `READONLY` or `MASTERDOWN` answer). A new connection is
    /// used only once `ROLE` confirms the server is a master, so nothing is ever written to
    /// a replica: during a failover each call is a transient
    /// [`Error::Backend`](leader_core::Error::Backend) or a correct answer, and calls, the
    /// release subscription and renewals move to the new master by themselves. See the
    /// crate docs' section on Sentinel for what a failover can lose (replication is
    /// asynchronous) and what fencing tokens still guarantee.
    ///
    /// No connection is opened here.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidUrl`] when the URL is not a Sentinel URL or a part of it is
    /// wrong (the error shows it with its password masked); a rejected setting of
    /// `config`.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_redis::{ConnectError, RedisBackend, RedisConfig};
    ///
    /// let url = "redis+sentinel://:s3cret@10.0.0.1,10.0.0.2,10.0.0.3/orders";
    /// let backend = RedisBackend::connect_sentinel(url, RedisConfig::default())?; // nothing sent yet
    /// # let _ = backend;
    /// let err = RedisBackend::connect_sentinel("redis+sentinel://:s3cret@10.0.0.1/", RedisConfig::default())
    ///     .unwrap_err();
    /// assert!(matches!(err, ConnectError::InvalidUrl { .. }));
    /// assert!(!err.to_string().contains("s3cret"));
    /// # Ok::<(), ConnectError>(())
    /// ```
    pub fn connect_sentinel(url: &str, config: RedisConfig) -> Result<Self, ConnectError> {
        let (url, config) = with_url_acks(&[url], config)?;
        config.validate()?;
        let target = Target::sentinel(&url[0], &config)?;
        Ok(RedisBackend::build(target, config))
    }

    /// A backend for the Redis Cluster reachable through any of `urls`.
    ///
    /// Both keys of a lock share one hash slot, so the same scripts run on the cluster.
    ///
    /// # Errors
    ///
    /// [`ConnectError::NoClusterNodes`] for an empty list, [`ConnectError::InvalidUrl`] for a
    /// bad URL, or a rejected setting.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_redis::{RedisBackend, RedisConfig};
    ///
    /// let urls = ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"];
    /// let backend = RedisBackend::connect_cluster(urls, RedisConfig::default())?;
    /// # let _ = backend;
    /// # Ok::<(), leader_redis::ConnectError>(())
    /// ```
    pub fn connect_cluster<I, S>(urls: I, config: RedisConfig) -> Result<Self, ConnectError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = urls.into_iter().map(|u| u.as_ref().to_owned()).collect();
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        let (urls, config) = with_url_acks(&urls, config)?;
        config.validate()?;
        let target = Target::cluster(&urls, &config)?;
        Ok(RedisBackend::build(target, config))
    }

    pub(crate) fn build(target: Target, config: RedisConfig) -> Self {
        RedisBackend {
            inner: Arc::new(Inner {
                channel: release_channel(config.key_prefix()),
                sync: SyncPool::new(target.clone(), &config),
                #[cfg(any(feature = "tokio", feature = "smol"))]
                async_pool: AsyncPool::new(target.clone(), &config),
                target,
                config,
                events: ReleaseEvents::new(),
                listener: Started::new(SUBSCRIPTION_RETRY),
            }),
        }
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        self.inner.config.key_prefix()
    }

    /// The Redis key of the lock `name`: `{prefix}:{<name>}` (its fencing counter is the
    /// same with `:fence` appended). A derived name keeps its group's hash tag: slot 2 of
    /// the group `orders` is `{prefix}:{orders}#2`, so one script can try every slot of a
    /// group on a cluster too. Errors name this key.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::LockName;
    /// use leader_redis::RedisBackend;
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1/")?;
    /// let name = LockName::new("nightly")?;
    /// assert_eq!(backend.lock_key(&name), "leader:{nightly}");
    /// assert_eq!(backend.lock_key(&LockName::new("nightly#2")?), "leader:{nightly}#2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lock_key(&self, name: &LockName) -> String {
        LockKeys::new(self.key_prefix(), name).lock().into()
    }

    /// The Redis key of the record `name` (see [`LockBackend::read_record`](leader_core::LockBackend::read_record)):
    /// the lock's key with `:record` appended, `{prefix}:{<name>}:record`, in the lock's
    /// cluster slot. Errors other than a corrupted record name this key.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::LockName;
    /// use leader_redis::RedisBackend;
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1/")?;
    /// let name = LockName::new("nightly")?;
    /// assert_eq!(backend.record_key(&name), "leader:{nightly}:record");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_key(&self, name: &LockName) -> String {
        LockKeys::new(self.key_prefix(), name).record().into()
    }

    /// The Redis key of the read/write lock `name` (see
    /// [`SharedLockBackend`](leader_core::SharedLockBackend)), apart from its exclusive
    /// lock and its record: `{prefix}:rw{<name>}`, a string holding the lock's holders as
    /// JSON, in the lock's cluster slot (its fencing counter is the same with `:fence`
    /// appended). Errors of the read/write lock's calls name this key.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::LockName;
    /// use leader_redis::RedisBackend;
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1/")?;
    /// let name = LockName::new("nightly")?;
    /// assert_eq!(backend.shared_key(&name), "leader:rw{nightly}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared_key(&self, name: &LockName) -> String {
        LockKeys::new(self.key_prefix(), name).shared().into()
    }

    /// `true` while the shared release subscription is connected. It starts with the first
    /// call of [`Backend::release_events`] (waiting electors make it), and is never up when
    /// release notifications are off.
    pub fn is_subscribed(&self) -> bool {
        self.inner
            .listener
            .get()
            .is_some_and(Listener::is_subscribed)
    }

    /// This node's waiters for releases (whether notifications are on or not: nobody
    /// listens when they are off).
    pub(crate) fn events(&self) -> &ReleaseEvents {
        &self.inner.events
    }

    /// The blocking connections.
    pub(crate) fn sync_pool(&self) -> &SyncPool {
        &self.inner.sync
    }

    /// The async connections.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) fn async_pool(&self) -> &AsyncPool {
        &self.inner.async_pool
    }

    /// `true` on a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.inner.target, Target::Cluster { .. })
    }

    /// The failure of a call about the lock `key`: the error names the lock's Redis key
    /// (see [`lock_key`](Self::lock_key)), and the kit hands it on as it is.
    pub(crate) fn failure(&self, key: &LockName, failure: OpError) -> Failure {
        failure.into_failure(&self.lock_key(key))
    }

    /// Runs `op` on the blocking connections: its answer, the failure not yet named by a
    /// key. With replica acknowledgement on, an op that writes a grant waits for the
    /// replicas (`WAIT`), and the grants they did not acknowledge are released.
    pub(crate) fn run_op<O: Op>(&self, op: O) -> Result<O::Output, OpError> {
        let invocation = self.invocation(&op);
        let Some(acks) = self.acks::<O>() else {
            let reply = self.inner.sync.run(&invocation);
            return decoded(&op, reply);
        };
        let (reply, ack) = split(self.inner.sync.run_acked(&invocation, &acks.command()));
        let output = decoded(&op, reply)?;
        let (output, unacked) = acknowledged::<O>(output, ack, acks);
        let requests = unacked.requests();
        if let Some(release) = op.undo(&requests, self.key_prefix()) {
            let reply = self.inner.sync.run(&self.invocation(&release));
            self.unacknowledged_released(&unacked, &release, reply);
        }
        Ok(output)
    }

    /// The replica acknowledgement `O` waits for, if it is on and `O` writes a grant.
    fn acks<O: Op>(&self) -> Option<ReplicaAcks> {
        self.inner.config.acks().filter(|_| O::ACKED)
    }

    /// The script invocation of `op` on this backend's keys and release channel.
    fn invocation<O: Op>(&self, op: &O) -> ScriptCall {
        op.invocation(
            LockKeys::new(self.key_prefix(), op.name()),
            &self.inner.channel,
        )
    }

    /// Reads the answer to the release of grants the replicas did not acknowledge, and
    /// warns about each one it did not free.
    fn unacknowledged_released(
        &self,
        unacked: &Unacknowledged,
        release: &Undo<'_>,
        reply: RedisResult<Value>,
    ) {
        let answer = decoded(release, reply);
        unacked.report(self.per_lock(unacked.keys(), answer));
    }

    /// Runs `ops` in one round trip on a standalone server (see
    /// [`SyncPool::run_pipeline`]), each answered on its own.
    pub(crate) fn run_pipelined<O: Op>(&self, ops: Vec<O>) -> Vec<Result<O::Output, OpError>> {
        let invocations: Vec<_> = ops.iter().map(|op| self.invocation(op)).collect();
        match self.inner.sync.run_pipeline(&invocations) {
            Ok(replies) => ops
                .iter()
                .zip(replies)
                .map(|(op, reply)| decoded(op, reply))
                .collect(),
            Err(err) => {
                let failure = OpError::from_redis(O::NAME, err);
                let (kind, message) = (failure.kind(), failure.to_string());
                ops.iter()
                    .map(|_| {
                        Err(OpError::Pipeline {
                            kind,
                            message: message.clone(),
                        })
                    })
                    .collect()
            }
        }
    }

    /// [`run_op`](Self::run_op) on the async connection.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn run_op_async<O: Op>(&self, op: O) -> Result<O::Output, OpError> {
        let invocation = self.invocation(&op);
        let Some(acks) = self.acks::<O>() else {
            let reply = self.inner.async_pool.run(&invocation).await;
            return decoded(&op, reply);
        };
        let pair = self
            .inner
            .async_pool
            .run_acked(&invocation, &acks.command())
            .await;
        let (reply, ack) = split(pair);
        let output = decoded(&op, reply)?;
        let (output, unacked) = acknowledged::<O>(output, ack, acks);
        let requests = unacked.requests();
        if let Some(release) = op.undo(&requests, self.key_prefix()) {
            let reply = self.inner.async_pool.run(&self.invocation(&release)).await;
            self.unacknowledged_released(&unacked, &release, reply);
        }
        Ok(output)
    }

    /// The answers of one call over many locks (`keys`, in order): each lock's own
    /// failure names its key; a failure of the whole call is every lock's.
    pub(crate) fn per_lock<'k, T>(
        &self,
        keys: impl Iterator<Item = &'k LockName>,
        answer: Result<Vec<Result<T, OpError>>, OpError>,
    ) -> Vec<Result<T, Failure>> {
        match answer {
            Ok(items) => keys
                .zip(items)
                .map(|(key, item)| item.map_err(|failure| self.failure(key, failure)))
                .collect(),
            Err(failure) => {
                let (kind, message) = (failure.kind(), failure.to_string());
                keys.map(|key| Err(self.whole_call_failure(key, kind, message.clone())))
                    .collect()
            }
        }
    }

    /// What a failure of a whole call (`kind`, `message`) is for the lock `key` in it.
    fn whole_call_failure(
        &self,
        key: &LockName,
        kind: leader_core::BackendErrorKind,
        message: String,
    ) -> Failure {
        let failure = OpError::Pipeline { kind, message };
        let error = BackendError::new(BACKEND, self.lock_key(key), kind, failure);
        Failure::from_error(error.into())
    }

    /// The answer to a single lock's call: `op` over one item, the lock `key`. One script,
    /// without a batch's chunks and round trips: a batch of one costs a handful of
    /// allocations more on every call.
    pub(crate) fn run_one<T, O>(&self, key: &LockName, op: O) -> Result<T, Failure>
    where
        O: Op<Output = Vec<Result<T, OpError>>>,
    {
        self.only_answer(key, self.run_op(op))
    }

    /// [`run_one`](Self::run_one) on the async connection.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn run_one_async<T, O>(&self, key: &LockName, op: O) -> Result<T, Failure>
    where
        O: Op<Output = Vec<Result<T, OpError>>>,
    {
        self.only_answer(key, self.run_op_async(op).await)
    }

    /// The one answer of a call about the lock `key`.
    fn only_answer<T>(
        &self,
        key: &LockName,
        answer: Result<Vec<Result<T, OpError>>, OpError>,
    ) -> Result<T, Failure> {
        // As `per_lock` over the one key, without collecting its one answer.
        match answer {
            Ok(items) => match items.into_iter().next() {
                Some(item) => item.map_err(|failure| self.failure(key, failure)),
                None => Err(Failure::from_error(unanswered(BACKEND, key))),
            },
            Err(failure) => Err(self.whole_call_failure(key, failure.kind(), failure.to_string())),
        }
    }

    /// A batch of `items` cut into round trips: for each, its chunks of up to `chunk`
    /// items (one on a cluster, whose keys of different hash tags cannot meet in one
    /// script) and each chunk's op, made by `op` when the round trip is about to go.
    fn round_trips<'i, 'f, I, O>(
        &self,
        items: &'i [I],
        (chunk, pipelined): (usize, usize),
        op: &'f impl Fn(&'i [I], SystemTime) -> Option<O>,
    ) -> impl Iterator<Item = (Vec<&'i [I]>, Vec<O>)> {
        let chunk = if self.is_cluster() { 1 } else { chunk.max(1) };
        items
            .chunks(chunk * pipelined.max(1))
            .map(move |round_trip| {
                let now = SystemTime::now();
                let chunks: Vec<_> = round_trip.chunks(chunk).collect();
                let ops = chunks.iter().filter_map(|chunk| op(chunk, now)).collect();
                (chunks, ops)
            })
    }

    /// Runs a batch of `items` (renewals, acquire requests, releases) as ops of up to
    /// `chunk` items each, `pipelined` ops per round trip on a standalone server, one op
    /// per item on a cluster (see [`round_trips`](Self::round_trips)). `op` builds a
    /// chunk's op, `key` names an item's lock: one answer per item, in order.
    pub(crate) fn run_batch<'i, I, T, O>(
        &self,
        items: &'i [I],
        sizes: (usize, usize),
        op: impl Fn(&'i [I], SystemTime) -> Option<O>,
        key: impl Fn(&I) -> &LockName,
    ) -> Vec<Result<T, Failure>>
    where
        O: Op<Output = Vec<Result<T, OpError>>>,
    {
        let mut answers = Vec::with_capacity(items.len());
        for (chunks, ops) in self.round_trips(items, sizes, &op) {
            // A pipeline only pays for more than one script (and a cluster has none); with
            // replica acknowledgement each script has its own WAIT, in its round trip.
            let replies = if self.is_cluster() || ops.len() == 1 || self.acks::<O>().is_some() {
                ops.into_iter().map(|op| self.run_op(op)).collect()
            } else {
                self.run_pipelined(ops)
            };
            for (chunk, answer) in chunks.iter().zip(replies) {
                answers.extend(self.per_lock(chunk.iter().map(&key), answer));
            }
        }
        answers
    }

    /// [`run_batch`](Self::run_batch) on the async connections: the ops of a round trip
    /// go out at once on the multiplexed connection, which writes them together.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn run_batch_async<'i, I: Sync, T, O>(
        &self,
        items: &'i [I],
        sizes: (usize, usize),
        op: impl Fn(&'i [I], SystemTime) -> Option<O>,
        key: impl Fn(&I) -> &LockName,
    ) -> Vec<Result<T, Failure>>
    where
        O: Op<Output = Vec<Result<T, OpError>>> + Send,
    {
        let mut answers = Vec::with_capacity(items.len());
        for (chunks, mut ops) in self.round_trips(items, sizes, &op) {
            let replies = match (ops.pop(), ops.is_empty()) {
                // One script needs no joining.
                (Some(only), true) => vec![self.run_op_async(only).await],
                (last, _) => {
                    ops.extend(last);
                    let calls = ops.into_iter().map(|op| self.run_op_async(op));
                    futures_util::future::join_all(calls).await
                }
            };
            for (chunk, answer) in chunks.iter().zip(replies) {
                answers.extend(self.per_lock(chunk.iter().map(&key), answer));
            }
        }
        answers
    }

    fn start_listener(&self) -> std::io::Result<Listener> {
        let inner = &self.inner;
        Listener::spawn(
            inner.target.subscription(),
            inner.channel.clone(),
            inner.events.clone(),
            inner.config.connect_timeout(),
            inner.config.response_timeout(),
        )
    }
}

/// Builds the config a URL's query asks for (`replica_acks`, `replica_ack_timeout`: they
/// replace the config's setting), and the URLs without those parameters. Every URL of a
/// cluster that names them must name the same.
fn with_url_acks(
    urls: &[&str],
    config: RedisConfig,
) -> Result<(Vec<String>, RedisConfig), ConnectError> {
    let mut stripped = Vec::with_capacity(urls.len());
    let mut asked: Option<UrlAcks> = None;
    for url in urls {
        let (url, acks) = split_url(url)?;
        stripped.push(url);
        if acks == UrlAcks::default() {
            continue;
        }
        if asked.is_some_and(|first| first != acks) {
            return Err(ConnectError::InvalidUrlParameter {
                name: "replica_acks",
                value: String::new(),
                reason: "the cluster's URLs ask for different replica acknowledgements",
            });
        }
        asked = Some(acks);
    }
    let config = match asked {
        None => config,
        Some(acks) => match acks.acks() {
            Some(acks) => config.with_replica_acks(acks.replicas, acks.timeout),
            None => config.with_replica_acks(0, Duration::ZERO),
        },
    };
    Ok((stripped, config))
}

/// Decodes `op`'s reply (the kit traces the call).
fn decoded<O: Op>(op: &O, reply: RedisResult<Value>) -> Result<O::Output, OpError> {
    reply
        .map_err(|err| OpError::from_redis(O::NAME, err))
        .and_then(|value| op.decode(value))
}

impl Backend for RedisBackend {
    fn name(&self) -> &'static str {
        BACKEND
    }

    /// The hash's key, `{prefix}:{<name>}`: see [`RedisBackend::lock_key`].
    fn storage_key(&self, name: &LockName) -> String {
        self.lock_key(name)
    }

    /// The shared release notifications (`None` when turned off in [`RedisConfig`]).
    /// The first call starts the subscription thread; if it cannot start, a later call
    /// tries again (at most once a second), and waiters poll meanwhile.
    fn release_events(&self) -> Option<&ReleaseEvents> {
        if !self.inner.config.release_notifications() {
            return None;
        }
        self.inner.listener.get_or_start(|| self.start_listener());
        Some(&self.inner.events)
    }
}
