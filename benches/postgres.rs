//! The PostgreSQL backend against a local server, one uncontended acquire + release cycle
//! per iteration:
//!
//! - `postgres/blocking`: the floor (the backend's own acquire and release statements,
//!   prepared, run raw on one connection whose driver runs on a one-worker tokio runtime,
//!   each awaited with `block_on` from the bench thread: what a blocking caller of
//!   tokio-postgres does; the session has the backend's `statement_timeout`, so the server
//!   arms the same timer per statement), the simplest upsert + update for reference, the backend's
//!   `try_acquire` + `release`, and `LeaderElector::run_if_leader` with an empty action;
//! - `postgres/async` (tokio, current thread): the backend's `try_acquire` + `release` and
//!   `AsyncLeaderElector::run_if_leader`;
//! - interleaved (printed, not a criterion group): 2,000 rounds running every case of a
//!   group in turn, rotating the order, so that load from elsewhere hits all cases alike;
//!   each case's median, its ratio to the floor's median and the CPU this process spent
//!   on a cycle (every thread of it), the async floor (the same
//!   two statements awaited on the caller's current-thread runtime), the same two each run
//!   as a task on the connection's runtime (as the backend runs every async call: the
//!   hops between runtimes that design costs), the floor on a session without the
//!   `statement_timeout` (what that timer costs the server), and the goal lines:
//!   `run_if_leader` ÷ its raw statements ≤ 1.05x, blocking and async, each with the
//!   client's CPU per cycle against the raw statements' as its limit (bench and server
//!   pinned to one core, the extra CPU alone makes that ratio), the async one with that
//!   hop too;
//! - handoff (printed): A holds a lock, B waits in a blocking `run_if_leader` and is woken
//!   by the release's `NOTIFY`; the time from A's release being sent to B's action, p50 /
//!   p90 / max over 40 handoffs; beside it the same handoff with raw statements, B
//!   reading the `NOTIFY` on its own connection and sending the acquire statement with no
//!   thread in between (the least a notification can cost), and through the backend's
//!   hops (a one-worker runtime reads the `NOTIFY` and wakes B's thread, whose acquire's
//!   I/O that worker does); the goal line: ours ÷ the hop-free one ≤ 1.1x, with the
//!   hops' own ratio as its limit.
//!
//! The server is one of the bench's own (`leader_rig::fixtures`: `initdb` into a
//! temporary directory). It inherits the bench's CPU affinity, so `taskset` pins both:
//!
//! ```text
//! cargo bench -p leader-benches --bench postgres
//! taskset -c 0 cargo bench -p leader-benches --bench postgres   # bench and server on one core
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::hint::black_box;
use std::sync::mpsc;
use std::task::Poll;
use std::time::{Duration, Instant};

use criterion::Criterion;
use futures_util::StreamExt;
use leader_async::AsyncLeaderElector;
use leader_benches::handoff::{TimedFrom, elector_handoffs, print_handoffs, wait_until_up};
use leader_benches::postgres_floor::Floor;
use leader_benches::{
    Case, LEASE, backend_cycle, backend_cycle_async, client_cpu_limit, elector_cycle,
    elector_cycle_async, goal_with_limit, interleaved_with_cpu, percentile, ratio,
    try_once_options,
};
use leader_blocking::LeaderElector;
use leader_core::{Backend, LockName, OwnerToken};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_rig::fixtures::{self, PostgresServer};
use rand::Rng;
use tokio::runtime::Runtime;
use tokio_postgres::types::Type;
use tokio_postgres::{AsyncMessage, NoTls};

const TABLE: &str = "bench_locks";

struct Setup {
    floor: Floor,
    plain: Floor,
    backend: PostgresBackend,
    key: LockName,
    elector: LeaderElector<PostgresBackend>,
    runtime: Runtime,
    async_key: LockName,
    async_elector: AsyncLeaderElector<PostgresBackend>,
}

