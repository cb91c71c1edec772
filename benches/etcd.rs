//! The etcd backend against a one-member etcd of the bench's own
//! (`leader_rig::fixtures::EtcdServer`), one uncontended acquire + release cycle per
//! iteration:
//!
//! - `etcd/blocking`: the floor (the calls the backend makes, sent raw on one
//!   `etcd_client::Client` whose connections live on a one-worker tokio runtime, each
//!   awaited with `block_on` from the bench thread, as a blocking caller does: a lease
//!   grant, the backend's acquire transaction, its release transaction, and the lease's
//!   revoke spawned without waiting, as the backend sends it); etcd's own lock API on the
//!   same client, with a lease of its own per cycle (`lease_grant` + `lock` + `unlock`,
//!   and the same background revoke) and with one lease granted once before the run
//!   (`lock` + `unlock` only); the backend's `try_acquire` + `release`; and
//!   `LeaderElector::run_if_leader` with an empty action;
//! - `etcd/async` (tokio, current thread): the same five, the client on that runtime;
//! - interleaved (printed, not a criterion group): 1,000 rounds running every case of a
//!   group in turn, rotating the order (`leader_benches::interleaved`), so load from
//!   elsewhere hits all cases alike; each case's median, its ratio to the floor and to
//!   etcd's lock + unlock with a lease of its own, and the goal lines: `run_if_leader`
//!   ÷ the floor ≤ 1.15x and ÷ etcd's lock with a lease of its own ≤ 1.0x;
//! - handoff (printed): one backend value holds a lock, an elector on a second (its own
//!   client) waits in `run_if_leader`; the time from the holder's `release` returning to
//!   the waiter's action starting, p50 / p90 / max over 100 handoffs, and in round trips
//!   (the median of a single `get` on the floor's client, measured in the same run) and in
//!   writes (a single `put`: the waiter's acquire is two writes, each fsynced). The
//!   holder keeps the lock 300-500 ms first, so the waiter's backoff is at its longest
//!   (250 ms) and only the watch can wake it quickly; beside it the same handoff with raw
//!   calls, A's release revoking its lease in the background as the backend's does, B
//!   watching the holder keys itself and sending the backend's acquire with no thread in
//!   between (the least a notification can cost), and through the backend's hops (a
//!   one-worker runtime reads the watch and wakes B's thread, whose calls' I/O that
//!   worker does); the goal line: ours ÷ the hop-free one ≤ 1.1x, with the hops' own
//!   ratio as its limit;
//! - crash failover (printed): a holder process (this bench binary, started again as a
//!   child) leads a campaign with a 3 s lease, renewed every 250 ms, and is killed with
//!   SIGKILL; the time until a standby campaign in this process (polling every second,
//!   woken by the watch when etcd expires the lease and deletes the keys) leads, over five
//!   rounds, and its ratio to the lease.
//!
//! The floor's background revokes (and those of the lock case with a lease of its own) run
//! on the runtime its client lives on, so their answers are read there while later cycles
//! are measured; the backend's run on its own runtime. The floor is what the backend sends,
//! not a bound it cannot beat: a backend median a few percent below it is that.
//!
//! The server inherits the bench's CPU affinity, so `taskset` pins both:
//!
//! ```text
//! cargo bench -p leader-benches --bench etcd
//! taskset -c 0 cargo bench -p leader-benches --bench etcd   # bench and server on one core
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::Criterion;
use etcd_client::{Client, EventType, LockOptions, WatchFilterType, WatchOptions};
use leader_async::AsyncLeaderElector;
use leader_benches::handoff::{TimedFrom, elector_handoffs, print_handoffs, wait_until_up};
use leader_benches::{
    Case, LEASE, backend_cycle, backend_cycle_async, elector_cycle, elector_cycle_async, goal,
    goal_with_limit, interleaved, percentile, ratio, try_once_options,
};
use leader_blocking::LeaderElector;
use leader_core::{Backend, CampaignConfig, LeaderElectionOptions, LockName, OwnerToken};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures::{self, EtcdServer};
use rand::Rng;
use tokio::runtime::Runtime;

