//! Uncontended `run_if_leader` on the in-memory backend, beside its floor measured in the
//! same run: a bare `parking_lot::Mutex<HashMap<String, _>>` insert plus remove; and the
//! async elector under tokio (current-thread runtime) beside the blocking one. After the
//! criterion group, the three again interleaved (batches of 1,000 cycles, so the clock
//! reads around each sample do not weigh), and the goal lines.
//!
//! The interleaved rounds also time the parts of a run the floor does not do, each alone:
//! the four clock reads of a run (the attempt's send time, the backend's monotonic and wall
//! time, the deadline check when the action returns), the owner token (128 random bits),
//! and the name's validation. They show how much of the goal those leave for the rest,
//! and the goal lines give the floor and those parts together as their limit.
//!
//! ```text
//! cargo bench -p leader-benches --bench memory
//! taskset -c 0 cargo bench -p leader-benches --bench memory
//! ```
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use leader_async::AsyncLeaderElector;
use leader_benches::{Case, goal_with_limit, interleaved, ratio, try_once_options};
use leader_blocking::LeaderElector;
use leader_core::{InMemoryBackend, LockName, OwnerToken};
use parking_lot::Mutex;

/// Cycles per interleaved sample.
const BATCH: usize = 1000;
const NAME: &str = "nightly-report";

fn floor_cycle(map: &Mutex<HashMap<String, u64>>) {
    let name = black_box(NAME);
    map.lock().insert(name.to_owned(), 1);
    black_box(map.lock().remove(name));
}

/// The clock reads of one uncontended run on the system clock.
fn clock_reads() {
    black_box(std::time::Instant::now());
    black_box(std::time::Instant::now());
    black_box(std::time::SystemTime::now());
    black_box(std::time::Instant::now());
}

fn blocking_cycle(elector: &LeaderElector<InMemoryBackend>) {
    black_box(elector.run_if_leader(black_box(NAME), || 1u8).unwrap());
}

async fn async_cycle(elector: &AsyncLeaderElector<InMemoryBackend>) {
    let ran = elector.run_if_leader(black_box(NAME), || async { 1u8 });
    black_box(ran.await.unwrap());
}

fn memory(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory");

    let map: Mutex<HashMap<String, u64>> = Mutex::new(HashMap::new());
    group.bench_function("floor: mutex hashmap insert+remove", |b| {
        b.iter(|| floor_cycle(&map))
    });

    let blocking = LeaderElector::new(InMemoryBackend::new(), try_once_options()).unwrap();
    group.bench_function("blocking run_if_leader", |b| {
        b.iter(|| blocking_cycle(&blocking))
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let asynchronous = AsyncLeaderElector::new(InMemoryBackend::new(), try_once_options()).unwrap();
    group.bench_function("async run_if_leader (tokio)", |b| {
        b.to_async(&runtime).iter(|| async_cycle(&asynchronous))
    });

    group.finish();
    if leader_benches::name_filter_given() {
        return;
    }

    let mut cases: Vec<Case<'_>> = vec![
        (
            "floor: mutex hashmap insert+remove",
            Box::new(|| (0..BATCH).for_each(|_| floor_cycle(&map))),
        ),
        (
            "blocking run_if_leader",
            Box::new(|| (0..BATCH).for_each(|_| blocking_cycle(&blocking))),
        ),
        (
            "async run_if_leader (tokio)",
            Box::new(|| {
                runtime.block_on(async {
                    for _ in 0..BATCH {
                        async_cycle(&asynchronous).await;
                    }
                })
            }),
        ),
    ];
    let parts: Vec<Case<'_>> = vec![
        (
            "part: 4 clock reads (3 Instant, 1 SystemTime)",
            Box::new(|| (0..BATCH).for_each(|_| clock_reads())),
        ),
        (
            "part: owner token (OwnerToken::random)",
            Box::new(|| {
                (0..BATCH).for_each(|_| {
                    black_box(OwnerToken::random());
                })
            }),
        ),
        (
            "part: name check (LockName::unscoped)",
            Box::new(|| (0..BATCH).for_each(|_| drop(black_box(LockName::unscoped(NAME))))),
        ),
    ];
    cases.extend(parts);
    let medians = interleaved("memory (x1000)", 300, &mut cases);
    if let [floor, blocking, asynchronous, clocks, token, name] = medians.as_slice() {
        let parts = *clocks + *token + *name;
        println!(
            "memory: the parts above take {:.2}x the floor; floor + parts = {:.2}x, \
             leaving {:.2}x of the 3x goal to the elector and backend",
            ratio(parts, *floor),
            ratio(parts + *floor, *floor),
            3.0 - ratio(parts + *floor, *floor),
        );
        // The goal is below what a run needs before the elector and the backend do
        // anything of their own: the floor's map work and the parts above.
        let needed = parts + *floor;
        let limit = |run: Duration| {
            format!(
                "the floor's map work and the parts every run needs (4 clock reads, an \
                 owner token, the name's check) take {:.2}x the floor alone, and ours {:.2}x \
                 that (the rest: the attempt's state, the lease record, the result, the \
                 telemetry probes)",
                ratio(needed, *floor),
                ratio(run, needed)
            )
        };
        goal_with_limit(
            "in-memory blocking run_if_leader ÷ floor",
            ratio(*blocking, *floor),
            3.0,
            "x",
            &limit(*blocking),
        );
        goal_with_limit(
            "in-memory async run_if_leader ÷ floor",
            ratio(*asynchronous, *floor),
            3.0,
            "x",
            &limit(*asynchronous),
        );
    }
}

criterion_group!(benches, memory);
criterion_main!(benches);
