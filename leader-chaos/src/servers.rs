//! The lock server of a run, behind the fault proxies: a Redis server without persistence
//! (a restart loses every lock and counter), a MongoDB-compatible one (a restart keeps
//! them), a three-member etcd cluster (a restart of the whole cluster keeps them, and
//! single members can be killed, paused or cut off), a PostgreSQL server (a restart or a
//! kill -9 keeps every committed row), a Redis master with a replica behind three
//! Sentinels (reached through the Sentinels, no proxy; a failover may lose the master's
//! last writes), a PostgreSQL primary and a synchronous standby (reached with a URL
//! listing both, no proxy; a failover loses nothing acknowledged); or no server at all, a
//! SQLite database file the workers share.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use leader::{AnyBackend, EtcdBackend, EtcdConfig, SqliteBackend, SqliteConfig};
use leader_rig::fixtures::{
    Data, EtcdCluster, MongoServer, PostgresServer, PostgresStandbyPair, RedisSentinel,
    RedisServer, Replication,
};

use crate::backend::Backend;

/// How long one etcd call may take, for the workers and the orchestrator: a call to a
/// member that stopped answering fails after this, and the client tries another member.
pub const ETCD_OPERATION_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the etcd client pings each member's connection: a member that stopped
/// answering (killed, paused, cut off) is passed over within about this much.
pub const ETCD_KEEP_ALIVE: Duration = Duration::from_secs(1);
/// How long opening a connection to an etcd member may take.
pub const ETCD_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a SQLite call waits for another connection's write before it fails with a
/// transient (typed) error: well under the lease, so a worker whose renewal meets a
/// busy file fails closed at its deadline instead of blocking past it, and the `busy`
/// fault (an exclusive transaction held 1–3 s) shows as errors, never as an answer.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_millis(250);
/// How long the Sentinels may take to promote the replica once the master is killed: they
/// need a second to call it down (`down-after-milliseconds`), then a vote; well above
/// that on a loaded machine.
pub const FAILOVER_TIMEOUT: Duration = Duration::from_secs(30);
/// The lock table of the SQLite and PostgreSQL backends (their default).
const LOCK_TABLE: &str = "leader_locks";
/// SQLite's read/write lock tables: the names (counter, intent) and their holds.
const LOCK_TABLE_RW: &str = "leader_rw";
const LOCK_TABLE_RW_HOLDERS: &str = "leader_rw_holders";

/// The lock server.
#[derive(Debug)]
pub enum LockServer {
    /// `redis-server`, no persistence.
    Redis(RedisServer),
    /// `secantusd-rs`, keeping its data.
    Mongo(MongoServer),
    /// Three `etcd` members, one raft cluster, keeping their data.
    Etcd(EtcdCluster),
    /// A SQLite database file in the run's directory.
    Sqlite(PathBuf),
    /// `postgres`, keeping its data.
    Postgres(PostgresServer),
    /// A `redis-server` master and replica, no persistence, and three Sentinels.
    RedisSentinel(RedisSentinel),
    /// A `postgres` primary and its synchronous standby.
    PostgresStandby(PostgresStandbyPair),
}

impl LockServer {
    /// Starts the server for `backend`.
    ///
    /// # Errors
    ///
    /// `NotFound` when its binary is not installed; any failure to start it. A SQLite
    /// file goes into `dir`.
    pub fn start(backend: Backend, dir: &Path) -> io::Result<Self> {
        Ok(match backend {
            Backend::Redis => LockServer::Redis(RedisServer::start()?),
            Backend::Mongodb => LockServer::Mongo(MongoServer::start()?),
            Backend::Etcd => LockServer::Etcd(EtcdCluster::start()?),
            Backend::Sqlite => LockServer::Sqlite(dir.join("locks.sqlite")),
            Backend::Postgres => LockServer::Postgres(PostgresServer::start()?),
            Backend::RedisSentinel => LockServer::RedisSentinel(RedisSentinel::start()?),
            Backend::PostgresStandby => {
                LockServer::PostgresStandby(PostgresStandbyPair::start(Replication::Synchronous)?)
            }
        })
    }

