//! Orphaned acquisitions against a paused server, on every server backend: an acquire that
//! timed out while the server was stopped (SIGSTOP) sits in its socket and runs when the
//! server goes on (SIGCONT), its lease starting then. The electors release it in the
//! background until the server answers, so the lock is free again soon after the thaw,
//! not a whole lease later.
//!
//! A release after the action that is lost on its way goes on in the background the same
//! way, until it frees the lock. And a backend whose releases hang (a frozen Redis) delays
//! no other backend's.
//!
//! Each test prints the free-again times it measured (`--nocapture` shows them).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use leader::{
    AnyBackend, AsyncLeaderElector, EtcdBackend, EtcdConfig, LeaderElectionOptions, LeaderElector,
    MongoBackend, MongoConfig, PostgresBackend, PostgresConfig, RedisBackend, RedisConfig,
};
use leader_rig::FaultProxy;
use leader_rig::fixtures::{self, EtcdServer, MongoServer, PostgresServer, RedisServer};
use leader_testkit::wait_until;

/// The lease of the trials: an applied orphan would hold the lock this long after the thaw.
const LEASE: Duration = Duration::from_secs(5);
/// The server stays paused this long past the end of the lease asked for: past the window
/// the background release used to stop at.
const PAST_THE_LEASE: Duration = Duration::from_millis(1500);
/// The lock is free again this soon after the thaw: a release attempt stuck when the
/// server went on (at most the timeouts), the backoff (at most 500 ms), and a loaded
/// machine's share.
const FREE_AGAIN: Duration = Duration::from_secs(3);
const TRIALS: usize = 3;
/// Every call of the trials' backends gives up after this.
const TIMEOUT: Duration = Duration::from_secs(1);

/// A test server that SIGSTOP pauses and SIGCONT resumes.
trait Pause {
    fn pause(&self);
    fn resume(&self);
}

macro_rules! pause_by_signal {
    ($($server:ty),*) => {
        $(impl Pause for $server {
            fn pause(&self) {
                <$server>::pause(self);
            }
            fn resume(&self) {
                <$server>::resume(self);
            }
        })*
    };
}

pause_by_signal!(RedisServer, PostgresServer, MongoServer, EtcdServer);

/// A server of the test's own, and backends on it (or on a proxy in front of it) with
/// short timeouts.
struct Paused {
    kind: &'static str,
    server: Box<dyn Pause>,
    /// The server's URL, and the address in it.
    url: String,
    addr: SocketAddr,
    /// A backend on the server at a URL.
    connect: Box<dyn Fn(&str) -> AnyBackend>,
}

impl Paused {
    /// A private server of `kind`; `None` when it is not installed and servers are not
    /// required.
    fn start(kind: &'static str) -> Option<Self> {
        type Connect = Box<dyn Fn(&str) -> AnyBackend>;
        let (server, url, addr, connect): (Box<dyn Pause>, String, SocketAddr, Connect) = match kind
        {
            "redis" => {
                let server = fixtures::require("redis", RedisServer::start())?;
                let (url, addr) = (server.url(), server.addr());
                let config = RedisConfig::default()
                    .with_connect_timeout(TIMEOUT)
                    .with_response_timeout(TIMEOUT);
                let connect = move |url: &str| {
                    RedisBackend::connect_with(url, config.clone())
                        .unwrap()
                        .into()
                };
                (Box::new(server), url, addr, Box::new(connect))
            }
            "postgres" => {
                let server = fixtures::require("postgres", PostgresServer::start())?;
                let (url, addr) = (server.url(), server.addr());
                let config = PostgresConfig::new()
                    .with_table("orphan_locks")
                    .with_connect_timeout(TIMEOUT)
                    .with_operation_timeout(TIMEOUT);
                let connect = move |url: &str| {
                    PostgresBackend::connect_with(url, config.clone())
                        .unwrap()
                        .into()
                };
                (Box::new(server), url, addr, Box::new(connect))
            }
            "mongodb" => {
                let server = fixtures::require("secantusd-rs", MongoServer::start())?;
                // One server, no topology discovery of the replica set it reports.
                let (url, addr) = (
                    format!("{}?directConnection=true", server.uri()),
                    server.addr(),
                );
                let config = MongoConfig::new()
                    .with_collection("orphan_locks")
                    .with_server_selection_timeout(TIMEOUT)
                    .with_connect_timeout(TIMEOUT)
                    .with_operation_timeout(TIMEOUT);
                let connect = move |url: &str| {
                    MongoBackend::connect_with(url, config.clone())
                        .unwrap()
                        .into()
                };
                (Box::new(server), url, addr, Box::new(connect))
            }
            "etcd" => {
                let server = fixtures::require("etcd", EtcdServer::start())?;
                let (url, addr) = (server.url(), server.addr());
                let config = EtcdConfig::new()
                    .with_prefix("orphans")
                    .with_connect_timeout(TIMEOUT)
                    .with_operation_timeout(TIMEOUT);
                let connect = move |url: &str| {
                    EtcdBackend::connect_with(url, config.clone())
                        .unwrap()
                        .into()
                };
                (Box::new(server), url, addr, Box::new(connect))
            }
            other => panic!("no server backend {other}"),
        };
        assert!(url.contains(&addr.to_string()), "{url} names {addr}");
        Some(Paused {
            kind,
            server,
            url,
            addr,
            connect,
        })
    }

