//! The blocking side: a small pool of connections with socket timeouts, shared by threads.
//!
//! A call takes an idle connection (or opens one), runs one script, and gives the
//! connection back unless the call failed in a way that may have left it in an unknown
//! state (I/O error, timeout): such a connection is dropped and the next call opens a
//! fresh one, which is how the backend recovers after a server restart.

use std::time::Duration;

use parking_lot::Mutex;
use redis::cluster::{ClusterConfig, ClusterPipeline};
use redis::{Connection, ConnectionLike, ErrorKind, RedisResult, ScriptInvocation, Value};

use crate::clients::Target;
use crate::config::RedisConfig;
use crate::error::is_dead_connection;
use crate::operator::listing::{self, Io};

/// A pooled blocking connection.
enum SyncConn {
    Single(Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl SyncConn {
    fn as_dyn(&mut self) -> &mut dyn ConnectionLike {
        match self {
            SyncConn::Single(conn) => conn,
            SyncConn::Cluster(conn) => conn.as_mut(),
        }
    }

    /// One round trip of a listing. A cluster routes a command to the master of its slot;
    /// its pipeline sends each command to the node of its key (the scanned master).
    fn send(&mut self, io: &Io) -> RedisResult<Value> {
        match (self, io) {
            (SyncConn::Single(conn), Io::Command { cmd, .. }) => cmd.query(conn),
            (SyncConn::Single(conn), Io::Pipeline { cmds, .. }) => listing::pipeline(cmds)
                .query::<Vec<Value>>(conn)
                .map(Value::Array),
            (SyncConn::Cluster(conn), Io::Command { cmd, slot }) => {
                conn.route_command(cmd, listing::routing(*slot))
            }
            (SyncConn::Cluster(conn), Io::Pipeline { cmds, .. }) => {
                let mut pipe = ClusterPipeline::with_capacity(cmds.len());
                for cmd in cmds {
                    pipe.add_command(cmd.clone());
                }
                pipe.query::<Vec<Value>>(conn).map(Value::Array)
            }
        }
    }
}

/// Blocking connections to the target, safe to share among threads.
pub(crate) struct SyncPool {
    target: Target,
    idle: Mutex<Vec<SyncConn>>,
    max_idle: usize,
    connect_timeout: Duration,
    response_timeout: Duration,
}

impl std::fmt::Debug for SyncPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncPool")
            .field("idle", &self.idle.lock().len())
            .field("max_idle", &self.max_idle)
            .finish_non_exhaustive()
    }
}

impl SyncPool {
    pub(crate) fn new(target: Target, config: &RedisConfig) -> Self {
        SyncPool {
            target,
            idle: Mutex::new(Vec::new()),
            max_idle: config.max_idle_connections(),
            connect_timeout: config.connect_timeout(),
            response_timeout: config.response_timeout(),
        }
    }

    /// Runs `invocation` on a pooled connection; once more on a new connection when the
    /// pooled one turned out dead (the server restarted since it was last used).
    pub(crate) fn run(&self, invocation: &ScriptInvocation<'_>) -> RedisResult<Value> {
        self.call(|conn| invocation.invoke::<Value>(conn.as_dyn()))
    }

    /// Runs `invocation` and then `wait` (replica acknowledgement) in one round trip on
    /// one connection: a cluster sends the pair to the node of the script's first key.
    /// Answers the script's reply and `wait`'s. A script the server does not know is
    /// loaded and the pair sent once more (as [`run`](Self::run) does).
    pub(crate) fn run_acked(
        &self,
        invocation: &ScriptInvocation<'_>,
        wait: &redis::Cmd,
    ) -> RedisResult<(RedisResult<Value>, RedisResult<Value>)> {
        let mut pipe = redis::pipe();
        pipe.invoke_script(invocation).add_command(wait.clone());
        let packed = pipe.get_packed_pipeline();
        self.call(|conn| {
            // Not `Pipeline::query`: the sync cluster connection refuses pipelines, but
            // routes a packed one by its first command, which is what is wanted here.
            // The cluster connection answers an error reply in a pipeline as the error
            // of the whole call; a single connection answers each reply on its own.
            let conn = conn.as_dyn();
            let first = conn.req_packed_commands(&packed, 0, 2).and_then(pair);
            let unknown = match &first {
                Ok((Err(err), _)) | Err(err) => is_no_script(err),
                Ok(_) => false,
            };
            if unknown {
                invocation.load(conn)?;
                return pair(conn.req_packed_commands(&packed, 0, 2)?);
            }
            first
        })
    }

