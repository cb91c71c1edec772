//! The lock server of a run, behind the fault proxies: a Redis server without persistence
//! (a restart loses every lock and counter), a MongoDB-compatible one (a restart keeps
//! them), or a three-member etcd cluster (a restart of the whole cluster keeps them, and
//! single members can be killed, paused or cut off).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use leader::{AnyBackend, EtcdBackend, EtcdConfig};
use leader_testkit::fixtures::{Data, EtcdCluster, MongoServer, RedisServer};

use crate::cli::Backend;

/// How long one etcd call may take, for the workers and the orchestrator: a call to a
/// member that stopped answering fails after this, and the client tries another member.
pub const ETCD_OPERATION_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the etcd client pings each member's connection: a member that stopped
/// answering (killed, paused, cut off) is passed over within about this much.
pub const ETCD_KEEP_ALIVE: Duration = Duration::from_secs(1);
/// How long opening a connection to an etcd member may take.
pub const ETCD_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The lock server.
#[derive(Debug)]
pub enum LockServer {
    /// `redis-server`, no persistence.
    Redis(RedisServer),
    /// `secantusd-rs`, keeping its data.
    Mongo(MongoServer),
    /// Three `etcd` members, one raft cluster, keeping their data.
    Etcd(EtcdCluster),
}

impl LockServer {
    /// Starts the server for `backend`.
    ///
    /// # Errors
    ///
    /// `NotFound` when its binary is not installed; any failure to start it.
    pub fn start(backend: Backend) -> io::Result<Self> {
        Ok(match backend {
            Backend::Redis => LockServer::Redis(RedisServer::start()?),
            Backend::Mongodb => LockServer::Mongo(MongoServer::start()?),
            Backend::Etcd => LockServer::Etcd(EtcdCluster::start()?),
        })
    }

    /// Where the server listens: one address, or each etcd member's client address in
    /// member order. Each gets a fault proxy of its own.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        match self {
            LockServer::Redis(server) => vec![server.addr()],
            LockServer::Mongo(server) => vec![server.addr()],
            LockServer::Etcd(cluster) => cluster.members().iter().map(|m| m.addr()).collect(),
        }
    }

    /// A URL for a server at `addrs` (the proxies', or the server's own), as
    /// [`connect`] takes it.
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
        }
    }

    /// Kills the server and starts it again on the same ports; `true` when the locks were
    /// lost (Redis), `false` when kept (MongoDB; etcd, every member killed -9 at once and
    /// started on its data, back once the cluster is healthy).
    ///
    /// # Errors
    ///
    /// When it does not come back.
    pub fn restart(&mut self) -> io::Result<bool> {
        match self {
            LockServer::Redis(server) => server.restart(Data::Lose).map(|()| true),
            LockServer::Mongo(server) => server.restart(Data::Keep).map(|()| false),
            LockServer::Etcd(cluster) => cluster.restart_all().map(|()| false),
        }
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
    if url.starts_with("etcd://") {
        let config = EtcdConfig::new()
            .with_operation_timeout(ETCD_OPERATION_TIMEOUT)
            .with_keep_alive(ETCD_KEEP_ALIVE)
            .with_connect_timeout(ETCD_CONNECT_TIMEOUT);
        return Ok(EtcdBackend::connect_with(url, config)?.into());
    }
    Ok(leader::connect(url)?)
}