    /// A backend on the server.
    fn backend(&self) -> AnyBackend {
        (self.connect)(&self.url)
    }

    /// A backend on the server through `proxy`.
    fn backend_through(&self, proxy: &FaultProxy) -> AnyBackend {
        let url = self
            .url
            .replace(&self.addr.to_string(), &proxy.addr().to_string());
        (self.connect)(&url)
    }

    fn pause(&self) {
        self.server.pause();
    }

    fn resume(&self) {
        self.server.resume();
    }
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(LEASE)
}

/// The trials' median and maximum, printed.
fn report(what: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let (median, max) = (times[times.len() / 2], times[times.len() - 1]);
    eprintln!("{what}: free again after the thaw: median {median:?}, max {max:?} ({times:?})");
    max
}

/// How long after `resumed` node `b` first takes `key`.
fn taken_by_b(b: &LeaderElector<AnyBackend>, key: &str, resumed: Instant) -> Duration {
    taken_by_b_within(b, key, LEASE, resumed)
}

/// How long after `resumed` node `b` first takes `key`, a lock taken for `lease`.
fn taken_by_b_within(
    b: &LeaderElector<AnyBackend>,
    key: &str,
    lease: Duration,
    resumed: Instant,
) -> Duration {
    wait_until(
        "the lock free again",
        lease + Duration::from_secs(5),
        || matches!(b.run_if_leader(key, || ()), Ok(Some(()))),
    );
    resumed.elapsed()
}

fn released_soon_after_a_thaw_blocking(kind: &'static str) {
    let Some(server) = Paused::start(kind) else {
        return;
    };
    let a = LeaderElector::new(server.backend(), options("a")).unwrap();
    let b = LeaderElector::new(server.backend(), options("b")).unwrap();
    let mut times = Vec::new();
    for trial in 0..TRIALS {
        let key = format!("thaw-blocking-{trial}");
        // Both nodes connected: the pause stops a live connection.
        assert!(b.state(&key).unwrap().leader().is_none());
        assert!(a.state(&key).unwrap().leader().is_none());
        server.pause();
        let sent = Instant::now();
        let result = a.run_if_leader(&key, || unreachable!("never elected"));
        assert!(
            matches!(&result, Err(err) if err.is_transient()),
            "{result:?}"
        );
        std::thread::sleep(
            (sent + LEASE + PAST_THE_LEASE).saturating_duration_since(Instant::now()),
        );
        server.resume();
        times.push(taken_by_b(&b, &key, Instant::now()));
    }
    let max = report(&format!("{}, blocking", server.kind), times);
    assert!(
        max <= FREE_AGAIN,
        "the lock stayed taken {max:?} after a thaw"
    );
}

fn released_soon_after_a_thaw_async(kind: &'static str) {
    let Some(server) = Paused::start(kind) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let a = runtime
        .block_on(async { AsyncLeaderElector::new(server.backend(), options("a")).unwrap() });
    let b = LeaderElector::new(server.backend(), options("b")).unwrap();
    let mut times = Vec::new();
    for trial in 0..TRIALS {
        let key = format!("thaw-async-{trial}");
        assert!(b.state(&key).unwrap().leader().is_none());
        runtime.block_on(async {
            assert!(a.state(&key).await.unwrap().leader().is_none());
            server.pause();
            let sent = Instant::now();
            let result = a
                .run_if_leader(&key, || async { unreachable!("never elected") })
                .await;
            assert!(
                matches!(&result, Err(err) if err.is_transient()),
                "{result:?}"
            );
            tokio::time::sleep_until((sent + LEASE + PAST_THE_LEASE).into()).await;
            server.resume();
        });
        times.push(taken_by_b(&b, &key, Instant::now()));
    }
    let max = report(&format!("{}, async", server.kind), times);
    assert!(
        max <= FREE_AGAIN,
        "the lock stayed taken {max:?} after a thaw"
    );
}