/// The backend's default key prefix: the floor's keys sit beside the backend's.
const PREFIX: &str = "leader";
/// The TTL of every lease the raw cases grant: [`LEASE`] in whole seconds.
const TTL: i64 = LEASE.as_secs() as i64;
/// Set in the environment of the crash case's holder process: the server's URL and the
/// lock's name, `url name`.
const HOLDER_ENV: &str = "LEADER_BENCH_ETCD_HOLDER";
/// The crash case's lease.
const CRASH_LEASE: Duration = Duration::from_secs(3);

fn clock_micros() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since.as_micros()).unwrap()
}

/// The raw calls on one client: the backend's own (the floor) and etcd's lock API.
#[derive(Clone)]
struct Raw {
    client: Client,
    /// The lease the "one lease for the whole run" lock case locks with.
    shared_lease: i64,
}

impl Raw {
    async fn connect(endpoint: &str) -> Self {
        let mut client = Client::connect([endpoint], None).await.unwrap();
        let shared_lease = client.lease_grant(3600, None).await.unwrap().id();
        Raw {
            client,
            shared_lease,
        }
    }

    /// The backend's cycle, raw: lease grant, acquire transaction, release transaction,
    /// and the lease's revoke spawned without waiting for it.
    async fn floor(&self, name: &str) {
        let mut client = self.client.clone();
        let owner = OwnerToken::random();
        let lease = client.lease_grant(TTL, None).await.unwrap().id();
        let txn = leader_etcd::raw::acquire_txn(
            PREFIX,
            name,
            owner,
            "bench-node",
            lease,
            clock_micros(),
            LEASE,
        );
        black_box(client.txn(txn).await.unwrap());
        let txn = leader_etcd::raw::release_txn(PREFIX, name, owner);
        let freed = client.txn(txn).await.unwrap();
        assert!(freed.succeeded(), "the floor's acquire took the lock");
        let mut revoker = self.client.clone();
        tokio::spawn(async move { black_box(revoker.lease_revoke(lease).await.unwrap()) });
    }

    /// etcd's lock API with a lease of its own, revoked in the background as the
    /// backend's is.
    async fn lock_own_lease(&self, name: &str) {
        let mut client = self.client.clone();
        let lease = client.lease_grant(TTL, None).await.unwrap().id();
        let options = LockOptions::new().with_lease(lease);
        let locked = client.lock(name, Some(options)).await.unwrap();
        black_box(client.unlock(locked.key()).await.unwrap());
        let mut revoker = self.client.clone();
        tokio::spawn(async move { black_box(revoker.lease_revoke(lease).await.unwrap()) });
    }

    /// etcd's lock API on the lease granted once for the run.
    async fn lock_shared_lease(&self, name: &str) {
        let mut client = self.client.clone();
        let options = LockOptions::new().with_lease(self.shared_lease);
        let locked = client.lock(name, Some(options)).await.unwrap();
        black_box(client.unlock(locked.key()).await.unwrap());
    }

    /// One linearizable read: the raw round trip.
    async fn get(&self) {
        let mut client = self.client.clone();
        black_box(client.get("bench-round-trip", None).await.unwrap());
    }

    /// One write (through raft, fsynced before the answer): what each of the waiter's
    /// two calls (lease grant, transaction) costs at least.
    async fn put(&self) {
        let mut client = self.client.clone();
        black_box(client.put("bench-round-trip", "x", None).await.unwrap());
    }
}

/// The blocking floor: [`Raw`]'s calls each awaited with `block_on` on a one-worker
/// runtime, where the client's connections and the background revokes run.
struct BlockingRaw {
    runtime: Runtime,
    raw: Raw,
}

impl BlockingRaw {
    fn new(endpoint: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let raw = runtime.block_on(Raw::connect(endpoint));
        BlockingRaw { runtime, raw }
    }

