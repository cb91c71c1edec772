//! The Redis backend against a redis-server of the bench's own (`leader_rig::fixtures`):
//!
//! - `redis/blocking`: one uncontended acquire + release cycle — the floor (two raw
//!   EVALSHA round trips of the same scripts on one connection), the backend's
//!   `try_acquire` + `release`, and `LeaderElector::run_if_leader` with an empty action;
//! - `redis/async` (tokio, current thread): the same three, plus rslock 0.10
//!   (`lock` + `unlock`) on the same server;
//! - interleaved (printed): each group's cycles again, one of each per round in rotating
//!   order (`leader_benches::interleaved_with_cpu`), so a machine whose load drifts during
//!   the run slows all of them alike; medians, the ratio of each to its group's floor, and
//!   the CPU this process spent on a cycle (every thread);
//! - handoff (printed, not a criterion group): node A holds, node B waits in
//!   `run_if_leader`; the time from A's release to B's acquisition, with pub/sub and
//!   with polling only (p50 / p90 / max over 40 handoffs each); and the same handoff done
//!   with raw commands, the baseline of the mechanism itself: A's release script
//!   publishes, a subscriber thread reads the message and wakes B, B sends its acquire
//!   script (as the backend does), or B itself blocks on the subscription (no thread hop,
//!   the least a notification can cost);
//! - `redis/replica_acks`: the backend's blocking acquire + release against a master with
//!   one replica (a second redis-server with `REPLICAOF`), without and with
//!   `with_replica_acks(1, 100ms)` (a `WAIT 1 100` after the acquire script), and the same
//!   two interleaved (printed), with the ratio of their medians in the same run;
//! - server time (printed, and a goal line: ≤ 12 µs): the server's own time per cycle
//!   (`INFO commandstats`) of the blocking and async `run_if_leader`, of the fewest-calls
//!   lock (`redis_floor::fewest_calls_cycle`: a fenced, expiring, notifying lock of seven
//!   script calls, the reference) and of rslock, with each command's share and the calls
//!   the scripts made per cycle: where the scripts' extra work shows;
//! - server time, busy server (printed): the same per cycle while pipelines of 500
//!   cycles keep the server busy, of the backend's scripts, the fewest-calls lock,
//!   rslock's two commands sent raw and two empty scripts (a script's cost before its
//!   calls); steadier from run to run than a cycle sent alone;
//! - the goal lines, each one that is not met with its limit from the same run: for the
//!   server's time, the fewest-calls lock's; for ÷ its raw scripts, the client's CPU per
//!   cycle against the raw scripts' (pinned to one core, the extra CPU alone makes that
//!   ratio); for ÷ rslock, the ratio that the server's extra time per cycle alone sets;
//!   for the handoff, the raw handoff through a subscriber thread (the backend's design)
//!   ÷ the hop-free one.
//!
//! ```text
//! cargo bench -p leader-benches --bench redis
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use leader_async::AsyncLeaderElector;
use leader_benches::handoff::{TimedFrom, elector_handoffs, print_handoffs, wait_until_up};
use leader_benches::redis_floor::{
    empty_scripts_commands, fewest_calls_commands, fewest_calls_cycle, load_scripts, raw_cycle,
    raw_waiter_cycle, rslock_commands,
};
use leader_benches::{
    Case, LEASE, Measured, client_cpu_limit, goal_with_limit, interleaved, interleaved_with_cpu,
    percentile, ratio, redis_command_stats, redis_command_usec, request, try_once_options,
};
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AsyncLockBackend, Backend, LockBackend, LockName, ReleaseRequest,
};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::{self, RedisReplica, RedisServer};
use rand::Rng;