    /// Where the server listens: one address, or each etcd member's client address in
    /// member order. Each gets a fault proxy of its own.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        match self {
            LockServer::Redis(server) => vec![server.addr()],
            LockServer::Mongo(server) => vec![server.addr()],
            LockServer::Etcd(cluster) => cluster.members().iter().map(|m| m.addr()).collect(),
            LockServer::Postgres(server) => vec![server.addr()],
            // A file: nothing to put a proxy in front of. The Sentinels hand out the
            // master's own address, which a proxy in front of them would not change.
            // The standby pair's URL lists both servers, the client finding the one
            // that takes writes.
            LockServer::Sqlite(_)
            | LockServer::RedisSentinel(_)
            | LockServer::PostgresStandby(_) => Vec::new(),
        }
    }

    /// A URL for a server at `addrs` (the proxies', or the server's own), as
    /// [`connect`] takes it. A replicated topology has no proxies: its URL lists the
    /// Sentinels, or both PostgreSQL servers.
    pub fn url_at(&self, addrs: &[SocketAddr]) -> String {
        let list: Vec<String> = addrs.iter().map(SocketAddr::to_string).collect();
        let list = list.join(",");
        match self {
            LockServer::Redis(_) => format!("redis://{list}/"),
            // One server, reached at this address whatever it says its name is.
            LockServer::Mongo(_) => format!(
                "mongodb://{list}/?directConnection=true&serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
            ),
            LockServer::Etcd(_) => format!("etcd://{list}"),
            LockServer::Postgres(_) => {
                format!("postgres://postgres@{list}/postgres?connect_timeout=2")
            }
            LockServer::Sqlite(path) => format!("sqlite://{}", path.display()),
            LockServer::RedisSentinel(set) => set.url(),
            LockServer::PostgresStandby(pair) => {
                format!("{}&connect_timeout=2", pair.url())
            }
        }
    }

    /// Kills the server and starts it again on the same ports; `true` when the locks were
    /// lost (Redis), `false` when kept (MongoDB; PostgreSQL, crash recovery; etcd, every
    /// member killed -9 at once and started on its data, back once the cluster is
    /// healthy).
    ///
    /// # Errors
    ///
    /// When it does not come back, or for SQLite (no server) and the replicated
    /// topologies (which fail over instead).
    pub fn restart(&mut self) -> io::Result<bool> {
        match self {
            LockServer::Redis(server) => server.restart(Data::Lose).map(|()| true),
            LockServer::Mongo(server) => server.restart(Data::Keep).map(|()| false),
            LockServer::Etcd(cluster) => cluster.restart_all().map(|()| false),
            LockServer::Postgres(server) => server.restart(Data::Keep).map(|()| false),
            LockServer::Sqlite(_)
            | LockServer::RedisSentinel(_)
            | LockServer::PostgresStandby(_) => Err(not_here("restart")),
        }
    }

    /// Kills the primary with SIGKILL and promotes its replica; returns once the new
    /// primary takes writes.
    ///
    /// Redis with Sentinels: waits until every Sentinel reports the replica as the master
    /// and it answers as one, then starts the old master, empty, as its replica (so the
    /// next failover has a replica to promote) and waits until the Sentinels know it.
    /// PostgreSQL: promotes the standby (`pg_promote()`), waits until it takes writes, then
    /// rebuilds the old primary as its synchronous standby (`pg_basebackup` of the new
    /// primary) and waits until the new primary counts it as one: until then commits are
    /// acknowledged without a standby, and no failover comes before that.
    ///
    /// # Errors
    ///
    /// When the replica is not promoted within [`FAILOVER_TIMEOUT`] (30 s for PostgreSQL),
    /// the old primary does not come back as a replica, or for another backend.
    pub fn failover(&mut self) -> io::Result<()> {
        match self {
            LockServer::RedisSentinel(set) => {
                let old = set.kill_master()?;
                set.wait_for_new_master(old, FAILOVER_TIMEOUT)?;
                set.restart_as_replica(old)
            }
            LockServer::PostgresStandby(pair) => {
                pair.kill_primary()?;
                pair.promote()?;
                pair.rebuild_standby()
            }
            _ => Err(not_here("failover")),
        }
    }

    /// PostgreSQL: kill -9 every process of the server, leave it down for `down`, then
    /// start it on its data directory.
    ///
    /// # Errors
    ///
    /// When it does not come back, or for another backend.
    pub fn kill_and_restart(&mut self, down: Duration) -> io::Result<()> {
        let LockServer::Postgres(server) = self else {
            return Err(not_here("server-kill"));
        };
        server.kill();
        thread::sleep(down);
        server.restart(Data::Keep)
    }

    /// SQLite, PostgreSQL: deletes every lock row and every read/write hold (and waiting
    /// writer), as an operator would by hand; returns how many holds went. On SQLite the
    /// fencing counters stay (they live in a table or column of their own); on PostgreSQL
    /// they go with the rows.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached, or for another backend.
    pub fn wipe(&mut self) -> io::Result<u64> {
        match self {
            LockServer::Sqlite(path) => {
                let mut con = sqlite(path)?;
                let tx = con.transaction().map_err(io::Error::other)?;
                let mut gone = 0;
                for sql in [
                    format!("DELETE FROM {LOCK_TABLE}"),
                    format!("DELETE FROM {LOCK_TABLE_RW_HOLDERS}"),
                    format!(
                        "UPDATE {LOCK_TABLE_RW} SET intent_owner = NULL, intent_leader_id = NULL, \
                         intent_expires_us = NULL"
                    ),
                ] {
                    let rows = tx.execute(&sql, []).map_err(io::Error::other)?;
                    if !sql.starts_with("UPDATE") {
                        gone += u64::try_from(rows).unwrap_or(u64::MAX);
                    }
                }
                tx.commit().map_err(io::Error::other)?;
                Ok(gone)
            }
            LockServer::Postgres(server) => {
                let out = server.psql(&format!(
                    "WITH gone AS (DELETE FROM {LOCK_TABLE} RETURNING 1), \
                     held AS (DELETE FROM {LOCK_TABLE}_rw_hold RETURNING 1), \
                     rw AS (DELETE FROM {LOCK_TABLE}_rw RETURNING 1) \
                     SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM held)"
                ))?;
                out.parse()
                    .map_err(|_| io::Error::other(format!("psql said {out:?}")))
            }
            _ => Err(not_here("wipe")),
        }
    }

    /// SQLite: another connection takes the file's write lock (`BEGIN EXCLUSIVE`) and
    /// keeps it for `held`, then rolls back.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened or locked, or for another backend.
    pub fn hold_exclusive(&mut self, held: Duration) -> io::Result<()> {
        let LockServer::Sqlite(path) = self else {
            return Err(not_here("busy"));
        };
        let con = sqlite(path)?;
        con.execute_batch("BEGIN EXCLUSIVE")
            .map_err(io::Error::other)?;
        thread::sleep(held);
        con.execute_batch("ROLLBACK").map_err(io::Error::other)
    }

    /// PostgreSQL (the primary, with a standby): another session locks every lock row
    /// (`SELECT … FOR UPDATE`, waiting for any a worker's statement holds), keeps them for
    /// `held`, then rolls back; returns how many rows it locked.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached, or for another backend.
    pub fn lock_rows(&mut self, held: Duration) -> io::Result<u64> {
        let server = match self {
            LockServer::Postgres(server) => &*server,
            LockServer::PostgresStandby(pair) => pair.primary(),
            _ => return Err(not_here("row-lock")),
        };
        let out = server.psql(&format!(
            "BEGIN; SELECT count(*) FROM (SELECT 1 FROM {LOCK_TABLE} FOR UPDATE) AS locked; \
             SELECT pg_sleep({}); ROLLBACK;",
            held.as_secs_f64()
        ))?;
        // psql prints each statement's result (the sleep's an empty line): the count is
        // the first number.
        out.lines()
            .find_map(|line| line.trim().parse().ok())
            .ok_or_else(|| io::Error::other(format!("psql said {out:?}")))
    }

    /// PostgreSQL: ends every client session but the one asking
    /// (`pg_terminate_backend`); returns how many.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached, or for another backend.
    pub fn terminate_sessions(&mut self) -> io::Result<u64> {
        let LockServer::Postgres(server) = self else {
            return Err(not_here("terminate"));
        };
        let out = server.psql(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS ended \
             FROM pg_stat_activity WHERE backend_type = 'client backend' \
             AND pid <> pg_backend_pid()) AS sessions WHERE ended",
        )?;
        out.parse()
            .map_err(|_| io::Error::other(format!("psql said {out:?}")))
    }

    /// The etcd cluster, when the server is one.
    pub fn etcd(&self) -> Option<&EtcdCluster> {
        match self {
            LockServer::Etcd(cluster) => Some(cluster),
            _ => None,
        }
    }

    /// The etcd cluster, to kill or restart a member.
    pub fn etcd_mut(&mut self) -> Option<&mut EtcdCluster> {
        match self {
            LockServer::Etcd(cluster) => Some(cluster),
            _ => None,
        }
    }
}