    /// The floor, each of its three calls `block_on`-ed on its own.
    fn floor(&self) {
        let rt = &self.runtime;
        let mut client = self.raw.client.clone();
        let owner = OwnerToken::random();
        let lease = rt.block_on(client.lease_grant(TTL, None)).unwrap().id();
        let txn = leader_etcd::raw::acquire_txn(
            PREFIX,
            "bench-floor",
            owner,
            "bench-node",
            lease,
            clock_micros(),
            LEASE,
        );
        black_box(rt.block_on(client.txn(txn)).unwrap());
        let txn = leader_etcd::raw::release_txn(PREFIX, "bench-floor", owner);
        let freed = rt.block_on(client.txn(txn)).unwrap();
        assert!(freed.succeeded(), "the floor's acquire took the lock");
        let mut revoker = client;
        rt.spawn(async move { black_box(revoker.lease_revoke(lease).await.unwrap()) });
    }

    fn lock_own_lease(&self) {
        let rt = &self.runtime;
        let mut client = self.raw.client.clone();
        let lease = rt.block_on(client.lease_grant(TTL, None)).unwrap().id();
        let options = LockOptions::new().with_lease(lease);
        let locked = rt
            .block_on(client.lock("bench-lock-own", Some(options)))
            .unwrap();
        black_box(rt.block_on(client.unlock(locked.key())).unwrap());
        let mut revoker = client;
        rt.spawn(async move { black_box(revoker.lease_revoke(lease).await.unwrap()) });
    }

    fn lock_shared_lease(&self) {
        let rt = &self.runtime;
        let mut client = self.raw.client.clone();
        let options = LockOptions::new().with_lease(self.raw.shared_lease);
        let locked = rt
            .block_on(client.lock("bench-lock-shared", Some(options)))
            .unwrap();
        black_box(rt.block_on(client.unlock(locked.key())).unwrap());
    }

    fn get(&self) {
        self.runtime.block_on(self.raw.get());
    }

    fn put(&self) {
        self.runtime.block_on(self.raw.put());
    }
}

struct Setup {
    blocking: BlockingRaw,
    backend: EtcdBackend,
    key: LockName,
    elector: LeaderElector<EtcdBackend>,
    runtime: Runtime,
    raw: Raw,
    async_key: LockName,
    async_elector: AsyncLeaderElector<EtcdBackend>,
}

impl Setup {
    fn new(server: &EtcdServer) -> Self {
        let url = server.url();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let raw = runtime.block_on(Raw::connect(&server.endpoint()));
        let connect = || EtcdBackend::connect(&url).unwrap();
        Setup {
            blocking: BlockingRaw::new(&server.endpoint()),
            backend: connect(),
            key: LockName::new("bench-backend").unwrap(),
            elector: LeaderElector::new(connect(), try_once_options()).unwrap(),
            runtime,
            raw,
            async_key: LockName::new("bench-backend-async").unwrap(),
            async_elector: AsyncLeaderElector::new(connect(), try_once_options()).unwrap(),
        }
    }
}

const FLOOR: &str = "floor: grant + acquire txn + release txn, raw";
const LOCK_OWN: &str = "etcd Lock API: lease_grant + lock + unlock";
const LOCK_SHARED: &str = "etcd Lock API, one lease for the run: lock + unlock";
const BACKEND: &str = "backend: try_acquire + release";
const ELECTOR: &str = "elector: run_if_leader";

fn groups(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("etcd/blocking");
    group.bench_function(FLOOR, |b| b.iter(|| s.blocking.floor()));
    group.bench_function(LOCK_OWN, |b| b.iter(|| s.blocking.lock_own_lease()));
    group.bench_function(LOCK_SHARED, |b| b.iter(|| s.blocking.lock_shared_lease()));
    group.bench_function(BACKEND, |b| b.iter(|| backend_cycle(&s.backend, &s.key)));
    group.bench_function(ELECTOR, |b| b.iter(|| elector_cycle(&s.elector)));
    group.finish();

    let mut group = c.benchmark_group("etcd/async");
    let rt = &s.runtime;
    group.bench_function(FLOOR, |b| {
        b.to_async(rt).iter(|| s.raw.floor("bench-floor-async"))
    });
    group.bench_function(LOCK_OWN, |b| {
        b.to_async(rt)
            .iter(|| s.raw.lock_own_lease("bench-lock-own-async"))
    });
    group.bench_function(LOCK_SHARED, |b| {
        b.to_async(rt)
            .iter(|| s.raw.lock_shared_lease("bench-lock-shared-async"))
    });
    group.bench_function(BACKEND, |b| {
        b.to_async(rt)
            .iter(|| backend_cycle_async(&s.backend, &s.async_key))
    });
    group.bench_function(ELECTOR, |b| {
        b.to_async(rt)
            .iter(|| elector_cycle_async(&s.async_elector))
    });
    group.finish();
}