    /// Sends one round trip of a listing, as [`run`](Self::run) sends a script (every
    /// round trip of a listing reads, so sending it twice is harmless).
    pub(crate) fn send(&self, io: &Io) -> RedisResult<Value> {
        self.call(|conn| conn.send(io))
    }

    /// Runs `invocations` in one round trip (a pipeline; standalone servers only), each
    /// answered on its own. Scripts the server does not know (a restart emptied its cache)
    /// are loaded and the pipeline sent once more: the scripts sent this way may run twice
    /// without harm, as `run`'s may.
    pub(crate) fn run_pipeline(
        &self,
        invocations: &[ScriptInvocation<'_>],
    ) -> RedisResult<Vec<RedisResult<Value>>> {
        self.call(|conn| {
            let SyncConn::Single(conn) = conn else {
                return Err(redis::RedisError::from((
                    ErrorKind::Client,
                    "scripts are pipelined on a standalone server only",
                )));
            };
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for invocation in invocations {
                pipe.invoke_script(invocation);
            }
            let answers: Vec<RedisResult<Value>> = pipe.query(conn)?;
            let unknown = |answer: &RedisResult<Value>| {
                matches!(answer, Err(err) if err.kind() == ErrorKind::Server(redis::ServerErrorKind::NoScript))
            };
            if !answers.iter().any(unknown) {
                return Ok(answers);
            }
            for invocation in invocations {
                invocation.load(conn)?;
            }
            pipe.query(conn)
        })
    }

    fn call<T>(&self, mut f: impl FnMut(&mut SyncConn) -> RedisResult<T>) -> RedisResult<T> {
        let pooled = self.idle.lock().pop();
        match pooled {
            Some(conn) => match self.call_on(conn, &mut f) {
                Err(err) if is_dead_connection(&err) => self.call_on(self.open()?, &mut f),
                result => result,
            },
            None => self.call_on(self.open()?, &mut f),
        }
    }

    /// Runs `f` on `conn`, and pools `conn` again unless it may be broken.
    fn call_on<T>(
        &self,
        mut conn: SyncConn,
        f: &mut impl FnMut(&mut SyncConn) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let result = f(&mut conn);
        let reusable = match &result {
            Ok(_) => true,
            Err(err) => is_server_reply(err),
        };
        if reusable {
            let mut idle = self.idle.lock();
            if idle.len() < self.max_idle {
                idle.push(conn);
            }
        }
        result
    }

    fn open(&self) -> RedisResult<SyncConn> {
        match &self.target {
            Target::Single(client) => {
                let conn = client.get_connection_with_timeout(self.connect_timeout)?;
                conn.set_read_timeout(Some(self.response_timeout))?;
                conn.set_write_timeout(Some(self.response_timeout))?;
                Ok(SyncConn::Single(conn))
            }
            // Set here too, not only on the builder: a caller's cluster client
            // (`from_cluster_client`) gets the config's timeouts as well.
            Target::Cluster { client, .. } => {
                let config = ClusterConfig::new()
                    .set_connection_timeout(self.connect_timeout)
                    .set_response_timeout(self.response_timeout);
                let conn = client.get_connection_with_config(config)?;
                Ok(SyncConn::Cluster(Box::new(conn)))
            }
        }
    }
}

/// `NOSCRIPT`: the server does not know the script (a restart or a new master emptied its
/// cache).
pub(crate) fn is_no_script(err: &redis::RedisError) -> bool {
    err.kind() == ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// The two answers of a script and its `WAIT`, each its own result.
pub(crate) fn pair(values: Vec<Value>) -> RedisResult<(RedisResult<Value>, RedisResult<Value>)> {
    let mut values = values.into_iter().map(Value::extract_error);
    match (values.next(), values.next(), values.next()) {
        (Some(script), Some(wait), None) => Ok((script, wait)),
        _ => Err(redis::RedisError::from((
            ErrorKind::Parse,
            "expected two answers, to a script and its WAIT",
        ))),
    }
}

/// An error reply from the server: the connection itself is fine.
fn is_server_reply(err: &redis::RedisError) -> bool {
    matches!(err.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
        && !err.is_unrecoverable_error()
}
