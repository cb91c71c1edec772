//! The lock backends (and topologies) a run can use, each with the faults that apply to
//! it.
//!
//! A backend is one variant of [`Backend`]: its `--backend` name, its default lease and
//! its fault list are the `match` arms below, and the server it runs on is one arm of
//! [`LockServer`](crate::servers::LockServer). A replicated topology (a Redis primary
//! with Sentinels, a PostgreSQL primary with a standby) is added the same way: one
//! variant here (`RedisSentinel`, `PostgresStandby`), its fault list (the single-server
//! faults that still apply, plus its own, say a failover, declared in
//! [`Class`] with whether they lose data), and one `LockServer` arm that starts its
//! fixture; the checker needs nothing new, since it reads only the faults' kinds.

use std::time::Duration;

use crate::faults::Class;

/// The lock backend of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A Redis server without persistence: a restart loses the locks.
    Redis,
    /// A MongoDB-compatible server: a restart keeps them.
    Mongodb,
    /// A three-member etcd cluster: a restart keeps them; single members fail too.
    Etcd,
    /// One SQLite database file shared by the worker processes: no server, no proxy.
    Sqlite,
    /// A PostgreSQL server behind the fault proxy: a restart or a kill -9 keeps every
    /// committed row.
    Postgres,
    /// A Redis master with one replica behind three Sentinels, reached through the
    /// Sentinels (no proxy): a failover promotes the replica, which may lack the master's
    /// last writes, since replication is asynchronous.
    RedisSentinel,
    /// A PostgreSQL primary and a synchronous standby, reached with a URL listing both
    /// (no proxy): a failover promotes the standby, which has every acknowledged commit,
    /// and rebuilds the old primary as its standby.
    PostgresStandby,
}

impl Backend {
    /// Every backend, in `--backend` order.
    pub const ALL: [Backend; 7] = [
        Backend::Redis,
        Backend::Mongodb,
        Backend::Etcd,
        Backend::Sqlite,
        Backend::Postgres,
        Backend::RedisSentinel,
        Backend::PostgresStandby,
    ];

    /// Its `--backend` name.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Redis => "redis",
            Backend::Mongodb => "mongodb",
            Backend::Etcd => "etcd",
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
            Backend::RedisSentinel => "redis-sentinel",
            Backend::PostgresStandby => "postgres-standby",
        }
    }

    /// The backend a `--backend` name means (`mongo` and `postgresql` too).
    pub fn from_name(name: &str) -> Option<Backend> {
        match name {
            "mongo" => Some(Backend::Mongodb),
            "postgresql" => Some(Backend::Postgres),
            _ => Backend::ALL.into_iter().find(|b| b.name() == name),
        }
    }

    /// The workers' lease when `--lease-ms` is not given: a whole second count for etcd,
    /// whose leases count whole seconds.
    pub fn default_lease(self) -> Duration {
        match self {
            Backend::Redis
            | Backend::Mongodb
            | Backend::Sqlite
            | Backend::Postgres
            | Backend::RedisSentinel
            | Backend::PostgresStandby => Duration::from_millis(1000),
            Backend::Etcd => Duration::from_millis(2000),
        }
    }

    /// How many worker processes when `--workers` is not given: enough for well over a
    /// thousand acquisitions in a 45 s run on a loaded machine. A worker acquires one lock
    /// at a time, so the rate is the workers' count over one acquire-work-release cycle,
    /// and that cycle is longer on MongoDB (about 40 ms to acquire, with this build of the
    /// server), on PostgreSQL (a transaction per call, each committed to disk, to a
    /// standby too when there is one) and on etcd (a lease grant and a transaction, each a
    /// raft commit: about 100 ms to acquire, 50 ms to release) than on Redis or SQLite.
    pub fn default_workers(self) -> u32 {
        match self {
            Backend::Redis | Backend::Sqlite | Backend::RedisSentinel => 5,
            Backend::Postgres | Backend::PostgresStandby => 7,
            Backend::Mongodb => 10,
            Backend::Etcd => 20,
        }
    }

    /// Whether its leases must be whole seconds.
    pub fn whole_second_leases(self) -> bool {
        self == Backend::Etcd
    }

    /// The faults that apply to it: the worker faults everywhere; the server and proxy
    /// faults where there is a server; the member faults for etcd; for SQLite rows
    /// deleted by hand and a long exclusive transaction; for PostgreSQL a kill -9 of the
    /// server, `pg_terminate_backend` and rows deleted by hand; for the replicated
    /// topologies a failover (no proxy stands between the workers and the servers, whose
    /// real addresses the Sentinels hand out or the URL lists, so no partition or reset).
    pub fn faults(self) -> &'static [Class] {
        use Class::*;
        match self {
            Backend::Redis | Backend::Mongodb => &[Kill, Pause, Restart, Blackhole, Reset],
            Backend::Etcd => &[
                Kill,
                Pause,
                Restart,
                Blackhole,
                Reset,
                MemberKill,
                MemberPause,
                MemberCut,
            ],
            Backend::Sqlite => &[Kill, Pause, Wipe, Busy],
            Backend::Postgres => &[
                Kill, Pause, Restart, ServerKill, Blackhole, Reset, Terminate, Wipe, RowLock,
            ],
            Backend::RedisSentinel => &[Kill, Pause, Failover],
            Backend::PostgresStandby => &[Kill, Pause, Failover, RowLock],
        }
    }

    /// Whether a worker stopped with SIGSTOP can keep every other worker from renewing:
    /// SQLite's, stopped inside a write transaction, keeps the database file locked (the
    /// servers finish a client's statement without it).
    pub fn paused_client_blocks_store(self) -> bool {
        self == Backend::Sqlite
    }

    /// Whether a restart of its server loses the locks (Redis runs without persistence).
    pub fn restart_loses_data(self) -> bool {
        self == Backend::Redis
    }

    /// Whether a failover may lose acknowledged writes: it does to an asynchronous
    /// replica (Redis), not to a synchronous standby (PostgreSQL, whose commits are
    /// acknowledged once the standby has flushed them).
    pub fn failover_loses_data(self) -> bool {
        self == Backend::RedisSentinel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_backend_has_worker_faults() {
        for backend in Backend::ALL {
            assert_eq!(Backend::from_name(backend.name()), Some(backend));
            assert!(backend.faults().contains(&Class::Kill), "{backend:?}");
            assert!(backend.faults().contains(&Class::Pause), "{backend:?}");
        }
        assert_eq!(Backend::from_name("mongo"), Some(Backend::Mongodb));
        assert_eq!(Backend::from_name("consul"), None);
        // No server, no proxy: nothing to restart or cut off.
        for class in [Class::Restart, Class::Blackhole, Class::Reset] {
            assert!(!Backend::Sqlite.faults().contains(&class));
        }
        assert!(Backend::Postgres.faults().contains(&Class::Terminate));
        assert!(!Backend::Redis.faults().contains(&Class::Wipe));
        assert_eq!(
            Backend::from_name("redis-sentinel"),
            Some(Backend::RedisSentinel)
        );
        assert_eq!(
            Class::Failover.backends(),
            vec!["redis-sentinel", "postgres-standby"]
        );
        // No proxy in front of a replicated topology: nothing to cut off or reset.
        for backend in [Backend::RedisSentinel, Backend::PostgresStandby] {
            for class in [Class::Restart, Class::Blackhole, Class::Reset] {
                assert!(!backend.faults().contains(&class), "{backend:?}");
            }
        }
        assert!(Backend::RedisSentinel.failover_loses_data());
        assert!(!Backend::PostgresStandby.failover_loses_data());
    }
}
