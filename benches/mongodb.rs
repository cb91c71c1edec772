//! The MongoDB backend against a local test server (`LEADER_TEST_MONGODB_URI`), one
//! uncontended acquire + release cycle per iteration, everything on one driver client:
//!
//! - `mongodb/blocking` (the client on a one-worker multi-thread runtime): the floor (one
//!   raw `findOneAndUpdate` with upsert plus one `updateOne`, in `block_on` on the client's
//!   runtime, as the driver's own sync API does), the backend's `try_acquire` + `release`, and `LeaderElector::run_if_leader`
//!   with an empty action;
//! - `mongodb/async` (tokio, current thread; the client built on that runtime): the same
//!   three, plus distributed-lock-mongo 0.2 (`try_acquire` + `release`) on the same server,
//!   when the server accepts its update (it uses `$dateAdd`, which the secantusd-rs test
//!   server refuses; the bench then prints why and leaves it out).
//!
//! ```text
//! bash scripts/services.sh start /tmp/leader-bench && source /tmp/leader-bench/env
//! cargo bench -p leader-benches --bench mongodb
//! bash scripts/services.sh stop /tmp/leader-bench
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use distributed_lock_core::traits::{DistributedLock, LockHandle};
use distributed_lock_mongo::MongoDistributedLock;
use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, LeaderElectionOptions, LockBackend, LockName,
    OwnerToken,
};
use leader_mongodb::{MongoBackend, MongoConfig};
use mongodb::bson::{DateTime, Document, doc};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::{Client, Collection};

const LEASE: Duration = Duration::from_secs(60);
const DATABASE: &str = "leader_bench";
const COLLECTION: &str = "leader_locks";

fn options() -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_wait_time(Duration::ZERO)
        .with_lease_time(LEASE)
}

fn config() -> MongoConfig {
    MongoConfig::new()
        .with_database(DATABASE)
        .with_collection(COLLECTION)
}

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest {
        key,
        owner: OwnerToken::random(),
        leader_id: "bench-node",
        lease_time: LEASE,
        use_db_time: false,
    }
}

/// The floor: the two round trips of a cycle with the simplest updates (no pipeline), the
/// backend's write concern and `maxTimeMS`.
async fn raw_cycle(collection: &Collection<Document>, id: &str) {
    let owner = OwnerToken::random().to_string();
    let now = SystemTime::now();
    let taken = collection
        .find_one_and_update(
            doc! { "_id": id },
            doc! { "$set": {
                "owner": &owner,
                "leader_id": "bench-node",
                "acquired_at": DateTime::from_system_time(now),
                "expires_at": DateTime::from_system_time(now + LEASE),
            } },
        )
        .upsert(true)
        .return_document(ReturnDocument::After)
        .max_time(config().max_time())
        .write_concern(WriteConcern::majority())
        .await
        .unwrap();
    black_box(taken);
    let released = collection
        .update_one(
            doc! { "_id": id, "owner": &owner },
            doc! { "$set": { "owner": null } },
        )
        .write_concern(WriteConcern::majority())
        .await
        .unwrap();
    assert_eq!(released.matched_count, 1);
}

fn collection(client: &Client) -> Collection<Document> {
    client.database(DATABASE).collection(COLLECTION)
}

fn blocking(c: &mut Criterion, uri: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(Client::with_uri_str(uri)).unwrap();
    let mut group = c.benchmark_group("mongodb/blocking");

    let raw = collection(&client);
    group.bench_function("floor: raw findOneAndUpdate + updateOne", |b| {
        b.iter(|| runtime.block_on(raw_cycle(&raw, "bench-floor")))
    });

    let backend = MongoBackend::from_client(client.clone(), config()).unwrap();
    let key = LockName::new("bench-backend").unwrap();
    group.bench_function("backend: try_acquire + release", |b| {
        b.iter(|| {
            let AcquireOutcome::Acquired(lease) =
                LockBackend::try_acquire(&backend, request(&key)).unwrap()
            else {
                panic!("uncontended")
            };
            black_box(LockBackend::release(&backend, &lease, Duration::ZERO).unwrap());
        })
    });

    let elector_backend = MongoBackend::from_client(client.clone(), config()).unwrap();
    let elector = LeaderElector::new(elector_backend, options()).unwrap();
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
    drop((backend, elector, client));
    runtime.shutdown_background();
}

fn asynchronous(c: &mut Criterion, uri: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(Client::with_uri_str(uri)).unwrap();
    let mut group = c.benchmark_group("mongodb/async");

    let raw = collection(&client);
    group.bench_function("floor: raw findOneAndUpdate + updateOne", |b| {
        b.to_async(&runtime)
            .iter(|| raw_cycle(&raw, "bench-floor-async"))
    });

    let backend = MongoBackend::from_client(client.clone(), config()).unwrap();
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
                AsyncLockBackend::release(&backend, &lease, Duration::ZERO)
                    .await
                    .unwrap(),
            );
        })
    });

    let elector_backend = MongoBackend::from_client(client.clone(), config()).unwrap();
    let elector = AsyncLeaderElector::new(elector_backend, options()).unwrap();
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

    let peer = MongoDistributedLock::new(
        "bench-peer".to_owned(),
        client.database(DATABASE),
        Some("peer_locks".to_owned()),
        None,
    );
    match runtime.block_on(peer.try_acquire()) {
        Ok(Some(handle)) => {
            runtime.block_on(handle.release()).unwrap();
            group.bench_function("distributed-lock-mongo 0.2: try_acquire + release", |b| {
                b.to_async(&runtime).iter(|| async {
                    let handle = peer.try_acquire().await.unwrap().expect("uncontended");
                    handle.release().await.unwrap();
                })
            });
        }
        Ok(None) => println!("mongodb/async distributed-lock-mongo 0.2: skipped (lock held)"),
        Err(err) => println!(
            "mongodb/async distributed-lock-mongo 0.2: skipped, the server rejects its update: {err}"
        ),
    }
    group.finish();
    drop((backend, elector, peer, client));
    runtime.shutdown_background();
}

fn main() {
    let Some(uri) = std::env::var("LEADER_TEST_MONGODB_URI")
        .ok()
        .filter(|uri| !uri.trim().is_empty())
    else {
        println!(
            "skipped: LEADER_TEST_MONGODB_URI is not set (start a server with scripts/services.sh start DIR and source DIR/env)"
        );
        return;
    };
    let mut criterion = Criterion::default().configure_from_args();
    blocking(&mut criterion, &uri);
    asynchronous(&mut criterion, &uri);
    criterion.final_summary();
}