impl Setup {
    fn new(url: &str) -> Self {
        let config = || PostgresConfig::new().with_table(TABLE);
        let backend = PostgresBackend::connect_with(url, config()).unwrap();
        // The first call makes the table the floor's statements need.
        let key = LockName::new("bench-backend").unwrap();
        backend_cycle(&backend, &key);
        let elector_backend = PostgresBackend::connect_with(url, config()).unwrap();
        let async_backend = PostgresBackend::connect_with(url, config()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Setup {
            floor: Floor::new(url, TABLE),
            plain: Floor::without_statement_timeout(url, TABLE),
            backend,
            key,
            elector: LeaderElector::new(elector_backend, try_once_options()).unwrap(),
            runtime,
            async_key: LockName::new("bench-backend-async").unwrap(),
            async_elector: AsyncLeaderElector::new(async_backend, try_once_options()).unwrap(),
        }
    }
}

const FLOOR: &str = "floor: the backend's two statements, raw";
const SIMPLE: &str = "simplest INSERT ON CONFLICT + UPDATE, raw";
const BACKEND: &str = "backend: try_acquire + release";
const ELECTOR: &str = "elector: run_if_leader";

fn groups(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("postgres/blocking");
    group.bench_function(FLOOR, |b| b.iter(|| s.floor.cycle()));
    group.bench_function(SIMPLE, |b| b.iter(|| s.floor.simple_cycle()));
    group.bench_function(BACKEND, |b| b.iter(|| backend_cycle(&s.backend, &s.key)));
    group.bench_function(ELECTOR, |b| b.iter(|| elector_cycle(&s.elector)));
    group.finish();
    let mut group = c.benchmark_group("postgres/async");
    group.bench_function(BACKEND, |b| {
        b.to_async(&s.runtime)
            .iter(|| backend_cycle_async(&s.backend, &s.async_key))
    });
    group.bench_function(ELECTOR, |b| {
        b.to_async(&s.runtime)
            .iter(|| elector_cycle_async(&s.async_elector))
    });
    group.finish();
}

/// Every case in turn, `rounds` times; prints the medians and the goal lines of the
/// elector over the floor, blocking and async.
fn interleaved_all(s: &Setup, rounds: usize) {
    let rt = &s.runtime;
    let mut cases: Vec<Case<'_>> = vec![
        (FLOOR, Box::new(|| s.floor.cycle())),
        (SIMPLE, Box::new(|| s.floor.simple_cycle())),
        (BACKEND, Box::new(|| backend_cycle(&s.backend, &s.key))),
        (ELECTOR, Box::new(|| elector_cycle(&s.elector))),
        (
            "async floor: the backend's two statements, raw",
            Box::new(|| rt.block_on(s.floor.cycle_async())),
        ),
        (
            "async backend: try_acquire + release",
            Box::new(|| rt.block_on(backend_cycle_async(&s.backend, &s.async_key))),
        ),
        (
            "async elector: run_if_leader",
            Box::new(|| rt.block_on(elector_cycle_async(&s.async_elector))),
        ),
        (
            "async floor, each statement a task on its runtime",
            Box::new(|| rt.block_on(s.floor.cycle_async_spawned())),
        ),
        (
            "floor without the backend's statement_timeout",
            Box::new(|| s.plain.cycle()),
        ),
    ];
    let measured = interleaved_with_cpu("postgres", rounds, &mut cases);
    if let [
        floor,
        _,
        _,
        elector,
        async_floor,
        _,
        async_elector,
        spawned,
        plain,
    ] = measured.as_slice()
    {
        println!(
            "postgres           async floor ÷ blocking floor: {:.2}x",
            ratio(async_floor.median, floor.median)
        );
        println!(
            "postgres           the backend's statement_timeout (a timer the server arms for \
             each statement): the floor is {:.2}x the floor without it",
            ratio(floor.median, plain.median)
        );
        goal_with_limit(
            "postgres blocking run_if_leader ÷ its raw statements",
            ratio(elector.median, floor.median),
            1.05,
            "x",
            &client_cpu_limit(*elector, *floor),
        );
        goal_with_limit(
            "postgres async run_if_leader ÷ its raw statements",
            ratio(async_elector.median, async_floor.median),
            1.05,
            "x",
            &format!(
                "the same statements, each a task on the connection's runtime as the \
                 backend runs every async call, take {:.2}x the floor, and ours {:.2}x that; {}",
                ratio(spawned.median, async_floor.median),
                ratio(async_elector.median, spawned.median),
                client_cpu_limit(*async_elector, *async_floor)
            ),
        );
    }
}

