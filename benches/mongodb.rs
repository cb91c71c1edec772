//! The MongoDB backend against a test server of the bench's own (`leader_rig::fixtures`), one
//! uncontended acquire + release cycle per iteration, everything on one driver client:
//!
//! - `mongodb/blocking` (the client on a one-worker multi-thread runtime): the floor (one
//!   raw `findOneAndUpdate` with upsert plus one `updateOne`, in `block_on` on the client's
//!   runtime, as the driver's own sync API does), the backend's `try_acquire` + `release`, and `LeaderElector::run_if_leader`
//!   with an empty action;
//! - `mongodb/async` (tokio, current thread; the client built on that runtime): the same
//!   three, plus distributed-lock-mongo 0.2 (`try_acquire` + `release`) on the same server
//!   (its update uses `$dateAdd`, which needs MongoDB 5.0; should a server refuse it, the
//!   bench prints why and leaves the peer out);
//! - interleaved (printed, not a criterion group): 2,000 rounds running every case of a
//!   group in turn, rotating the order, so that load from elsewhere hits all cases alike;
//!   each case's median and its ratio to the floor's median. The async group also runs
//!   the floor with the backend's write concern (majority, journaled) and the backend's
//!   own two commands sent raw, which split the elector's time over the floor into the
//!   journaled writes, the backend's pipelines and the client's work; a goal line over the
//!   floor or the peer, when it is not met, gives as its limit the backend's own commands
//!   sent raw ÷ that baseline, and the blocking one the client's CPU per cycle (this
//!   process's, every thread) against the floor's.
//!
//! ```text
//! cargo bench -p leader-benches --bench mongodb
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use distributed_lock_core::traits::{DistributedLock, LockHandle};
use distributed_lock_mongo::MongoDistributedLock;
use leader_async::AsyncLeaderElector;
use leader_benches::{
    Case, LEASE, backend_cycle, backend_cycle_async, client_cpu_limit, elector_cycle,
    elector_cycle_async, goal, goal_with_limit, interleaved, interleaved_with_cpu, ratio,
    try_once_options,
};
use leader_blocking::LeaderElector;
use leader_core::{LockName, OwnerToken};
use leader_mongodb::{MongoBackend, MongoConfig};
use leader_rig::fixtures::{self, MongoServer};
use mongodb::bson::{DateTime, Document, doc};
use mongodb::options::{ReturnDocument, UpdateModifications, WriteConcern};
use mongodb::{Client, Collection};
use tokio::runtime::Runtime;

const DATABASE: &str = "leader_bench";
const COLLECTION: &str = "leader_locks";

fn config() -> MongoConfig {
    MongoConfig::new()
        .with_database(DATABASE)
        .with_collection(COLLECTION)
}

/// The floor: the two round trips of a cycle with the simplest updates (no pipeline), the
/// backend's `maxTimeMS`, and majority writes ([`raw_cycle_journaled`]: the backend's own
/// write concern, journaled too).
async fn raw_cycle(collection: &Collection<Document>, id: &str) {
    raw_cycle_with(collection, id, WriteConcern::majority()).await;
}

/// The floor's simple updates with the backend's write concern (majority, journaled).
async fn raw_cycle_journaled(collection: &Collection<Document>, id: &str) {
    raw_cycle_with(collection, id, config().write_concern().clone()).await;
}

async fn raw_cycle_with(collection: &Collection<Document>, id: &str, write_concern: WriteConcern) {
    let owner = OwnerToken::random().to_string();
    let now = SystemTime::now();
    let acquire = doc! { "$set": {
        "owner": &owner,
        "leader_id": "bench-node",
        "acquired_at": DateTime::from_system_time(now),
        "expires_at": DateTime::from_system_time(now + LEASE),
    } };
    let release = doc! { "$set": { "owner": null } };
    send_cycle(
        collection,
        (doc! { "_id": id }, acquire.into()),
        (doc! { "_id": id, "owner": &owner }, release.into()),
        write_concern,
    )
    .await;
}

/// The backend's own two commands, sent raw: its acquire pipeline and its release, with
/// its write concern; what is left between this and the backend is the client's work.
async fn raw_backend_commands(collection: &Collection<Document>, key: &LockName) {
    let owner = OwnerToken::random();
    let (filter, update) = leader_mongodb::raw::acquire_command(key, owner, "bench-node", LEASE);
    let acquire = (filter, update.into());
    let (filter, update) = leader_mongodb::raw::release_command(key, owner, Duration::ZERO);
    let release = (filter, update.into());
    send_cycle(
        collection,
        acquire,
        release,
        config().write_concern().clone(),
    )
    .await;
}

/// One cycle's two commands: a `findOneAndUpdate` (upsert, return the new document, the
/// backend's `maxTimeMS`) and an `updateOne` that must match, each a filter and an update.
async fn send_cycle(
    collection: &Collection<Document>,
    acquire: (Document, UpdateModifications),
    release: (Document, UpdateModifications),
    write_concern: WriteConcern,
) {
    let taken = collection
        .find_one_and_update(acquire.0, acquire.1)
        .upsert(true)
        .return_document(ReturnDocument::After)
        .max_time(config().max_time())
        .write_concern(write_concern.clone())
        .await
        .unwrap();
    black_box(taken);
    let released = collection
        .update_one(release.0, release.1)
        .write_concern(write_concern)
        .await
        .unwrap();
    assert_eq!(released.matched_count, 1);
}