fn blocking(c: &mut Criterion, url: &str) {
    let mut group = c.benchmark_group("redis/blocking");

    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let (acquire, release) = raw_cycle("leader-bench", "floor");
    group.bench_function("floor: 2x raw EVALSHA", |b| {
        b.iter(|| {
            black_box(acquire.query::<redis::Value>(&mut conn).unwrap());
            black_box(release.query::<redis::Value>(&mut conn).unwrap());
        })
    });

    let backend = RedisBackend::connect(url).unwrap();
    let key = LockName::new("bench-backend").unwrap();
    group.bench_function("backend: try_acquire + release", |b| {
        b.iter(|| {
            let AcquireOutcome::Acquired(lease) =
                LockBackend::try_acquire(&backend, request(&key)).unwrap()
            else {
                panic!("uncontended")
            };
            black_box(
                LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO))
                    .unwrap(),
            );
        })
    });

    let elector =
        LeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options()).unwrap();
    group.bench_function("elector: run_if_leader", |b| {
        b.iter(|| {
            black_box(
                elector
                    .run_if_leader(black_box("bench-elector"), || 1u8)
                    .unwrap()
                    .expect("uncontended"),
            )
        })
    });
    group.finish();
}

fn asynchronous(c: &mut Criterion, url: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("redis/async");

    let conn = runtime.block_on(async {
        redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    });
    let (acquire, release) = raw_cycle("leader-bench", "floor-async");
    group.bench_function("floor: 2x raw EVALSHA", |b| {
        b.to_async(&runtime).iter(|| {
            let mut conn = conn.clone();
            let (acquire, release) = (&acquire, &release);
            async move {
                black_box(
                    acquire
                        .query_async::<redis::Value>(&mut conn)
                        .await
                        .unwrap(),
                );
                black_box(
                    release
                        .query_async::<redis::Value>(&mut conn)
                        .await
                        .unwrap(),
                );
            }
        })
    });

    let backend = RedisBackend::connect(url).unwrap();
    let key = LockName::new("bench-backend-async").unwrap();
    group.bench_function("backend: try_acquire + release", |b| {
        b.to_async(&runtime).iter(|| async {
            let AcquireOutcome::Acquired(lease) =
                AsyncLockBackend::try_acquire(&backend, request(&key))
                    .await
                    .unwrap()
            else {
                panic!("uncontended")
            };
            black_box(
                AsyncLockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO))
                    .await
                    .unwrap(),
            );
        })
    });

    let elector =
        AsyncLeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options()).unwrap();
    group.bench_function("elector: run_if_leader", |b| {
        b.to_async(&runtime).iter(|| async {
            black_box(
                elector
                    .run_if_leader(black_box("bench-elector-async"), || async { 1u8 })
                    .await
                    .unwrap()
                    .expect("uncontended"),
            )
        })
    });

    let rslock = rslock::LockManager::new(vec![url.to_owned()]);
    group.bench_function("rslock 0.10: lock + unlock", |b| {
        b.to_async(&runtime).iter(|| async {
            let lock = rslock.lock("bench-rslock", LEASE).await.unwrap();
            rslock.unlock(&lock).await;
            black_box(lock);
        })
    });
    group.finish();
}

/// Time from A's release being sent to B's acquisition, B waiting in `run_if_leader`.
fn handoff(url: &str, notifications: bool, rounds: usize) -> Vec<Duration> {
    let config = RedisConfig::default().with_release_notifications(notifications);
    let holder = RedisBackend::connect_with(url, config.clone()).unwrap();
    let waiter = RedisBackend::connect_with(url, config).unwrap();
    if notifications {
        assert!(waiter.release_events().is_some());
        wait_until_up("the subscription", || waiter.is_subscribed());
    }
    let elector = LeaderElector::new(
        waiter,
        try_once_options().with_wait_time(Duration::from_secs(10)),
    )
    .unwrap();
    elector_handoffs(
        &holder,
        &elector,
        |round| format!("bench-handoff-{notifications}-{round}"),
        rounds,
        20..120,
        TimedFrom::ReleaseSent,
    )
}