/// The time from the holder's release being sent to a waiting blocking elector's action
/// starting, sorted: A holds the lock (a backend value of its own), B waits in
/// `run_if_leader` (another, listening on the release channel) and takes over when the
/// `NOTIFY` wakes it.
fn handoff(url: &str, rounds: usize) -> Vec<Duration> {
    let config = || PostgresConfig::new().with_table(TABLE);
    let holder = PostgresBackend::connect_with(url, config()).unwrap();
    let waiter = PostgresBackend::connect_with(url, config()).unwrap();
    // The LISTEN starts with the first waiting elector; start it now and let it come up.
    assert!(waiter.release_events().is_some());
    wait_until_up("the LISTEN", || waiter.is_listening());
    let elector = LeaderElector::new(
        waiter,
        try_once_options().with_wait_time(Duration::from_secs(10)),
    )
    .unwrap();
    elector_handoffs(
        &holder,
        &elector,
        |round| format!("bench-handoff-{round}"),
        rounds,
        20..120,
        TimedFrom::ReleaseSent,
    )
}

/// The channels between the holder of a raw handoff and its waiter B: the lock to wait
/// for, B's answer that it waits, and when B's acquire returned.
struct WaiterEnds {
    go: mpsc::Receiver<String>,
    ready: mpsc::Sender<()>,
    done: mpsc::Sender<Instant>,
}

/// The same handoff with raw statements, sorted: A takes and frees the lock with the
/// backend's own statements on the floor's connection, B has `LISTEN`ed on the release
/// channel and on the `NOTIFY` naming the lock sends the backend's acquire statement.
/// Without `hop`, B reads the notification itself and sends the acquire on a second
/// connection of the same runtime, with no thread in between: the least a notification
/// can cost. With `hop`, the backend's design: B's connections belong to a one-worker
/// runtime, a task on it reads the notifications and wakes B's thread, and B sends its
/// acquire from that thread, its I/O done by the worker.
fn raw_handoff(s: &Setup, url: &str, hop: bool, rounds: usize) -> Vec<Duration> {
    let (go_tx, go) = mpsc::channel::<String>();
    let (ready, ready_rx) = mpsc::channel::<()>();
    let (done, done_rx) = mpsc::channel::<Instant>();
    let ends = WaiterEnds { go, ready, done };
    let url = url.to_owned();
    let waiter = std::thread::spawn(move || {
        if hop {
            woken_waiter(&url, ends);
        } else {
            hop_free_waiter(&url, ends);
        }
    });
    let floor = &s.floor;
    let micros = i64::try_from(LEASE.as_micros()).unwrap();
    let channel = format!("{TABLE}_released");
    let mut handoffs = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let name = format!("bench-raw-handoff-{hop}-{round}");
        let owner = OwnerToken::random().to_string();
        let taken = floor
            .runtime
            .block_on(
                floor
                    .client
                    .query_one(&floor.acquire, &[&name, &owner, &"bench-node", &micros]),
            )
            .unwrap();
        black_box(taken);
        go_tx.send(name.clone()).unwrap();
        ready_rx.recv().unwrap();
        let hold = rand::rng().random_range(20..120);
        std::thread::sleep(Duration::from_millis(hold));
        let released_at = Instant::now();
        let freed = floor
            .runtime
            .block_on(
                floor
                    .client
                    .query_one(&floor.release, &[&name, &owner, &0_i64, &channel]),
            )
            .unwrap();
        black_box(freed);
        let acquired_at = done_rx.recv().unwrap();
        handoffs.push(acquired_at.saturating_duration_since(released_at));
    }
    drop(go_tx);
    waiter.join().unwrap();
    handoffs.sort();
    handoffs
}

/// B of the hop-free raw handoff, on a current-thread runtime of its own: it polls its
/// `LISTEN` connection itself and sends the acquire on a second connection of that
/// runtime.
fn hop_free_waiter(url: &str, ends: WaiterEnds) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let (acquirer, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let (acquire_sql, _) = leader_postgres::raw::statements(TABLE).unwrap();
        let acquire = acquirer
            .prepare_typed(
                &acquire_sql,
                &[Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8],
            )
            .await
            .unwrap();
        let (listener, mut connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        let listen_sql = format!("LISTEN {TABLE}_released");
        let listen = listener.batch_execute(&listen_sql);
        // The LISTEN's answer comes only while the connection is polled.
        let mut listen = std::pin::pin!(listen);
        std::future::poll_fn(|cx| {
            while let Poll::Ready(Some(message)) = messages.poll_next_unpin(cx) {
                message.unwrap();
            }
            listen.as_mut().poll(cx)
        })
        .await
        .unwrap();
        let micros = i64::try_from(LEASE.as_micros()).unwrap();
        while let Ok(name) = ends.go.recv() {
            ends.ready.send(()).unwrap();
            let wanted = format!("{name}\n");
            loop {
                match messages.next().await {
                    Some(Ok(AsyncMessage::Notification(note)))
                        if note.payload().starts_with(&wanted) =>
                    {
                        break;
                    }
                    Some(Ok(_)) => {}
                    other => panic!("the LISTEN connection ended: {other:?}"),
                }
            }
            let owner = OwnerToken::random().to_string();
            let row = acquirer
                .query_one(&acquire, &[&name, &owner, &"bench-waiter", &micros])
                .await
                .unwrap();
            black_box(row);
            ends.done.send(Instant::now()).unwrap();
        }
    });
}

