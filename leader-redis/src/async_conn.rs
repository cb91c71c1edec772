//! The async side: redis' `ConnectionManager` (one multiplexed connection that reconnects
//! by itself) or its async cluster connection.
//!
//! Connections are created on the first async call, not at construction, so a backend can
//! be built outside any runtime. The driver spawns a connection's I/O task on the runtime
//! it finds then (tokio when called inside a tokio runtime, otherwise smol's executor,
//! which async-std shares), and a connection only makes progress while that runtime runs.
//! So the pool keeps one connection per runtime that uses it: a backend shared by two
//! runtimes (a current-thread runtime per test, a service and its admin runtime) never
//! waits on a runtime that is not running.
//! Reconnection makes a single attempt per call (bounded by the connect timeout), so a
//! dead server gives an error within the configured timeouts instead of a long retry loop.
//!
//! Behind sentinels, each runtime's connection is a multiplexed connection to the master
//! the sentinels named, opened once `ROLE` confirmed it is a master (it does not reconnect
//! by itself, so it can never silently land on a replica). A failure that may mean a
//! failover forgets that master; the next call asks the sentinels again and opens a new
//! connection. A `READONLY` answer (nothing was written) is sent once more, at once.

use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::cluster::ClusterConfig;
use redis::cluster_async::ClusterConnection;
use redis::{RedisResult, Value};

use crate::clients::Target;
use crate::config::RedisConfig;
use crate::error::is_dead_connection;
use crate::operator::listing::{self, Io};
use crate::ops::{AckedReply, ScriptCall, acked_pipeline, pair, script_unknown};
use crate::sentinel::{self, SentinelTarget};

#[derive(Clone)]
enum AsyncConn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// A connection to the master of `generation` behind sentinels.
    Master {
        conn: MultiplexedConnection,
        generation: u64,
    },
}

/// At most this many runtimes keep a connection; a further runtime replaces the oldest
/// (a runtime that has shut down cannot be detected, so the list is bounded instead).
const MAX_RUNTIMES: usize = 8;

/// The runtime an async call runs on, as the driver chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RuntimeKey {
    #[cfg(feature = "tokio")]
    Tokio(tokio::runtime::Id),
    /// smol's global executor (async-std shares it).
    Smol,
}

impl RuntimeKey {
    fn current() -> Self {
        #[cfg(feature = "tokio")]
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            return RuntimeKey::Tokio(handle.id());
        }
        RuntimeKey::Smol
    }
}

/// The lazily created async connections, one per runtime.
pub(crate) struct AsyncPool {
    target: Target,
    config: RedisConfig,
    conns: Mutex<Vec<(RuntimeKey, AsyncConn)>>,
}

impl std::fmt::Debug for AsyncPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncPool")
            .field("runtimes", &self.conns.lock().len())
            .finish_non_exhaustive()
    }
}

impl AsyncPool {
    pub(crate) fn new(target: Target, config: &RedisConfig) -> Self {
        AsyncPool {
            target,
            config: config.clone(),
            conns: Mutex::new(Vec::new()),
        }
    }

    /// Runs `invocation` on the shared async connection; once more when the connection
    /// turned out dead (the server restarted, or the runtime its I/O task ran on shut
    /// down): the driver reconnects on the failed call, so the second one finds it up.
    pub(crate) async fn run(&self, invocation: &ScriptCall) -> RedisResult<Value> {
        match self.run_once(invocation).await {
            Err(err) if is_dead_connection(&err) || self.is_demoted(&err) => {
                self.run_once(invocation).await
            }
            result => result,
        }
    }

    async fn run_once(&self, invocation: &ScriptCall) -> RedisResult<Value> {
        match self.connection().await? {
            AsyncConn::Single(mut conn) => invocation.invoke_async(&mut conn).await,
            AsyncConn::Cluster(mut conn) => invocation.invoke_async(&mut conn).await,
            AsyncConn::Master {
                mut conn,
                generation,
            } => {
                let result = invocation.invoke_async(&mut conn).await;
                self.after(generation, &result);
                result
            }
        }
    }

    /// `READONLY` behind sentinels: the connection went to a replica.
    fn is_demoted(&self, err: &redis::RedisError) -> bool {
        matches!(self.target, Target::Sentinel(_)) && sentinel::is_readonly(err)
    }

    /// Forgets the master of `generation` after a failure that may mean a failover.
    fn after<T>(&self, generation: u64, result: &RedisResult<T>) {
        if let (Err(err), Target::Sentinel(target)) = (result, &self.target)
            && sentinel::may_have_failed_over(err)
        {
            target.forget(generation);
        }
    }

    /// Runs `invocation` and then `wait` (replica acknowledgement) in one round trip on
    /// the shared connection (a cluster sends the pair to the node of the script's first
    /// key); once more on a dead connection, as [`run`](Self::run) does, and once more
    /// after loading a script the server does not know.
    pub(crate) async fn run_acked(&self, invocation: &ScriptCall, wait: &redis::Cmd) -> AckedReply {
        let pipe = acked_pipeline(invocation, wait);
        let answer = match self.run_pair(&pipe).await {
            Err(err) if is_dead_connection(&err) || self.is_demoted(&err) => {
                self.run_pair(&pipe).await
            }
            result => result,
        };
        if script_unknown(&answer) {
            match self.connection().await? {
                AsyncConn::Single(mut conn) => invocation.load_async(&mut conn).await?,
                AsyncConn::Cluster(mut conn) => invocation.load_async(&mut conn).await?,
                AsyncConn::Master {
                    mut conn,
                    generation,
                } => {
                    let loaded = invocation.load_async(&mut conn).await;
                    self.after(generation, &loaded);
                    loaded?
                }
            };
            return self.run_pair(&pipe).await;
        }
        answer
    }