/// The handoff with raw commands and the backend's scripts: A holds the lock, B waits for
/// the release message on `leader-bench:released` (the channel the raw release script
/// publishes on), then sends its acquire. With `hop`, a subscriber thread of its own reads
/// the message and wakes B, as the backend's listener thread wakes a waiting elector;
/// without, B itself is blocked on the subscription.
fn raw_handoff(url: &str, hop: bool, rounds: usize) -> Vec<Duration> {
    let client = redis::Client::open(url).unwrap();
    let mut holder = client.get_connection().unwrap();
    let mut waiter = client.get_connection().unwrap();
    let mut subscriber = client.get_connection().unwrap();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe("leader-bench:released").unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let acquired = |reply: Vec<Vec<redis::Value>>| {
        matches!(
            reply.first().and_then(|r| r.first()),
            Some(redis::Value::Int(1))
        )
    };
    let mut handoffs = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let name = format!("raw-handoff-{hop}-{round}");
        let (holder_acquire, holder_release) = raw_cycle("leader-bench", &name);
        let (waiter_acquire, _) = raw_waiter_cycle("leader-bench", &name);
        assert!(acquired(holder_acquire.query(&mut holder).unwrap()));
        // The waiter tries first and finds the lock held, as a waiting elector does: that
        // marks the record, so the release publishes.
        assert!(!acquired(waiter_acquire.query(&mut waiter).unwrap()));
        let (done_tx, done_rx) = mpsc::channel();
        let (wake_tx, wake_rx) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let pubsub = &mut pubsub;
            let waiter = &mut waiter;
            let waiter_acquire = &waiter_acquire;
            let take_over = move |waiter: &mut redis::Connection| {
                assert!(acquired(waiter_acquire.query(waiter).unwrap()));
                done_tx.send(Instant::now()).unwrap();
            };
            if hop {
                scope.spawn(move || {
                    pubsub.get_message().unwrap();
                    wake_tx.send(()).unwrap();
                });
                scope.spawn(move || {
                    wake_rx.recv().unwrap();
                    take_over(waiter);
                });
            } else {
                scope.spawn(move || {
                    pubsub.get_message().unwrap();
                    take_over(waiter);
                });
            }
            let hold = rand::rng().random_range(20..120);
            std::thread::sleep(Duration::from_millis(hold));
            let released_at = Instant::now();
            let _: redis::Value = holder_release.query(&mut holder).unwrap();
            let acquired_at = done_rx.recv().unwrap();
            handoffs.push(acquired_at.saturating_duration_since(released_at));
        });
    }
    handoffs.sort();
    handoffs
}

/// Prints the handoffs with and without pub/sub, and the raw baselines; returns the p50s
/// of ours with pub/sub, of the raw handoff through a subscriber thread and of the
/// hop-free raw handoff (B itself reads the message).
fn handoffs(url: &str) -> (Duration, Duration, Duration) {
    let mut pubsub_p50 = Duration::ZERO;
    let mut hop_p50 = Duration::ZERO;
    let mut hop_free_p50 = Duration::ZERO;
    for (label, notifications) in [("pub/sub", true), ("polling only", false)] {
        let sorted = handoff(url, notifications, 40);
        print_handoffs("redis/handoff", label, &sorted);
        if notifications {
            pubsub_p50 = percentile(&sorted, 50);
        }
    }
    for (label, hop) in [
        ("raw: subscriber wakes B", true),
        ("raw: B reads the message", false),
    ] {
        let sorted = raw_handoff(url, hop, 40);
        print_handoffs("redis/handoff", label, &sorted);
        println!(
            "redis/handoff pub/sub p50 ÷ {label}: {:.2}x",
            ratio(pubsub_p50, percentile(&sorted, 50))
        );
        if hop {
            hop_p50 = percentile(&sorted, 50);
        } else {
            hop_free_p50 = percentile(&sorted, 50);
        }
    }
    (pubsub_p50, hop_p50, hop_free_p50)
}

