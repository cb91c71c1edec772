//! Continuous-leadership takeover times: after a graceful resignation (the standby is
//! notified) and after a crash (the lease must run out), on the in-memory backend and, when
//! `redis-server` is installed, on Redis (a server of the bench's own, from
//! `leader_rig::fixtures`).
//!
//! ```text
//! cargo bench -p leader-benches --bench failover
//! ```
//!
//! The crash case uses a 300 ms lease and a 50 ms poll: its floor is the lease itself.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use leader_blocking::{LeaderElector, LeadershipHandle};
use leader_core::{CampaignConfig, InMemoryBackend, LeaderElectionOptions, LockBackend};
use leader_redis::RedisBackend;
use leader_rig::fixtures::{self, RedisServer};

fn config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(300))
        .with_heartbeat(Duration::from_millis(50))
        .with_poll_interval(Duration::from_millis(50))
}

fn campaign<B: LockBackend + 'static>(
    backend: &Arc<B>,
    node: &str,
    stream: &str,
) -> LeadershipHandle {
    let options = LeaderElectionOptions::default().with_node_id(node);
    LeaderElector::with_shared_backend(Arc::clone(backend), options)
        .unwrap()
        .campaign(stream, config())
        .unwrap()
}

fn spin_until(mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no takeover within 10 s"
        );
        std::thread::yield_now();
    }
}

/// One handover: A leads, B stands by and has seen A; `end` ends A's campaign; the time
/// from then until B leads.
fn handover<B: LockBackend + 'static>(
    backend: &Arc<B>,
    round: u64,
    end: fn(LeadershipHandle),
) -> Duration {
    let stream = format!("bench-failover-{round}-{}", std::process::id());
    let a = campaign(backend, "a", &stream);
    spin_until(|| a.is_leader());
    let b = campaign(backend, "b", &stream);
    spin_until(|| b.current_leader().as_deref() == Some("a"));
    let t = Instant::now();
    end(a);
    spin_until(|| b.is_leader());
    let took = t.elapsed();
    b.resign();
    took
}

fn bench_backend<B: LockBackend + 'static>(c: &mut Criterion, label: &str, backend: Arc<B>) {
    let mut group = c.benchmark_group(format!("failover/{label}"));
    group.sampling_mode(SamplingMode::Flat).sample_size(20);
    let mut round = 0;
    group.bench_function("takeover after resign", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    round += 1;
                    handover(&backend, round, LeadershipHandle::resign)
                })
                .sum()
        })
    });
    group.sample_size(10);
    group.bench_function("takeover after crash (lease 300 ms, poll 50 ms)", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    round += 1;
                    handover(&backend, round, LeadershipHandle::abandon)
                })
                .sum()
        })
    });
    group.finish();
}

fn failover(c: &mut Criterion) {
    bench_backend(c, "memory", Arc::new(InMemoryBackend::new()));
    if let Some(server) = fixtures::require("redis-server", RedisServer::start()) {
        let backend = RedisBackend::connect(&server.url()).unwrap();
        bench_backend(c, "redis", Arc::new(backend));
    }
}

criterion_group!(benches, failover);
criterion_main!(benches);