fn collection(client: &Client) -> Collection<Document> {
    client.database(DATABASE).collection(COLLECTION)
}

async fn peer_cycle(peer: &MongoDistributedLock) {
    let handle = peer.try_acquire().await.unwrap().expect("uncontended");
    handle.release().await.unwrap();
}

/// The client on a one-worker multi-thread runtime, and the backend and elector on it.
struct BlockingSetup {
    runtime: Runtime,
    raw: Collection<Document>,
    backend: MongoBackend,
    key: LockName,
    elector: LeaderElector<MongoBackend>,
}

impl BlockingSetup {
    fn new(uri: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = runtime.block_on(Client::with_uri_str(uri)).unwrap();
        let backend = MongoBackend::from_client(client.clone(), config()).unwrap();
        let elector_backend = MongoBackend::from_client(client.clone(), config()).unwrap();
        BlockingSetup {
            raw: collection(&client),
            backend,
            key: LockName::new("bench-backend").unwrap(),
            elector: LeaderElector::new(elector_backend, try_once_options()).unwrap(),
            runtime,
        }
    }

    fn floor(&self) {
        self.runtime.block_on(raw_cycle(&self.raw, "bench-floor"));
    }
}

/// The client on a current-thread runtime, and the backend, elector and peer on it.
struct AsyncSetup {
    runtime: Runtime,
    raw: Collection<Document>,
    backend: MongoBackend,
    key: LockName,
    /// The lock of the raw-commands case.
    commands_key: LockName,
    elector: AsyncLeaderElector<MongoBackend>,
    /// `None` when the server rejects distributed-lock-mongo's update.
    peer: Option<MongoDistributedLock>,
}

impl AsyncSetup {
    fn new(uri: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = runtime.block_on(Client::with_uri_str(uri)).unwrap();
        let backend = MongoBackend::from_client(client.clone(), config()).unwrap();
        let elector_backend = MongoBackend::from_client(client.clone(), config()).unwrap();
        let peer = MongoDistributedLock::new(
            "bench-peer".to_owned(),
            client.database(DATABASE),
            Some("peer_locks".to_owned()),
            None,
        );
        let peer = match runtime.block_on(peer.try_acquire()) {
            Ok(Some(handle)) => {
                runtime.block_on(handle.release()).unwrap();
                Some(peer)
            }
            Ok(None) => {
                println!("mongodb/async distributed-lock-mongo 0.2: left out (lock held)");
                None
            }
            Err(err) => {
                println!(
                    "mongodb/async distributed-lock-mongo 0.2: left out, the server rejects its update: {err}"
                );
                None
            }
        };
        AsyncSetup {
            raw: collection(&client),
            backend,
            key: LockName::new("bench-backend-async").unwrap(),
            commands_key: LockName::new("bench-commands-async").unwrap(),
            elector: AsyncLeaderElector::new(elector_backend, try_once_options()).unwrap(),
            peer,
            runtime,
        }
    }
}

const FLOOR: &str = "floor: raw findOneAndUpdate + updateOne";
const BACKEND: &str = "backend: try_acquire + release";
const ELECTOR: &str = "elector: run_if_leader";
const PEER: &str = "distributed-lock-mongo 0.2: try_acquire + release";
const JOURNALED: &str = "floor with the backend's write concern (j: true)";
const COMMANDS: &str = "the backend's own pipelines, raw";

fn blocking(c: &mut Criterion, setup: &BlockingSetup) {
    let mut group = c.benchmark_group("mongodb/blocking");
    group.bench_function(FLOOR, |b| b.iter(|| setup.floor()));
    group.bench_function(BACKEND, |b| {
        b.iter(|| backend_cycle(&setup.backend, &setup.key))
    });
    group.bench_function(ELECTOR, |b| b.iter(|| elector_cycle(&setup.elector)));
    group.finish();
}

fn asynchronous(c: &mut Criterion, setup: &AsyncSetup) {
    let mut group = c.benchmark_group("mongodb/async");
    group.bench_function(FLOOR, |b| {
        b.to_async(&setup.runtime)
            .iter(|| raw_cycle(&setup.raw, "bench-floor-async"))
    });
    group.bench_function(BACKEND, |b| {
        b.to_async(&setup.runtime)
            .iter(|| backend_cycle_async(&setup.backend, &setup.key))
    });
    group.bench_function(ELECTOR, |b| {
        b.to_async(&setup.runtime)
            .iter(|| elector_cycle_async(&setup.elector))
    });
    if let Some(peer) = &setup.peer {
        group.bench_function(PEER, |b| {
            b.to_async(&setup.runtime).iter(|| peer_cycle(peer))
        });
    }
    group.finish();
}