/// Prints each case's median over etcd's lock + unlock with a lease of its own (the
/// second case).
fn versus_lock(group: &str, cases: &[Case<'_>], medians: &[Duration]) {
    let Some(&lock) = medians.get(1) else { return };
    for ((label, _), median) in cases.iter().zip(medians) {
        let versus = ratio(*median, lock);
        println!("{group:<18} {label:<52} {versus:.2}x etcd lease_grant + lock + unlock");
    }
}

fn interleaved_all(s: &Setup, rounds: usize) {
    let mut cases: Vec<Case<'_>> = vec![
        (FLOOR, Box::new(|| s.blocking.floor())),
        (LOCK_OWN, Box::new(|| s.blocking.lock_own_lease())),
        (LOCK_SHARED, Box::new(|| s.blocking.lock_shared_lease())),
        (BACKEND, Box::new(|| backend_cycle(&s.backend, &s.key))),
        (ELECTOR, Box::new(|| elector_cycle(&s.elector))),
    ];
    let medians = interleaved("etcd/blocking", rounds, &mut cases);
    versus_lock("etcd/blocking", &cases, &medians);
    goals("etcd blocking", &medians);

    let rt = &s.runtime;
    let mut cases: Vec<Case<'_>> = vec![
        (
            FLOOR,
            Box::new(|| rt.block_on(s.raw.floor("bench-floor-async"))),
        ),
        (
            LOCK_OWN,
            Box::new(|| rt.block_on(s.raw.lock_own_lease("bench-lock-own-async"))),
        ),
        (
            LOCK_SHARED,
            Box::new(|| rt.block_on(s.raw.lock_shared_lease("bench-lock-shared-async"))),
        ),
        (
            BACKEND,
            Box::new(|| rt.block_on(backend_cycle_async(&s.backend, &s.async_key))),
        ),
        (
            ELECTOR,
            Box::new(|| rt.block_on(elector_cycle_async(&s.async_elector))),
        ),
    ];
    let medians = interleaved("etcd/async", rounds, &mut cases);
    versus_lock("etcd/async", &cases, &medians);
    goals("etcd async", &medians);
}

/// The goal lines of one group's medians (in the cases' order: floor, etcd's lock with a
/// lease of its own, with a shared lease, the backend, the elector): `run_if_leader`
/// within 1.15x the raw transactions it sends, and no slower than etcd's own lock API
/// doing the same job (a lease of its own per cycle, as each of the elector's acquisitions
/// has).
fn goals(group: &str, medians: &[Duration]) {
    let (Some(floor), Some(lock), Some(elector)) =
        (medians.first(), medians.get(1), medians.get(4))
    else {
        return;
    };
    goal(
        &format!("{group} run_if_leader ÷ raw Txn floor"),
        ratio(*elector, *floor),
        1.15,
        "x",
    );
    goal(
        &format!("{group} run_if_leader ÷ etcd lease_grant + lock + unlock"),
        ratio(*elector, *lock),
        1.0,
        "x",
    );
}

/// The time from the holder's release returning to the waiter's action starting, sorted.
/// The holder keeps the lock long enough for the waiter's backoff to reach its longest
/// delay.
fn handoff(url: &str, rounds: usize) -> Vec<Duration> {
    let holder = EtcdBackend::connect(url).unwrap();
    let waiter = EtcdBackend::connect(url).unwrap();
    // The watch starts with the first waiting elector; start it now and let it come up,
    // so that the first handoff is not the one that waits for it.
    assert!(waiter.release_events().is_some());
    wait_until_up("the release watch", || waiter.is_listening());
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
        300..500,
        TimedFrom::ReleaseReturned,
    )
}

