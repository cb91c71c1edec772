//! How soon an observer sees a release on Redis, where the backend pushes releases
//! (pub/sub), against the server's round trip measured in the same run.
//!
//! - `observe/redis`: the round trip (`PING` on one connection), and the read an observer
//!   makes per change (`state` of the lock);
//! - release seen (printed, not a criterion group): node B holds the lock; an observer on
//!   its own thread, polling once a minute so that only the notification can wake it,
//!   waits; B releases. Over `ROUNDS` releases: the time from the release's reply to the
//!   observer's `Released` change (p50 / p90 / max), the same from before the release was
//!   sent, and beside them the raw mechanism: a `PUBLISH` read back on a subscribed
//!   connection (the least a notification can cost), and the same message handed by the
//!   subscribing thread to a waiting one, from the `PUBLISH`'s reply (the least a
//!   subscription shared by a backend's waiters can cost: one thread hop, timed as the
//!   goal line is). The goal line is the first p50 in round trips: the
//!   notification's one-way trip and the observer's thread waking. The message names the
//!   ended lease's fencing token, so the observer hands the release over without reading
//!   the lock (it read once more per release before: 3.0 round trips unpinned, 7.0
//!   pinned).
//!
//! ```text
//! cargo bench -p leader-benches --bench observe
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use leader_benches::{goal_with_limit, percentile, ratio};
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, ChangeKind, LeaderElectionOptions, LockBackend, LockName,
    OwnerToken, ReleaseEvents, ReleaseNotice, ReleaseRequest,
};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::fixtures::{self, RedisServer};

const ROUNDS: usize = 200;
const PREFIX: &str = "leader-bench-observe";

fn backend(url: &str, notifications: bool) -> RedisBackend {
    let config = RedisConfig::default()
        .with_key_prefix(PREFIX)
        .with_release_notifications(notifications);
    RedisBackend::connect_with(url, config).unwrap()
}

