//! The lock server of a run, behind the fault proxy: a Redis server without persistence
//! (a restart loses every lock and counter) or a MongoDB-compatible one (a restart keeps
//! them).

use std::io;
use std::net::SocketAddr;

use leader_testkit::fixtures::{Data, MongoServer, RedisServer};

use crate::cli::Backend;

/// The lock server.
#[derive(Debug)]
pub enum LockServer {
    /// `redis-server`, no persistence.
    Redis(RedisServer),
    /// `secantusd-rs`, keeping its data.
    Mongo(MongoServer),
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
        })
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        match self {
            LockServer::Redis(server) => server.addr(),
            LockServer::Mongo(server) => server.addr(),
        }
    }

    /// A `leader::connect` URL for a server at `addr` (the proxy's, or the server's own).
    pub fn url_at(&self, addr: SocketAddr) -> String {
        match self {
            LockServer::Redis(_) => format!("redis://{addr}/"),
            // One server, reached at this address whatever it says its name is.
            LockServer::Mongo(_) => format!(
                "mongodb://{addr}/?directConnection=true&serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
            ),
        }
    }

    /// Kills the server and starts it again on the same port; `true` when the locks were
    /// lost (Redis), `false` when kept (MongoDB).
    ///
    /// # Errors
    ///
    /// When it does not come back.
    pub fn restart(&mut self) -> io::Result<bool> {
        match self {
            LockServer::Redis(server) => server.restart(Data::Lose).map(|()| true),
            LockServer::Mongo(server) => server.restart(Data::Keep).map(|()| false),
        }
    }
}