/// B of the raw handoff through the backend's hops: a one-worker runtime owns B's
/// connections, as the backend's runtime owns its sessions and its `LISTEN`; a task on it
/// reads the notifications and hands each to B's thread, which sends the acquire with
/// `block_on`, as a blocking call is driven on its caller's thread. Its session has no
/// `statement_timeout`, as the hop-free waiter's has none: the hops are the one difference.
fn woken_waiter(url: &str, ends: WaiterEnds) {
    let acquirer = Floor::without_statement_timeout(url, TABLE);
    let (note_tx, notes) = mpsc::channel::<String>();
    let listener = acquirer.runtime.block_on(async move {
        let (listener, mut connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                if let AsyncMessage::Notification(note) = message.unwrap()
                    && note_tx.send(note.payload().to_owned()).is_err()
                {
                    break;
                }
            }
        });
        listener
            .batch_execute(&format!("LISTEN {TABLE}_released"))
            .await
            .unwrap();
        listener
    });
    let micros = i64::try_from(LEASE.as_micros()).unwrap();
    while let Ok(name) = ends.go.recv() {
        ends.ready.send(()).unwrap();
        let wanted = format!("{name}\n");
        while !notes.recv().unwrap().starts_with(&wanted) {}
        let owner = OwnerToken::random().to_string();
        let row = acquirer
            .runtime
            .block_on(acquirer.client.query_one(
                &acquirer.acquire,
                &[&name, &owner, &"bench-waiter", &micros],
            ))
            .unwrap();
        black_box(row);
        ends.done.send(Instant::now()).unwrap();
    }
    drop(listener);
}

/// Prints the elector's handoff and the two raw ones, and the goal line.
fn handoffs(s: &Setup, url: &str, rounds: usize) {
    let ours = handoff(url, rounds);
    print_handoffs(
        "postgres/handoff",
        "blocking elector, woken by NOTIFY",
        &ours,
    );
    let hopped = raw_handoff(s, url, true, rounds);
    print_handoffs("postgres/handoff", "raw: a worker wakes B", &hopped);
    let raw = raw_handoff(s, url, false, rounds);
    print_handoffs("postgres/handoff", "raw: B reads the NOTIFY itself", &raw);
    let (ours, hopped, raw) = (
        percentile(&ours, 50),
        percentile(&hopped, 50),
        percentile(&raw, 50),
    );
    // The backend's waiters share one LISTEN per backend, read by the backend's runtime,
    // so a blocking elector pays the thread hops the hop-free baseline does not.
    goal_with_limit(
        "postgres handoff p50 ÷ the hop-free raw handoff",
        ratio(ours, raw),
        1.1,
        "x",
        &format!(
            "the raw handoff through the backend's hops (the NOTIFY read by a runtime's \
             worker, which wakes B's thread; B's statement's I/O on that worker) is {:.2}x \
             the hop-free one, and ours {:.2}x that",
            ratio(hopped, raw),
            ratio(ours, hopped)
        ),
    );
}

fn main() {
    let Some(server) = fixtures::require("postgres", PostgresServer::start()) else {
        return;
    };
    let setup = Setup::new(&server.url());
    let mut criterion = Criterion::default().configure_from_args();
    groups(&mut criterion, &setup);
    criterion.final_summary();
    // `cargo bench -- <filter>` runs only the matching criterion cases; the interleaved
    // comparison (2,000 rounds of every case) runs unfiltered.
    let filtered = leader_benches::name_filter_given();
    if !filtered {
        interleaved_all(&setup, 2000);
        handoffs(&setup, &server.url(), 40);
    }
}
