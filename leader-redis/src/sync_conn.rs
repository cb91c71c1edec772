//! The blocking side: a small pool of connections with socket timeouts, shared by threads.
//!
//! A call takes an idle connection (or opens one), runs one script, and gives the
//! connection back unless the call failed in a way that may have left it in an unknown
//! state (I/O error, timeout): such a connection is dropped and the next call opens a
//! fresh one, which is how the backend recovers after a server restart.
//!
//! Behind sentinels, a connection belongs to the master the sentinels named when it was
//! opened (after `ROLE` confirmed it is a master); once a failure forgets that master,
//! its idle connections are dropped instead of used. A call the server refused with
//! `READONLY` (it is a replica now: nothing was written) is sent once more, to the master
//! found again.

use std::time::Duration;

use parking_lot::Mutex;
use redis::cluster::{ClusterConfig, ClusterPipeline};
use redis::{Connection, ConnectionLike, ErrorKind, RedisResult, Value};

use crate::clients::Target;
use crate::config::RedisConfig;
use crate::error::is_dead_connection;
use crate::operator::listing::{self, Io};
use crate::ops::{AckedReply, ScriptCall, acked_pipeline, pair, script_unknown};
use crate::sentinel::{self, SentinelTarget};

/// A pooled blocking connection.
enum SyncConn {
    Single(Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
    /// A connection to the master of `generation` behind sentinels.
    Master {
        conn: Connection,
        generation: u64,
    },
}

impl SyncConn {
    fn as_dyn(&mut self) -> &mut dyn ConnectionLike {
        match self {
            SyncConn::Single(conn) | SyncConn::Master { conn, .. } => conn,
            SyncConn::Cluster(conn) => conn.as_mut(),
        }
    }

    /// The master generation of a connection behind sentinels.
    fn generation(&self) -> Option<u64> {
        match self {
            SyncConn::Master { generation, .. } => Some(*generation),
            _ => None,
        }
    }

    /// One round trip of a listing. A cluster routes a command to the master of its slot;
    /// its pipeline sends each command to the node of its key (the scanned master).
    fn send(&mut self, io: &Io) -> RedisResult<Value> {
        match (self, io) {
            (SyncConn::Single(conn) | SyncConn::Master { conn, .. }, Io::Command { cmd, .. }) => {
                cmd.query(conn)
            }
            (SyncConn::Single(conn) | SyncConn::Master { conn, .. }, Io::Pipeline { cmds, .. }) => {
                listing::pipeline(cmds)
                    .query::<Vec<Value>>(conn)
                    .map(Value::Array)
            }
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
    pub(crate) fn run(&self, invocation: &ScriptCall) -> RedisResult<Value> {
        self.call(|conn| invocation.invoke(conn.as_dyn()))
    }

    /// Runs `invocation` and then `wait` (replica acknowledgement) in one round trip on
    /// one connection: a cluster sends the pair to the node of the script's first key.
    /// Answers the script's reply and `wait`'s. A script the server does not know is
    /// loaded and the pair sent once more (as [`run`](Self::run) does).
    pub(crate) fn run_acked(&self, invocation: &ScriptCall, wait: &redis::Cmd) -> AckedReply {
        let packed = acked_pipeline(invocation, wait).get_packed_pipeline();
        self.call(|conn| {
            // Not `Pipeline::query`: the sync cluster connection refuses pipelines, but
            // routes a packed one by its first command, which is what is wanted here.
            let conn = conn.as_dyn();
            let first = conn.req_packed_commands(&packed, 0, 2).and_then(pair);
            if script_unknown(&first) {
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
        invocations: &[ScriptCall],
    ) -> RedisResult<Vec<RedisResult<Value>>> {
        self.call(|conn| {
            let (SyncConn::Single(conn) | SyncConn::Master { conn, .. }) = conn else {
                return Err(redis::RedisError::from((
                    ErrorKind::Client,
                    "scripts are pipelined on a standalone server only",
                )));
            };
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for invocation in invocations {
                pipe.add_command(invocation.eval_cmd());
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

    /// Runs `f` on a connection, with the asynchronous signals blocked while it waits
    /// for the server (see the crate's `signals` module: a handler run during the read
    /// would fail the call with its answer unread).
    fn call<T>(&self, f: impl FnMut(&mut SyncConn) -> RedisResult<T>) -> RedisResult<T> {
        crate::signals::uninterrupted(|| self.call_retried(f))
    }

    fn call_retried<T>(
        &self,
        mut f: impl FnMut(&mut SyncConn) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let (pooled, first) = match self.pooled() {
            Some(conn) => (true, self.call_on(conn, &mut f)),
            None => (false, self.call_on(self.open()?, &mut f)),
        };
        match first {
            // A dead pooled connection (a restarted server), or a replica's `READONLY`
            // (nothing was written; the master was forgotten, so this asks again).
            Err(err) if (pooled && is_dead_connection(&err)) || self.is_demoted(&err) => {
                self.call_on(self.open()?, &mut f)
            }
            result => result,
        }
    }

    /// An idle connection, skipping those to a master forgotten since they were opened.
    fn pooled(&self) -> Option<SyncConn> {
        let mut idle = self.idle.lock();
        while let Some(conn) = idle.pop() {
            match (conn.generation(), &self.target) {
                (Some(generation), Target::Sentinel(target)) if !target.is_current(generation) => {}
                _ => return Some(conn),
            }
        }
        None
    }

    /// `READONLY` behind sentinels: the connection went to a replica.
    fn is_demoted(&self, err: &redis::RedisError) -> bool {
        matches!(self.target, Target::Sentinel(_)) && sentinel::is_readonly(err)
    }

    /// Runs `f` on `conn`, and pools `conn` again unless it may be broken.
    fn call_on<T>(
        &self,
        mut conn: SyncConn,
        f: &mut impl FnMut(&mut SyncConn) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let result = f(&mut conn);
        if let (Err(err), Some(generation), Target::Sentinel(target)) =
            (&result, conn.generation(), &self.target)
            && sentinel::may_have_failed_over(err)
        {
            target.forget(generation);
        }
        let reusable = match &result {
            Ok(_) => true,
            Err(err) => is_server_reply(err) && !self.is_demoted(err),
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
            Target::Sentinel(target) => self.open_master(target),
        }
    }

    /// A connection to the master the sentinels name, once `ROLE` confirms it is one.
    fn open_master(&self, target: &SentinelTarget) -> RedisResult<SyncConn> {
        let master = target.master()?;
        let checked = master
            .client
            .get_connection_with_timeout(self.connect_timeout)
            .and_then(|mut conn| {
                conn.set_read_timeout(Some(self.response_timeout))?;
                conn.set_write_timeout(Some(self.response_timeout))?;
                let role: Value = redis::cmd("ROLE").query(&mut conn)?;
                sentinel::check_master(&role)?;
                Ok(conn)
            });
        match checked {
            Ok(conn) => Ok(SyncConn::Master {
                conn,
                generation: master.generation,
            }),
            Err(err) => {
                if sentinel::may_have_failed_over(&err) {
                    target.forget(master.generation);
                }
                Err(err)
            }
        }
    }
}

/// `NOSCRIPT`: the server does not know the script (a restart or a new master emptied its
/// cache).
pub(crate) fn is_no_script(err: &redis::RedisError) -> bool {
    err.kind() == ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// An error reply from the server: the connection itself is fine.
fn is_server_reply(err: &redis::RedisError) -> bool {
    matches!(err.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
        && !err.is_unrecoverable_error()
}