/// The server's own time for one cycle over `calls` runs of `call`, each `per_call`
/// cycles, from `INFO commandstats`: the time of the commands the client sends (`sent`; a
/// script's time includes the commands it calls), and every command's share, script-called
/// ones included.
fn server_usec_per_cycle(
    url: &str,
    sent: &[&str],
    (calls, per_call): (u32, u32),
    mut call: impl FnMut(),
) -> (f64, String) {
    let mut stats = redis::Client::open(url).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut stats)
        .unwrap();
    (0..calls).for_each(|_| call());
    let per_cycle = |usec: u64| usec as f64 / (f64::from(calls) * f64::from(per_call));
    // The commands the scripts called, per cycle (what a script's time is mostly made of).
    let called: u64 = redis_command_stats(&mut stats)
        .iter()
        .filter(|(command, _)| !sent.contains(&command.as_str()) && command != "config")
        .map(|(_, calls)| calls)
        .sum();
    let mut usec = redis_command_usec(&mut stats);
    usec.retain(|(command, _)| command != "config");
    usec.sort_by_key(|(_, usec)| std::cmp::Reverse(*usec));
    let total = usec
        .iter()
        .filter(|(command, _)| sent.contains(&command.as_str()))
        .map(|&(_, usec)| per_cycle(usec))
        .sum();
    let shares = usec
        .iter()
        .map(|(command, usec)| format!("{command} {:.2}", per_cycle(*usec)))
        .collect::<Vec<_>>()
        .join(", ");
    let shares = format!("{shares}; {:.2} calls in scripts", per_cycle(called));
    (total, shares)
}

/// The server's own time per cycle, in microseconds.
struct ServerTime {
    /// The blocking `run_if_leader`'s.
    ours: f64,
    /// The fewest-calls lock's.
    fewest: f64,
    /// rslock's.
    rslock: f64,
}

/// Prints the server's time per cycle of the blocking elector, the async one, the
/// fewest-calls lock (`leader_benches::redis_floor::fewest_calls_cycle`) and rslock, and
/// returns the blocking elector's, the fewest-calls lock's and rslock's.
fn server_time(url: &str) -> ServerTime {
    const CYCLES: u32 = 5000;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let elector =
        LeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options()).unwrap();
    let aelector =
        AsyncLeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options()).unwrap();
    let rslock = rslock::LockManager::new(vec![url.to_owned()]);
    let (ours, ours_shares) = server_usec_per_cycle(url, &["evalsha"], (CYCLES, 1), || {
        black_box(elector.run_if_leader("bench-server-time", || 1u8).unwrap());
    });
    let (ours_async, _) = server_usec_per_cycle(url, &["evalsha"], (CYCLES, 1), || {
        runtime.block_on(async {
            let ran = aelector.run_if_leader("bench-server-time-async", || async { 1u8 });
            black_box(ran.await.unwrap());
        })
    });
    let (theirs, theirs_shares) =
        server_usec_per_cycle(url, &["set", "evalsha", "eval"], (CYCLES, 1), || {
            runtime.block_on(async {
                let lock = rslock
                    .lock("bench-server-time-rslock", LEASE)
                    .await
                    .unwrap();
                rslock.unlock(&lock).await;
            })
        });
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut fewest = fewest_calls_cycle("leader-bench", "server-time-fewest");
    let (floor, floor_shares) = server_usec_per_cycle(url, &["evalsha"], (CYCLES, 1), || {
        fewest(&mut conn).unwrap()
    });
    println!(
        "redis/server time per cycle: run_if_leader {ours:.2} us, async {ours_async:.2} us, \
         fewest-calls lock {floor:.2} us, rslock {theirs:.2} us (ours ÷ fewest-calls {:.2}x, \
         ours ÷ rslock {:.2}x)",
        ours / floor,
        ours / theirs
    );
    println!("redis/server time per cycle, run_if_leader, us: {ours_shares}");
    println!("redis/server time per cycle, fewest-calls lock, us: {floor_shares}");
    println!("redis/server time per cycle, rslock, us: {theirs_shares}");
    ServerTime {
        ours,
        fewest: floor,
        rslock: theirs,
    }
}