/// Runs the cases in turn, round after round (rotating the order), so that load from
/// elsewhere on the machine hits them alike; prints each median and its ratio to the first.
/// A named cycle for [`interleaved`].
fn interleaved_all(blocking: &BlockingSetup, asynchronous: &AsyncSetup, rounds: usize) {
    let (b, a) = (blocking, asynchronous);
    let blocking = interleaved_with_cpu(
        "mongodb/blocking",
        rounds,
        &mut [
            (FLOOR, Box::new(|| b.floor())),
            (BACKEND, Box::new(|| backend_cycle(&b.backend, &b.key))),
            (ELECTOR, Box::new(|| elector_cycle(&b.elector))),
        ],
    );
    let rt = &a.runtime;
    let mut cases: Vec<Case<'_>> = vec![
        (
            FLOOR,
            Box::new(|| rt.block_on(raw_cycle(&a.raw, "bench-floor-async"))),
        ),
        (
            BACKEND,
            Box::new(|| rt.block_on(backend_cycle_async(&a.backend, &a.key))),
        ),
        (
            ELECTOR,
            Box::new(|| rt.block_on(elector_cycle_async(&a.elector))),
        ),
        (
            JOURNALED,
            Box::new(|| rt.block_on(raw_cycle_journaled(&a.raw, "bench-floor-journaled"))),
        ),
        (
            COMMANDS,
            Box::new(|| rt.block_on(raw_backend_commands(&a.raw, &a.commands_key))),
        ),
    ];
    if let Some(peer) = &a.peer {
        cases.push((PEER, Box::new(move || rt.block_on(peer_cycle(peer)))));
    }
    let asynchronous = interleaved("mongodb/async", rounds, &mut cases);
    // Cases: [floor, backend, elector] and, in the async group, the journaled floor, the
    // backend's raw commands and the peer when it ran.
    if let (Some(floor), Some(journaled), Some(commands), Some(elector)) = (
        asynchronous.first(),
        asynchronous.get(3),
        asynchronous.get(4),
        asynchronous.get(2),
    ) {
        println!(
            "mongodb/async where the elector's time goes: journaled writes {:.2}x the floor, \
             the backend's pipelines {:.2}x the journaled floor, the elector {:.2}x its raw \
             commands",
            ratio(*journaled, *floor),
            ratio(*commands, *journaled),
            ratio(*elector, *commands),
        );
    }
    // The limit of the goals over a simpler baseline: the backend's own commands, sent raw
    // (measured in the async group, beside the floor and the peer).
    let commands_over =
        |baseline: Option<&Duration>, what: &str| match (baseline, asynchronous.get(4)) {
            (Some(baseline), Some(commands)) => format!(
                "the backend's own commands sent raw (its update pipelines on the server) take \
             {:.2}x {what}",
                ratio(*commands, *baseline)
            ),
            _ => "the backend's own commands did not run".to_owned(),
        };
    if let (Some(floor), Some(elector)) = (blocking.first(), blocking.get(2)) {
        goal_with_limit(
            "mongodb blocking run_if_leader ÷ floor",
            ratio(elector.median, floor.median),
            1.05,
            "x",
            &format!(
                "{}; {}",
                commands_over(asynchronous.first(), "the floor"),
                client_cpu_limit(*elector, *floor)
            ),
        );
    }
    if let (Some(commands), Some(elector)) = (asynchronous.get(4), asynchronous.get(2)) {
        goal(
            "mongodb async run_if_leader ÷ its own commands, raw",
            ratio(*elector, *commands),
            1.05,
            "x",
        );
    }
    if let (Some(floor), Some(elector)) = (asynchronous.first(), asynchronous.get(2)) {
        goal_with_limit(
            "mongodb async run_if_leader ÷ floor",
            ratio(*elector, *floor),
            1.05,
            "x",
            &commands_over(Some(floor), "the floor"),
        );
        match asynchronous.get(5) {
            Some(peer) => {
                goal_with_limit(
                    "mongodb async run_if_leader ÷ distributed-lock-mongo",
                    ratio(*elector, *peer),
                    1.0,
                    "x",
                    &commands_over(Some(peer), "the peer's cycle"),
                );
            }
            None => println!(
                "goal mongodb async run_if_leader ÷ distributed-lock-mongo: not measured (the peer did not run) NOT met"
            ),
        }
    }
}

fn main() {
    let Some(server) = fixtures::require("secantusd-rs", MongoServer::start()) else {
        return;
    };
    // One server, not the one-node replica set it reports: no topology discovery.
    let uri = format!("{}?directConnection=true", server.uri());
    let blocking_setup = BlockingSetup::new(&uri);
    let async_setup = AsyncSetup::new(&uri);
    let mut criterion = Criterion::default().configure_from_args();
    blocking(&mut criterion, &blocking_setup);
    asynchronous(&mut criterion, &async_setup);
    criterion.final_summary();
    // `cargo bench -- <filter>` runs only the matching criterion cases; the interleaved
    // comparison (2,000 rounds of every case) runs unfiltered.
    let filtered = leader_benches::name_filter_given();
    if !filtered {
        interleaved_all(&blocking_setup, &async_setup, 2000);
    }
}