/// The lease of the partition trials: a lock whose release was lost would stay taken this
/// long after its action.
const HELD_LEASE: Duration = Duration::from_secs(30);

/// Node `a`'s release after its action is lost on its way (dropped in a partition, then the
/// connection reset, as a NAT or load balancer that forgot it does; the request never
/// reaches the server): the release goes on in the background, and node `b` takes the
/// lock soon after the network heals, not a lease later. (A live TCP connection never
/// drops bytes silently, so the reset is part of the fault: without it a multiplexed
/// connection would wait for the lost request's answer forever.)
fn released_after_a_lost_release_blocking(kind: &'static str) {
    let Some(server) = Paused::start(kind) else {
        return;
    };
    let proxy = FaultProxy::start(server.addr).unwrap();
    let a =
        LeaderElector::new(server.backend_through(&proxy), options_for("a", HELD_LEASE)).unwrap();
    let b = LeaderElector::new(server.backend(), options_for("b", HELD_LEASE)).unwrap();
    let key = "lost-release-blocking";
    let ran = a.run_if_leader(key, || proxy.blackhole()).unwrap();
    assert_eq!(ran, Some(()));
    let holder = b.state(key).unwrap();
    assert!(
        holder.leader().is_some(),
        "the release was lost: still taken"
    );
    proxy.heal();
    proxy.reset();
    let took = taken_by_b_within(&b, key, FREE_AGAIN, Instant::now());
    eprintln!(
        "{}, blocking: free again {took:?} after the partition healed",
        server.kind
    );
}

fn released_after_a_lost_release_async(kind: &'static str) {
    let Some(server) = Paused::start(kind) else {
        return;
    };
    let proxy = FaultProxy::start(server.addr).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let a = runtime.block_on(async {
        AsyncLeaderElector::new(server.backend_through(&proxy), options_for("a", HELD_LEASE))
            .unwrap()
    });
    let b = LeaderElector::new(server.backend(), options_for("b", HELD_LEASE)).unwrap();
    let key = "lost-release-async";
    let ran = runtime.block_on(async {
        a.run_if_leader(key, || async { proxy.blackhole() })
            .await
            .unwrap()
    });
    assert_eq!(ran, Some(()));
    let holder = b.state(key).unwrap();
    assert!(
        holder.leader().is_some(),
        "the release was lost: still taken"
    );
    proxy.heal();
    proxy.reset();
    let took = taken_by_b_within(&b, key, FREE_AGAIN, Instant::now());
    eprintln!(
        "{}, async: free again {took:?} after the partition healed",
        server.kind
    );
}

macro_rules! on_every_server {
    ($($kind:ident),*) => {
        $(
            mod $kind {
                #[test]
                fn an_orphan_applied_at_the_thaw_is_released_soon_after_blocking() {
                    super::released_soon_after_a_thaw_blocking(stringify!($kind));
                }
                #[test]
                fn an_orphan_applied_at_the_thaw_is_released_soon_after_async() {
                    super::released_soon_after_a_thaw_async(stringify!($kind));
                }
                #[test]
                fn a_release_lost_after_the_action_goes_on_until_it_lands_blocking() {
                    super::released_after_a_lost_release_blocking(stringify!($kind));
                }
                #[test]
                fn a_release_lost_after_the_action_goes_on_until_it_lands_async() {
                    super::released_after_a_lost_release_async(stringify!($kind));
                }
            }
        )*
    };
}

on_every_server!(redis, postgres, mongodb, etcd);

/// Three calls time out against a frozen Redis: their orphans' releases hang, each up to
/// the response timeout, again and again. Then one call times out against a paused
/// PostgreSQL, which goes on at once: its orphan is released within a moment, whatever
/// the Redis releases are doing.
fn with_postgres_and_redis(call: impl FnOnce(&PostgresServer, &RedisServer)) {
    let Some(postgres) = fixtures::require("postgres", PostgresServer::start()) else {
        return;
    };
    let Some(redis) = fixtures::require("redis", RedisServer::start()) else {
        return;
    };
    call(&postgres, &redis);
}