/// Prints the server's time per cycle while it is kept busy: 10 pipelines of 500 cycles
/// each, sent raw, of the backend's two scripts, the fewest-calls lock, rslock's two
/// commands and two empty scripts. A cycle sent alone wakes the server and finds its
/// caches cold, which is what `server_time` measures (a server that serves one cycle at a
/// time); here the server is never idle, as a shared one under load, and the figures
/// vary far less from run to run, so they show the scripts' own cost: what a script's
/// calls cost beyond an empty script's. Returns ours and the fewest-calls lock's.
fn server_time_busy(url: &str) -> (f64, f64) {
    const PIPELINES: u32 = 10;
    const CYCLES: u32 = 500;
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut busy = |label: &str, sent: &[&str], (first, second): (redis::Cmd, redis::Cmd)| {
        let mut pipeline = redis::pipe();
        for _ in 0..CYCLES {
            pipeline.add_command(first.clone()).ignore();
            pipeline.add_command(second.clone()).ignore();
        }
        let (usec, shares) = server_usec_per_cycle(url, sent, (PIPELINES, CYCLES), || {
            let () = pipeline.query(&mut conn).unwrap();
        });
        println!("redis/server time per cycle, busy server, {label}: {usec:.2} us ({shares})");
        usec
    };
    let ours = busy(
        "the backend's scripts",
        &["evalsha"],
        raw_cycle("leader-bench", "server-busy"),
    );
    let fewest = busy(
        "fewest-calls lock",
        &["evalsha"],
        fewest_calls_commands("leader-bench", "server-busy-fewest"),
    );
    let theirs = busy(
        "rslock's commands",
        &["set", "evalsha"],
        rslock_commands("leader-bench-server-busy-rslock"),
    );
    let empty = busy("two empty scripts", &["evalsha"], empty_scripts_commands());
    println!(
        "redis/server time per cycle, busy server: ours ÷ fewest-calls {:.2}x, ÷ rslock \
         {:.2}x; beyond two empty scripts: ours {:.2} us, fewest-calls {:.2} us",
        ours / fewest,
        ours / theirs,
        ours - empty,
        fewest - empty
    );
    (ours, fewest)
}