    async fn run_pair(&self, pipe: &redis::Pipeline) -> AckedReply {
        use redis::aio::ConnectionLike;
        match self.connection().await? {
            AsyncConn::Single(mut conn) => pair(conn.req_packed_commands(pipe, 0, 2).await?),
            AsyncConn::Cluster(mut conn) => pair(conn.req_packed_commands(pipe, 0, 2).await?),
            AsyncConn::Master {
                mut conn,
                generation,
            } => {
                let answer = conn.req_packed_commands(pipe, 0, 2).await.and_then(pair);
                self.after(generation, &answer);
                answer
            }
        }
    }

    /// Sends one round trip of a listing, as [`run`](Self::run) sends a script (every
    /// round trip of a listing reads, so sending it twice is harmless).
    pub(crate) async fn send(&self, io: &Io) -> RedisResult<Value> {
        match self.send_once(io).await {
            Err(err) if is_dead_connection(&err) || self.is_demoted(&err) => {
                self.send_once(io).await
            }
            result => result,
        }
    }

    /// A cluster routes a command, and a pipeline, to the master of its slot.
    async fn send_once(&self, io: &Io) -> RedisResult<Value> {
        match (self.connection().await?, io) {
            (
                AsyncConn::Master {
                    mut conn,
                    generation,
                },
                io,
            ) => {
                let result = match io {
                    Io::Command { cmd, .. } => cmd.query_async(&mut conn).await,
                    Io::Pipeline { cmds, .. } => listing::pipeline(cmds)
                        .query_async::<Vec<Value>>(&mut conn)
                        .await
                        .map(Value::Array),
                };
                self.after(generation, &result);
                result
            }
            (AsyncConn::Single(mut conn), Io::Command { cmd, .. }) => {
                cmd.query_async(&mut conn).await
            }
            (AsyncConn::Single(mut conn), Io::Pipeline { cmds, .. }) => listing::pipeline(cmds)
                .query_async::<Vec<Value>>(&mut conn)
                .await
                .map(Value::Array),
            (AsyncConn::Cluster(mut conn), Io::Command { cmd, slot }) => {
                conn.route_command(cmd.clone(), listing::routing(*slot))
                    .await
            }
            (AsyncConn::Cluster(mut conn), Io::Pipeline { cmds, slot }) => {
                let pipe = listing::pipeline(cmds);
                let values = conn
                    .route_pipeline(pipe, 0, cmds.len(), listing::node(*slot))
                    .await?;
                Value::Array(values).extract_error()
            }
        }
    }

    /// The connection of the calling runtime, created on its first call (behind
    /// sentinels: again after its master was forgotten).
    async fn connection(&self) -> RedisResult<AsyncConn> {
        let Target::Sentinel(target) = &self.target else {
            return self.lazy_connection();
        };
        let runtime = RuntimeKey::current();
        let cached = self.conns.lock().iter().find_map(|(key, conn)| match conn {
            AsyncConn::Master { generation, .. }
                if *key == runtime && target.is_current(*generation) =>
            {
                Some(conn.clone())
            }
            _ => None,
        });
        if let Some(conn) = cached {
            return Ok(conn);
        }
        // Boxed: finding the master (sentinels in turn, then `ROLE`) is a deep future, and
        // every call's future would otherwise carry its layout, deep enough to overflow the
        // compiler's query depth in a caller's nested async blocks.
        let conn = Box::pin(self.open_master(target)).await?;
        let mut conns = self.conns.lock();
        conns.retain(|(key, _)| *key != runtime);
        if conns.len() == MAX_RUNTIMES {
            conns.remove(0);
        }
        conns.push((runtime, conn.clone()));
        Ok(conn)
    }

    /// A connection to the master the sentinels name, once `ROLE` confirms it is one.
    async fn open_master(&self, target: &SentinelTarget) -> RedisResult<AsyncConn> {
        let master = target.master_async().await?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.config.connect_timeout()))
            .set_response_timeout(Some(self.config.response_timeout()));
        let checked = async {
            let mut conn = master
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            let role: Value = redis::cmd("ROLE").query_async(&mut conn).await?;
            sentinel::check_master(&role)?;
            Ok(conn)
        }
        .await;
        self.after(master.generation, &checked);
        checked.map(|conn| AsyncConn::Master {
            conn,
            generation: master.generation,
        })
    }

    /// The lazily connecting connection of the calling runtime (one server, a cluster).
    fn lazy_connection(&self) -> RedisResult<AsyncConn> {
        let runtime = RuntimeKey::current();
        let mut conns = self.conns.lock();
        if let Some((_, conn)) = conns.iter().find(|(key, _)| *key == runtime) {
            return Ok(conn.clone());
        }
        let connect_timeout = self.config.connect_timeout();
        let response_timeout = self.config.response_timeout();
        let conn = match &self.target {
            Target::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(response_timeout))
                    .set_number_of_retries(0);
                AsyncConn::Single(ConnectionManager::new_lazy_with_config(
                    redis::Client::clone(client),
                    config,
                )?)
            }
            Target::Cluster { client, .. } => {
                let config = ClusterConfig::new()
                    .set_connection_timeout(connect_timeout)
                    .set_response_timeout(response_timeout);
                AsyncConn::Cluster(client.get_pending_async_connection_with_config(config))
            }
            Target::Sentinel(_) => {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "a Sentinel target has no lazily connecting connection",
                )));
            }
        };
        if conns.len() == MAX_RUNTIMES {
            conns.remove(0);
        }
        conns.push((runtime, conn.clone()));
        Ok(conn)
    }
}