/// The channels between the holder of a raw handoff and its waiter B: the lock to wait
/// for, B's answer that it waits, and when B's acquire returned.
struct WaiterEnds {
    go: mpsc::Receiver<String>,
    ready: mpsc::Sender<()>,
    done: mpsc::Sender<Instant>,
}

/// The same handoff with raw calls, sorted: A takes and frees the lock with the backend's
/// own transactions on the blocking floor's client, and revokes the freed lease in the
/// background as the backend's release does; B watches the holder keys as the backend
/// does (deletions, with the previous value) and on the deletion of the lock's holder key
/// sends the backend's acquire (lease grant, then the acquire transaction). Without
/// `hop`, B reads the watch itself on a current-thread runtime of its own, with no thread
/// between the watch event and its acquire: the least a notification can cost. With
/// `hop`, the backend's design: B's client belongs to a one-worker runtime, a task on it
/// reads the watch and wakes B's thread, and B sends its acquire from that thread, its
/// I/O done by the worker.
fn raw_handoff(s: &Setup, endpoint: &str, hop: bool, rounds: usize) -> Vec<Duration> {
    let (go_tx, go) = mpsc::channel::<String>();
    let (ready, ready_rx) = mpsc::channel::<()>();
    let (done, done_rx) = mpsc::channel::<Instant>();
    let ends = WaiterEnds { go, ready, done };
    let endpoint = endpoint.to_owned();
    let waiter = std::thread::spawn(move || {
        if hop {
            woken_waiter(&endpoint, ends);
        } else {
            hop_free_waiter(&endpoint, ends);
        }
    });
    let rt = &s.blocking.runtime;
    let mut client = s.blocking.raw.client.clone();
    let mut handoffs = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let name = format!("bench-raw-handoff-{hop}-{round}");
        let owner = OwnerToken::random();
        let lease = rt.block_on(client.lease_grant(TTL, None)).unwrap().id();
        let txn = leader_etcd::raw::acquire_txn(
            PREFIX,
            &name,
            owner,
            "bench-node",
            lease,
            clock_micros(),
            LEASE,
        );
        assert!(rt.block_on(client.txn(txn)).unwrap().succeeded());
        go_tx.send(name.clone()).unwrap();
        ready_rx.recv().unwrap();
        let hold = rand::rng().random_range(20..120);
        std::thread::sleep(Duration::from_millis(hold));
        let txn = leader_etcd::raw::release_txn(PREFIX, &name, owner);
        assert!(rt.block_on(client.txn(txn)).unwrap().succeeded());
        // The backend's release revokes the freed lease in the background: a write the
        // waiter's acquire meets at the server, so the baseline sends it too.
        let mut revoker = client.clone();
        rt.spawn(async move { black_box(revoker.lease_revoke(lease).await.unwrap()) });
        let released_at = Instant::now();
        let acquired_at = done_rx.recv().unwrap();
        handoffs.push(acquired_at.saturating_duration_since(released_at));
    }
    drop(go_tx);
    waiter.join().unwrap();
    handoffs.sort();
    handoffs
}

/// A watch of the holder keys' deletions, with the previous value, as the backend's.
async fn watch_releases(client: &mut Client) -> etcd_client::WatchStream {
    let options = WatchOptions::new()
        .with_prefix()
        .with_prev_key()
        .with_filters([WatchFilterType::NoPut]);
    client
        .watch_client()
        .watch(format!("{PREFIX}/holder/"), Some(options))
        .await
        .unwrap()
}

/// The backend's acquire of `name` for B: a lease grant, then the acquire transaction.
async fn waiter_acquire(client: &mut Client, name: &str) {
    let owner = OwnerToken::random();
    let lease = client.lease_grant(TTL, None).await.unwrap().id();
    let txn = leader_etcd::raw::acquire_txn(
        PREFIX,
        name,
        owner,
        "bench-waiter",
        lease,
        clock_micros(),
        LEASE,
    );
    let taken = client.txn(txn).await.unwrap();
    assert!(taken.succeeded(), "B found the lock free");
}