/// Every variant of each group once per round, interleaved; prints medians and ratios to
/// the group's floor, and returns the medians of the blocking and the async group.
fn paired(url: &str, rounds: usize) -> (Vec<Measured>, Vec<Measured>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let (acquire, release) = raw_cycle("leader-bench", "paired-floor");
    let aconn = runtime.block_on(async {
        redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    });
    let (aacquire, arelease) = raw_cycle("leader-bench", "paired-floor-async");
    let backend = RedisBackend::connect(url).unwrap();
    let key = LockName::new("bench-paired").unwrap();
    let elector =
        LeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options()).unwrap();
    let abackend = RedisBackend::connect(url).unwrap();
    let akey = LockName::new("bench-paired-async").unwrap();
    let aelector =
        AsyncLeaderElector::new(RedisBackend::connect(url).unwrap(), try_once_options()).unwrap();
    let rslock = rslock::LockManager::new(vec![url.to_owned()]);

    let mut blocking: Vec<Case<'_>> = vec![
        (
            "blocking floor: 2x raw EVALSHA",
            Box::new(|| {
                black_box(acquire.query::<redis::Value>(&mut conn).unwrap());
                black_box(release.query::<redis::Value>(&mut conn).unwrap());
            }),
        ),
        (
            "blocking backend: try_acquire + release",
            Box::new(|| {
                let AcquireOutcome::Acquired(lease) =
                    LockBackend::try_acquire(&backend, request(&key)).unwrap()
                else {
                    panic!("uncontended")
                };
                black_box(
                    LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO))
                        .unwrap(),
                );
            }),
        ),
        (
            "blocking elector: run_if_leader",
            Box::new(|| {
                black_box(
                    elector
                        .run_if_leader("bench-paired-elector", || 1u8)
                        .unwrap(),
                );
            }),
        ),
    ];
    let mut asynchronous: Vec<Case<'_>> = vec![
        (
            "async floor: 2x raw EVALSHA",
            Box::new(|| {
                let mut conn = aconn.clone();
                runtime.block_on(async {
                    black_box(
                        aacquire
                            .query_async::<redis::Value>(&mut conn)
                            .await
                            .unwrap(),
                    );
                    black_box(
                        arelease
                            .query_async::<redis::Value>(&mut conn)
                            .await
                            .unwrap(),
                    );
                })
            }),
        ),
        (
            "async backend: try_acquire + release",
            Box::new(|| {
                runtime.block_on(async {
                    let AcquireOutcome::Acquired(lease) =
                        AsyncLockBackend::try_acquire(&abackend, request(&akey))
                            .await
                            .unwrap()
                    else {
                        panic!("uncontended")
                    };
                    black_box(
                        AsyncLockBackend::release(
                            &abackend,
                            ReleaseRequest::new(&lease, Duration::ZERO),
                        )
                        .await
                        .unwrap(),
                    );
                })
            }),
        ),
        (
            "async elector: run_if_leader",
            Box::new(|| {
                runtime.block_on(async {
                    black_box(
                        aelector
                            .run_if_leader("bench-paired-elector-async", || async { 1u8 })
                            .await
                            .unwrap(),
                    );
                })
            }),
        ),
        (
            "rslock 0.10 (async): lock + unlock",
            Box::new(|| {
                runtime.block_on(async {
                    let lock = rslock.lock("bench-paired-rslock", LEASE).await.unwrap();
                    rslock.unlock(&lock).await;
                })
            }),
        ),
    ];
    let blocking = interleaved_with_cpu("redis/blocking", rounds, &mut blocking);
    let asynchronous = interleaved_with_cpu("redis/async", rounds, &mut asynchronous);
    (blocking, asynchronous)
}

/// Acquire + release without and with replica acknowledgement, on a master with one
/// replica of their own (so the other groups' writes are not replicated).
fn replica_acks(c: &mut Criterion, rounds: usize) {
    let Some(master) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let Some(_replica) = fixtures::require("redis-server replica", RedisReplica::start(&master))
    else {
        return;
    };
    let url = master.url();
    let plain = RedisBackend::connect(&url).unwrap();
    let acked = RedisBackend::connect_with(
        &url,
        RedisConfig::default().with_replica_acks(1, Duration::from_millis(100)),
    )
    .unwrap();
    let (plain_key, acked_key) = (
        LockName::new("bench-acks-off").unwrap(),
        LockName::new("bench-acks-on").unwrap(),
    );
    let mut group = c.benchmark_group("redis/replica_acks");
    group.bench_function("try_acquire + release, no acks", |b| {
        b.iter(|| leader_benches::backend_cycle(&plain, &plain_key))
    });
    group.bench_function("try_acquire + release, WAIT 1", |b| {
        b.iter(|| leader_benches::backend_cycle(&acked, &acked_key))
    });
    group.finish();
    let mut cases: Vec<Case<'_>> = vec![
        (
            "try_acquire + release, no acks",
            Box::new(|| leader_benches::backend_cycle(&plain, &plain_key)),
        ),
        (
            "try_acquire + release, WAIT 1",
            Box::new(|| leader_benches::backend_cycle(&acked, &acked_key)),
        ),
    ];
    let medians = interleaved("redis/replica_acks", rounds, &mut cases);
    if let [off, on] = medians.as_slice() {
        println!(
            "redis/replica_acks  with ÷ without acknowledgement: {:.2}x (medians, same run)",
            ratio(*on, *off)
        );
    }
}

