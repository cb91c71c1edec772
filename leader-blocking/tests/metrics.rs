//! The metrics (feature `metrics` of leader-core) after a scripted sequence, read from
//! metrics-util's debugging recorder. One test: the recorder is process-wide and its
//! snapshot drains what it read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use leader_blocking::LeaderElector;
use leader_core::{CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeaseMode};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::{fresh_name, wait_until};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// What one metric series ended at: a counter's count, a gauge's value, a histogram's
/// number of samples.
#[derive(Debug, PartialEq)]
enum Seen {
    Count(u64),
    Gauge(f64),
    Samples(usize),
}

#[test]
fn a_scripted_sequence_gives_the_expected_metrics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let job = fresh_name("metrics-job").to_string();
    let campaign_job = fresh_name("metrics-campaign").to_string();
    let overrun = fresh_name("metrics-overrun").to_string();
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let a = LeaderElector::new(backend.clone(), options.clone().with_node_id("a")).unwrap();
    let b = LeaderElector::new(backend.clone(), options.with_node_id("b")).unwrap();

    // a acquires and releases; b is skipped meanwhile.
    a.run_if_leader(&job, || {
        assert_eq!(b.run_if_leader(&job, || ()).unwrap(), None)
    })
    .unwrap();
    // A backend failure: the call fails closed.
    backend.set(Op::Acquire, Fault::Fail);
    assert!(b.run_if_leader(&job, || ()).is_err());
    backend.heal();
    // A held lease freed by an operator is lost at its next renewal.
    let guard = a
        .acquire(
            &job,
            LeaseMode::Watchdog {
                timeout: Duration::from_millis(300),
            },
        )
        .unwrap();
    b.force_release(&job).unwrap();
    assert!(guard.context().wait_lost_timeout(Duration::from_secs(10)));
    drop(guard);
    // An action that outlives its (unrenewed) lease: its lease is lost too.
    let short = LeaderElectionOptions::default().with_lease_time(Duration::from_millis(100));
    let c = LeaderElector::new(backend.clone(), short).unwrap();
    let outcome = c
        .run_if_leader_with(&overrun, |lease| {
            assert!(lease.wait_lost_timeout(Duration::from_secs(10)));
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap();
    assert!(outcome.lease_lost());
    // A campaign term under a tenant: the `lock` label has no tenant prefix.
    let acme = a.for_tenant("acme").unwrap();
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_millis(600))
        .with_heartbeat(Duration::from_millis(100))
        .with_renew_deadline(Duration::from_millis(400));
    let leadership = acme.campaign(&campaign_job, config).unwrap();
    leadership
        .wait_for_term_timeout(Duration::from_secs(10))
        .expect("elected");
    leadership.resign();

    let mut seen: BTreeMap<(String, String, String), Seen> = BTreeMap::new();
    wait_until("the term's hold to end", Duration::from_secs(10), || {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let (_, key) = key.into_parts();
            let labels: BTreeMap<&str, &str> = key.labels().map(|l| (l.key(), l.value())).collect();
            let Some(lock) = labels.get("lock").map(|l| l.to_string()) else {
                continue;
            };
            assert_eq!(labels.get("backend"), Some(&"memory"), "{key:?}");
            let reason = labels
                .get("reason")
                .map_or(String::new(), |r| r.to_string());
            let value = match value {
                DebugValue::Counter(n) => Seen::Count(n),
                DebugValue::Gauge(v) => Seen::Gauge(v.into_inner()),
                DebugValue::Histogram(samples) => Seen::Samples(samples.len()),
            };
            let entry = (key.name().to_owned(), lock, reason);
            // The snapshot drains: add this read to the earlier ones.
            let total = match (seen.remove(&entry), value) {
                (Some(Seen::Count(a)), Seen::Count(b)) => Seen::Count(a + b),
                (Some(Seen::Samples(a)), Seen::Samples(b)) => Seen::Samples(a + b),
                (Some(Seen::Gauge(a)), Seen::Gauge(b)) => Seen::Gauge(a + b),
                (_, value) => value,
            };
            seen.insert(entry, total);
        }
        let hold = (
            "leader_hold_seconds".to_owned(),
            campaign_job.clone(),
            String::new(),
        );
        seen.contains_key(&hold)
    });
    let get = |name: &str, lock: &str| seen.get(&(name.to_owned(), lock.to_owned(), String::new()));
    assert_eq!(get("leader_acquired_total", &job), Some(&Seen::Count(2)));
    assert_eq!(get("leader_skipped_total", &job), Some(&Seen::Count(1)));
    assert_eq!(
        get("leader_acquire_failed_total", &job),
        Some(&Seen::Count(1))
    );
    assert_eq!(
        get("leader_released_total", &job),
        Some(&Seen::Count(1)),
        "the lost lease's release is NotHeld"
    );
    assert_eq!(get("leader_lease_lost_total", &job), Some(&Seen::Count(1)));
    assert_eq!(get("leader_wait_seconds", &job), Some(&Seen::Samples(4)));
    assert_eq!(
        get("leader_acquire_latency_seconds", &job),
        Some(&Seen::Samples(3))
    );
    assert_eq!(get("leader_hold_seconds", &job), Some(&Seen::Samples(2)));
    assert_eq!(get("leader_locks_held", &job), Some(&Seen::Gauge(0.0)));

    assert_eq!(
        get("leader_leadership_gained_total", &campaign_job),
        Some(&Seen::Count(1))
    );
    let lost = (
        "leader_leadership_lost_total".to_owned(),
        campaign_job.clone(),
        "resigned".to_owned(),
    );
    assert_eq!(seen.get(&lost), Some(&Seen::Count(1)));
    assert_eq!(
        get("leader_released_total", &campaign_job),
        Some(&Seen::Count(1))
    );
    assert_eq!(
        get("leader_hold_seconds", &campaign_job),
        Some(&Seen::Samples(1))
    );
    assert_eq!(
        get("leader_lease_lost_total", &campaign_job),
        None,
        "resigning is no loss"
    );
    assert_eq!(
        get("leader_lease_lost_total", &overrun),
        Some(&Seen::Count(1))
    );
    assert_eq!(get("leader_locks_held", &overrun), Some(&Seen::Gauge(0.0)));
}