/// B of the hop-free raw handoff, on a current-thread runtime of its own: it reads the
/// watch itself and sends the acquire on that runtime's client.
fn hop_free_waiter(endpoint: &str, ends: WaiterEnds) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let mut client = Client::connect([endpoint], None).await.unwrap();
        let mut stream = watch_releases(&mut client).await;
        while let Ok(name) = ends.go.recv() {
            ends.ready.send(()).unwrap();
            let holder_key = format!("{PREFIX}/holder/{name}");
            'released: loop {
                let response = stream.message().await.unwrap().expect("the watch ended");
                for event in response.events() {
                    let deleted = event.event_type() == EventType::Delete
                        && event
                            .kv()
                            .is_some_and(|kv| kv.key() == holder_key.as_bytes());
                    if deleted {
                        break 'released;
                    }
                }
            }
            waiter_acquire(&mut client, &name).await;
            ends.done.send(Instant::now()).unwrap();
        }
    });
}

/// B of the raw handoff through the backend's hops: a one-worker runtime owns B's client,
/// as the backend's runtime owns its connection and its watch; a task on it reads the
/// watch and hands each deleted holder key to B's thread, which sends the acquire with
/// `block_on`, as a blocking call is driven on its caller's thread.
fn woken_waiter(endpoint: &str, ends: WaiterEnds) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (key_tx, deleted_keys) = mpsc::channel::<Vec<u8>>();
    let client = runtime.block_on(async move {
        let mut client = Client::connect([endpoint], None).await.unwrap();
        let mut stream = watch_releases(&mut client).await;
        tokio::spawn(async move {
            while let Some(response) = stream.message().await.unwrap() {
                for event in response.events() {
                    if event.event_type() == EventType::Delete {
                        let key = event.kv().map(|kv| kv.key().to_vec()).unwrap_or_default();
                        if key_tx.send(key).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        client
    });
    while let Ok(name) = ends.go.recv() {
        ends.ready.send(()).unwrap();
        let holder_key = format!("{PREFIX}/holder/{name}");
        while deleted_keys.recv().unwrap() != holder_key.as_bytes() {}
        let mut client = client.clone();
        runtime.block_on(async move { waiter_acquire(&mut client, &name).await });
        ends.done.send(Instant::now()).unwrap();
    }
}

fn print_handoff(s: &Setup, url: &str, endpoint: &str, rounds: usize) {
    let handoffs = handoff(url, rounds);
    let hopped = raw_handoff(s, endpoint, true, rounds);
    let raw = raw_handoff(s, endpoint, false, rounds);
    let median_of = |call: &dyn Fn()| {
        let mut trips: Vec<Duration> = (0..200)
            .map(|_| {
                let started = Instant::now();
                call();
                started.elapsed()
            })
            .collect();
        trips.sort();
        percentile(&trips, 50)
    };
    let read = median_of(&|| s.blocking.get());
    let write = median_of(&|| s.blocking.put());
    let (p50, p90) = (percentile(&handoffs, 50), percentile(&handoffs, 90));
    print_handoffs(
        "etcd handoff      ",
        "release returned -> waiter's action",
        &handoffs,
    );
    println!(
        "etcd handoff       raw round trip (one get, median of 200) {read:.3?}: \
         p50 {:.2} round trips, p90 {:.2}",
        ratio(p50, read),
        ratio(p90, read)
    );
    println!(
        "etcd handoff       raw write (one put, median of 200) {write:.3?}: \
         p50 {:.2} writes, p90 {:.2} (the waiter's acquire is two writes)",
        ratio(p50, write),
        ratio(p90, write)
    );
    print_handoffs("etcd handoff      ", "raw: a worker wakes B", &hopped);
    print_handoffs("etcd handoff      ", "raw: B reads the watch itself", &raw);
    let (hopped_p50, raw_p50) = (percentile(&hopped, 50), percentile(&raw, 50));
    // The backend's waiters share one watch per backend, read on the backend's runtime,
    // so a blocking elector pays the thread hops the hop-free baseline does not.
    goal_with_limit(
        "etcd handoff p50 ÷ the hop-free raw handoff",
        ratio(p50, raw_p50),
        1.1,
        "x",
        &format!(
            "the raw handoff through the backend's hops (the watch read by a runtime's \
             worker, which wakes B's thread; B's calls' I/O on that worker) is {:.2}x the \
             hop-free one, and ours {:.2}x that; the waiter's acquire is two fsynced \
             writes, whose time moves from run to run",
            ratio(hopped_p50, raw_p50),
            ratio(p50, hopped_p50)
        ),
    );
}

fn campaign_config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(CRASH_LEASE)
        .with_heartbeat(Duration::from_millis(250))
        .with_poll_interval(Duration::from_secs(1))
}

/// The crash case's holder process: leads `name`, says so on stdout, and runs until it is
/// killed.
fn hold_until_killed(spec: &str) -> ! {
    let (url, name) = spec.split_once(' ').expect("`url name`");
    let elector = LeaderElector::new(
        EtcdBackend::connect(url).unwrap(),
        LeaderElectionOptions::default().with_node_id("crash-holder"),
    )
    .unwrap();
    let handle = elector.campaign(name, campaign_config()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !handle.is_leader() {
        assert!(Instant::now() < deadline, "the holder never led");
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("leading");
    loop {
        std::thread::park();
    }
}

/// One crash: a child process leads `name`, a standby here has seen it lead; the child is
/// killed with SIGKILL; the time from the kill until the standby leads.
fn crash_round(url: &str, round: usize) -> Duration {
    let name = format!("bench-crash-{round}-{}", std::process::id());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(HOLDER_ENV, format!("{url} {name}"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "leading", "the holder process led");
    let elector = LeaderElector::new(
        EtcdBackend::connect(url).unwrap(),
        LeaderElectionOptions::default().with_node_id("crash-standby"),
    )
    .unwrap();
    let standby = elector.campaign(&name, campaign_config()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while standby.current_leader().as_deref() != Some("crash-holder") {
        assert!(
            Instant::now() < deadline,
            "the standby never saw the holder"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // A heartbeat or two, so the kill falls anywhere in the holder's renewal cycle.
    let settle = rand::rng().random_range(300..800);
    std::thread::sleep(Duration::from_millis(settle));
    child.kill().unwrap();
    let killed_at = Instant::now();
    child.wait().unwrap();
    while !standby.is_leader() {
        assert!(
            killed_at.elapsed() < Duration::from_secs(30),
            "no takeover within 30 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let took = killed_at.elapsed();
    standby.resign();
    took
}

fn print_crash(url: &str, rounds: usize) {
    let mut takeovers: Vec<Duration> = (0..rounds).map(|round| crash_round(url, round)).collect();
    takeovers.sort();
    let lease = CRASH_LEASE.as_secs_f64();
    let shown: Vec<String> = takeovers
        .iter()
        .map(|took| format!("{:.2}", took.as_secs_f64() / lease))
        .collect();
    let (p50, max) = (
        percentile(&takeovers, 50),
        takeovers.last().copied().unwrap_or_default(),
    );
    println!(
        "etcd crash         SIGKILL -> standby leads (lease {CRASH_LEASE:?}, heartbeat 250 ms, \
         poll 1 s; {rounds} rounds): p50 {p50:.3?} = {:.2}x lease, max {max:.3?} = {:.2}x lease \
         (each: {})",
        p50.as_secs_f64() / lease,
        max.as_secs_f64() / lease,
        shown.join(", ")
    );
}

fn main() {
    if let Ok(spec) = std::env::var(HOLDER_ENV) {
        hold_until_killed(&spec);
    }
    let Some(server) = fixtures::require("etcd", EtcdServer::start()) else {
        return;
    };
    let setup = Setup::new(&server);
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    groups(&mut criterion, &setup);
    criterion.final_summary();
    // `cargo bench -- <filter>` runs only the matching criterion cases; the interleaved
    // comparison, the handoff and the crash rounds run unfiltered.
    if !leader_benches::name_filter_given() {
        interleaved_all(&setup, 1000);
        print_handoff(&setup, &server.url(), &server.endpoint(), 100);
        print_crash(&server.url(), 5);
    }
}