/// The backend at `url`: [`leader::connect`], except that for etcd the calls are bounded
/// by [`ETCD_OPERATION_TIMEOUT`] and dead members noticed within [`ETCD_KEEP_ALIVE`]
/// (etcd's defaults, 10 s and 2 s, would stall a worker for several leases behind a
/// member that stopped answering).
///
/// # Errors
///
/// A URL that is not understood, or a backend that cannot start.
pub fn connect(url: &str) -> Result<AnyBackend, Box<dyn std::error::Error>> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        let config = SqliteConfig::new().with_busy_timeout(SQLITE_BUSY_TIMEOUT);
        return Ok(SqliteBackend::open_with(path, config)?.into());
    }
    if url.starts_with("etcd://") {
        let config = EtcdConfig::new()
            .with_operation_timeout(ETCD_OPERATION_TIMEOUT)
            .with_keep_alive(ETCD_KEEP_ALIVE)
            .with_connect_timeout(ETCD_CONNECT_TIMEOUT);
        return Ok(EtcdBackend::connect_with(url, config)?.into());
    }
    Ok(leader::connect(url)?)
}

/// A connection of the orchestrator's own to the SQLite file, as an operator's shell
/// would open one (waiting up to 5 s for the workers' short transactions).
fn sqlite(path: &Path) -> io::Result<rusqlite::Connection> {
    let con = rusqlite::Connection::open(path).map_err(io::Error::other)?;
    con.busy_timeout(Duration::from_secs(5))
        .map_err(io::Error::other)?;
    Ok(con)
}

fn not_here(fault: &str) -> io::Error {
    io::Error::other(format!("the {fault} fault does not apply to this backend"))
}