fn main() {
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let url = server.url();
    load_scripts(&url).unwrap();
    let mut criterion = Criterion::default().configure_from_args();
    blocking(&mut criterion, &url);
    asynchronous(&mut criterion, &url);
    replica_acks(&mut criterion, 2000);
    criterion.final_summary();
    // `cargo bench -- <filter>` runs only the matching groups; the handoff runs unfiltered.
    let filtered = leader_benches::name_filter_given();
    if !filtered {
        let (blocking, asynchronous) = paired(&url, 3000);
        let (handoff_p50, hop_p50, hop_free_p50) = handoffs(&url);
        let server = server_time(&url);
        let (busy_ours, busy_fewest) = server_time_busy(&url);
        goal_with_limit(
            "redis server time per run_if_leader cycle",
            server.ours,
            12.0,
            " us",
            &format!(
                "the fewest-calls lock (seven script calls; no holder record, minimum lease, \
                 corruption check or groups) costs {:.2} us alone; on a busy server ours \
                 {busy_ours:.2} us, the fewest-calls lock {busy_fewest:.2} us",
                server.fewest
            ),
        );
        // Cases: blocking [floor, backend, elector]; async [floor, backend, elector, rslock].
        let (Some(floor), Some(elector)) = (blocking.first(), blocking.get(2)) else {
            return;
        };
        let (Some(async_floor), Some(async_elector), Some(rslock)) = (
            asynchronous.first(),
            asynchronous.get(2),
            asynchronous.get(3),
        ) else {
            return;
        };
        goal_with_limit(
            "redis blocking run_if_leader ÷ its raw scripts",
            ratio(elector.median, floor.median),
            1.05,
            "x",
            &client_cpu_limit(*elector, *floor),
        );
        goal_with_limit(
            "redis async run_if_leader ÷ its raw scripts",
            ratio(async_elector.median, async_floor.median),
            1.05,
            "x",
            &client_cpu_limit(*async_elector, *async_floor),
        );
        // With a client that cost what rslock's does, ours would still take the server's
        // extra time per cycle on top of rslock's cycle.
        let rslock = rslock.median;
        let server_bound = (rslock.as_secs_f64() * 1e6 + server.ours - server.rslock)
            / (rslock.as_secs_f64() * 1e6);
        let rslock_limit = format!(
            "the server's time per cycle, ours {:.2} us against rslock's {:.2} us, holds ours \
             to {server_bound:.2}x rslock with a client as cheap as rslock's",
            server.ours, server.rslock
        );
        goal_with_limit(
            "redis blocking run_if_leader ÷ rslock",
            ratio(elector.median, rslock),
            1.0,
            "x",
            &rslock_limit,
        );
        goal_with_limit(
            "redis async run_if_leader ÷ rslock",
            ratio(async_elector.median, rslock),
            1.0,
            "x",
            &rslock_limit,
        );
        // The baseline: the same handoff with raw commands, B itself blocked on the
        // subscription (no thread between the message and B's acquire). The backend's
        // waiters share one subscription per backend, read by a thread of its own, so the
        // elector pays one thread hop the baseline does not (the hop's own floor is
        // printed above as "raw: subscriber wakes B").
        goal_with_limit(
            "redis handoff p50 ÷ the hop-free raw handoff",
            ratio(handoff_p50, hop_free_p50),
            1.1,
            "x",
            &format!(
                "the raw handoff through a subscriber thread (the backend's design) is \
                 {:.2}x the hop-free one, and ours {:.2}x that",
                ratio(hop_p50, hop_free_p50),
                ratio(handoff_p50, hop_p50)
            ),
        );
    }
}