fn rtt(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

fn criterion_group(c: &mut Criterion, url: &str) {
    let mut con = rtt(url);
    let observing = backend(url, true);
    let key = LockName::new("observe-read").unwrap();
    let mut group = c.benchmark_group("observe/redis");
    group.bench_function("floor: PING round trip", |b| {
        b.iter(|| redis::cmd("PING").query::<String>(&mut con).unwrap());
    });
    group.bench_function("observer read (state)", |b| {
        b.iter(|| LockBackend::state(&observing, &key).unwrap());
    });
    group.finish();
}

/// Sorted round trips of `PING`.
fn pings(url: &str) -> Vec<Duration> {
    let mut con = rtt(url);
    let mut samples: Vec<Duration> = (0..ROUNDS * 5)
        .map(|_| {
            let started = Instant::now();
            redis::cmd("PING").query::<String>(&mut con).unwrap();
            started.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

/// Sorted times from a `PUBLISH`'s send to its message read on a subscribed connection
/// (the same thread: no hop).
fn raw_notifications(url: &str) -> Vec<Duration> {
    let mut publisher = rtt(url);
    let mut subscriber = rtt(url);
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe("bench-observe").unwrap();
    let mut samples: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            redis::cmd("PUBLISH")
                .arg("bench-observe")
                .arg("released")
                .query::<i64>(&mut publisher)
                .unwrap();
            pubsub.get_message().unwrap();
            started.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

/// Sorted times from a `PUBLISH`'s reply to a thread woken by the subscribing thread when
/// the message arrives, through [`ReleaseEvents`] as the backends' subscribers do (the one
/// hop a shared subscription costs), waiting as the observer does: the floor of the goal
/// line's path.
fn raw_handed_over(url: &str) -> Vec<Duration> {
    let mut publisher = rtt(url);
    let (ready_tx, ready) = mpsc::channel::<()>();
    let (woken_tx, woken) = mpsc::channel::<Instant>();
    let events = ReleaseEvents::new();
    let subscriber_url = url.to_owned();
    let notifier = events.clone();
    let subscriber = std::thread::spawn(move || {
        let mut subscriber = rtt(&subscriber_url);
        let mut pubsub = subscriber.as_pubsub();
        pubsub.subscribe("bench-observe-hop").unwrap();
        ready_tx.send(()).unwrap();
        for _ in 0..ROUNDS {
            let message = pubsub.get_message().unwrap();
            notifier.notify_message(&message.get_payload::<String>().unwrap());
        }
    });
    ready.recv().unwrap();
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let listener = events.listen("hop");
        let waiter_tx = woken_tx.clone();
        let waiter = std::thread::spawn(move || {
            assert!(listener.wait_timeout(Duration::from_secs(5)));
            waiter_tx.send(Instant::now()).unwrap();
        });
        std::thread::sleep(Duration::from_millis(5));
        redis::cmd("PUBLISH")
            .arg("bench-observe-hop")
            .arg(ReleaseNotice::message("hop", 1))
            .query::<i64>(&mut publisher)
            .unwrap();
        let replied = Instant::now();
        let at = woken.recv().unwrap();
        waiter.join().unwrap();
        samples.push(at.saturating_duration_since(replied));
    }
    subscriber.join().unwrap();
    samples.sort();
    samples
}

/// Sorted (from the release's reply, from before it was sent) to the observer's change.
fn releases_seen(url: &str) -> (Vec<Duration>, Vec<Duration>) {
    let holder = backend(url, false);
    let elector = LeaderElector::new(backend(url, true), LeaderElectionOptions::default()).unwrap();
    let mut after_reply = Vec::with_capacity(ROUNDS);
    let mut after_send = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS + ROUNDS / 10 {
        let name = format!("observed-{round}");
        let key = LockName::new(name.as_str()).unwrap();
        let request = AcquireRequest::new(&key, OwnerToken::random(), "node-b", LEASE_TIME);
        let Ok(AcquireOutcome::Acquired(lease)) = LockBackend::try_acquire(&holder, request) else {
            panic!("a fresh lock is free");
        };
        let mut changes = elector
            .observe(&name)
            .unwrap()
            .with_poll_interval(Duration::from_secs(60));
        let initial = changes.next().unwrap().unwrap();
        assert_eq!(initial.holder.unwrap().fencing_token, lease.fencing_token);
        let (tx, seen) = mpsc::channel();
        let observer = std::thread::spawn(move || {
            let change = changes.next().unwrap().unwrap();
            tx.send((change.kind, Instant::now())).unwrap();
        });
        // The observer is waiting on its subscription before the release is sent.
        std::thread::sleep(Duration::from_millis(5));
        let sent = Instant::now();
        LockBackend::release(&holder, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
        let replied = Instant::now();
        let (kind, at) = seen.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(kind, ChangeKind::Released);
        observer.join().unwrap();
        if round >= ROUNDS / 10 {
            after_reply.push(at.saturating_duration_since(replied));
            after_send.push(at.duration_since(sent));
        }
    }
    after_reply.sort();
    after_send.sort();
    (after_reply, after_send)
}

const LEASE_TIME: Duration = Duration::from_secs(30);

fn line(label: &str, sorted: &[Duration], round_trip: Duration) {
    let p50 = percentile(sorted, 50);
    println!(
        "observe/redis {label:<44} p50 {p50:>10.3?}  p90 {:>10.3?}  max {:>10.3?}  {:.2} round trips",
        percentile(sorted, 90),
        sorted.last().copied().unwrap_or_default(),
        ratio(p50, round_trip),
    );
}

fn main() {
    let Some(server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let url = server.url();
    let mut c = Criterion::default().configure_from_args();
    criterion_group(&mut c, &url);

    let round_trip = percentile(&pings(&url), 50);
    println!("observe/redis round trip (PING) p50 {round_trip:.3?}");
    let raw = raw_notifications(&url);
    let hop = raw_handed_over(&url);
    let (after_reply, after_send) = releases_seen(&url);
    line("raw: PUBLISH to message read", &raw, round_trip);
    line("raw: PUBLISH replied to a thread woken", &hop, round_trip);
    line("release sent to change seen", &after_send, round_trip);
    line("release replied to change seen", &after_reply, round_trip);
    println!(
        "observe/redis release replied to change seen / the one-hop floor: {:.2}x",
        ratio(percentile(&after_reply, 50), percentile(&hop, 50)),
    );
    goal_with_limit(
        "release seen by an observer after the release's reply, in round trips",
        ratio(percentile(&after_reply, 50), round_trip),
        2.0,
        "x",
        &format!(
            "a PUBLISH handed to a waiting thread (the one hop from a backend's shared \
             subscription) takes {:.2} round trips itself",
            ratio(percentile(&hop, 50), round_trip)
        ),
    );
    c.final_summary();
}