/// PostgreSQL backends whose calls give up after two seconds.
fn postgres_backend(server: &PostgresServer) -> AnyBackend {
    let config = PostgresConfig::new()
        .with_table("orphan_locks")
        .with_connect_timeout(TIMEOUT)
        .with_operation_timeout(Duration::from_secs(2));
    PostgresBackend::connect_with(&server.url(), config)
        .unwrap()
        .into()
}

fn options_for(node: &str, lease: Duration) -> LeaderElectionOptions {
    options(node).with_lease_time(lease)
}

/// The frozen Redis's locks: their orphans are released for as long as such a lease.
const REDIS_LEASE: Duration = Duration::from_secs(30);

/// The lease of PostgreSQL's lock beside the frozen Redis.
const POSTGRES_LEASE: Duration = Duration::from_secs(20);

/// How soon PostgreSQL's lock is free again must not depend on another backend's releases.
const NOT_HELD_UP: Duration = Duration::from_millis(1500);

fn redis_config() -> RedisConfig {
    RedisConfig::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_response_timeout(Duration::from_secs(2))
}

#[test]
fn an_orphan_release_is_not_held_up_by_another_backends_hanging_releases_blocking() {
    with_postgres_and_redis(|postgres, redis| {
        let stuck_backend: AnyBackend = RedisBackend::connect_with(&redis.url(), redis_config())
            .unwrap()
            .into();
        let stuck = LeaderElector::new(stuck_backend, options_for("a", REDIS_LEASE)).unwrap();
        assert!(stuck.state("warm").unwrap().leader().is_none());
        redis.pause();
        for n in 0..3 {
            let result = stuck.run_if_leader(&format!("frozen-{n}"), || ());
            assert!(
                matches!(&result, Err(err) if err.is_transient()),
                "{result:?}"
            );
        }
        let a = LeaderElector::new(postgres_backend(postgres), options_for("a", POSTGRES_LEASE))
            .unwrap();
        let b = LeaderElector::new(postgres_backend(postgres), options_for("b", POSTGRES_LEASE))
            .unwrap();
        assert!(a.state("job").unwrap().leader().is_none());
        assert!(b.state("job").unwrap().leader().is_none());
        postgres.pause();
        let result = a.run_if_leader("job", || unreachable!("never elected"));
        assert!(
            matches!(&result, Err(err) if err.is_transient()),
            "{result:?}"
        );
        postgres.resume();
        let took = taken_by_b_within(&b, "job", POSTGRES_LEASE, Instant::now());
        eprintln!("postgres beside a frozen redis, blocking: free again {took:?} after the thaw");
        redis.resume();
        assert!(
            took <= NOT_HELD_UP,
            "the lock stayed taken {took:?} after the thaw"
        );
    });
}

#[test]
fn an_orphan_release_is_not_held_up_by_another_backends_hanging_releases_async() {
    with_postgres_and_redis(|postgres, redis| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let stuck_backend: AnyBackend = RedisBackend::connect_with(&redis.url(), redis_config())
            .unwrap()
            .into();
        let stuck = AsyncLeaderElector::new(stuck_backend, options_for("a", REDIS_LEASE)).unwrap();
        let a =
            AsyncLeaderElector::new(postgres_backend(postgres), options_for("a", POSTGRES_LEASE))
                .unwrap();
        let b = LeaderElector::new(postgres_backend(postgres), options_for("b", POSTGRES_LEASE))
            .unwrap();
        assert!(b.state("job").unwrap().leader().is_none());
        runtime.block_on(async {
            assert!(stuck.state("warm").await.unwrap().leader().is_none());
            assert!(a.state("job").await.unwrap().leader().is_none());
            redis.pause();
            for n in 0..3 {
                let result = stuck
                    .run_if_leader(&format!("frozen-{n}"), || async {})
                    .await;
                assert!(
                    matches!(&result, Err(err) if err.is_transient()),
                    "{result:?}"
                );
            }
            postgres.pause();
            let result = a
                .run_if_leader("job", || async { unreachable!("never elected") })
                .await;
            assert!(
                matches!(&result, Err(err) if err.is_transient()),
                "{result:?}"
            );
            postgres.resume();
        });
        let took = taken_by_b_within(&b, "job", POSTGRES_LEASE, Instant::now());
        eprintln!("postgres beside a frozen redis, async: free again {took:?} after the thaw");
        redis.resume();
        assert!(
            took <= NOT_HELD_UP,
            "the lock stayed taken {took:?} after the thaw"
        );
    });
}
