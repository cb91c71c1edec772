//! Continuous leadership and the must-run guard over Redis: failover after a resignation
//! and after a crash, never two leaders, a leader that steps down when Redis goes away,
//! and a guard that fails closed.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::RedisHarness;
use leader_blocking::{LeaderElector, LeadershipHandle};
use leader_core::{
    CampaignConfig, Error, EventCallback, LeaderElectionOptions, LeadershipEvent, LeaseMode,
    RevokeReason,
};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::LeaderSampler;
use leader_rig::fixtures::Data;
use leader_testkit::{fresh_name, wait_until};

fn config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(900))
        .with_heartbeat(Duration::from_millis(150))
        .with_poll_interval(Duration::from_millis(100))
}

fn fast() -> RedisConfig {
    RedisConfig::default()
        .with_connect_timeout(Duration::from_millis(300))
        .with_response_timeout(Duration::from_millis(300))
}

fn elector(backend: &Arc<RedisBackend>, node: &str) -> LeaderElector<RedisBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::from_millis(100));
    LeaderElector::with_shared_backend(Arc::clone(backend), options).unwrap()
}

#[test]
fn a_standby_takes_over_at_once_after_a_resignation_and_after_the_lease_after_a_crash() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = Arc::new(harness.make());
    let stream = fresh_name("stream");
    let a = elector(&backend, "a")
        .campaign(stream.as_str(), config())
        .unwrap();
    wait_until("a elected", Duration::from_secs(3), || a.is_leader());
    let b = elector(&backend, "b")
        .campaign(stream.as_str(), config())
        .unwrap();
    wait_until("b sees a", Duration::from_secs(3), || {
        b.current_leader().as_deref() == Some("a")
    });

    let t = Instant::now();
    a.resign();
    wait_until("b takes over", Duration::from_secs(3), || b.is_leader());
    let after_resign = t.elapsed();
    assert!(
        after_resign < Duration::from_millis(300),
        "pub/sub wake-up, not polling: {after_resign:?}"
    );

    let c = elector(&backend, "c")
        .campaign(stream.as_str(), config())
        .unwrap();
    wait_until("c sees b", Duration::from_secs(3), || {
        c.current_leader().as_deref() == Some("b")
    });
    let t = Instant::now();
    b.abandon();
    wait_until("c takes over", Duration::from_secs(5), || c.is_leader());
    let after_crash = t.elapsed();
    let bound = config().lease_time() + config().poll_interval();
    assert!(
        after_crash >= config().lease_time() * 3 / 4,
        "the lease had to run out: {after_crash:?}"
    );
    assert!(
        after_crash <= bound + bound / 2,
        "{after_crash:?} vs {bound:?}"
    );
    eprintln!("takeover after resign {after_resign:?}, after crash {after_crash:?}");
}

#[test]
fn never_two_leaders_through_handovers_and_tokens_grow_across_terms() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = Arc::new(harness.make());
    let stream = fresh_name("stream");
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let make = |node: String| -> LeadershipHandle {
        let tokens = Arc::clone(&tokens);
        let record: EventCallback = Arc::new(move |event: &LeadershipEvent| {
            if let LeadershipEvent::Elected { fencing_token } = event {
                tokens.lock().unwrap().push(*fencing_token);
            }
        });
        elector(&backend, &node)
            .campaign_with_callbacks(stream.as_str(), config(), vec![record])
            .unwrap()
    };
    let mut nodes: Vec<LeadershipHandle> = (0..3).map(|i| make(format!("n{i}"))).collect();
    let sampler = LeaderSampler::start();
    for node in &nodes {
        sampler.watch(Arc::clone(node.state()));
    }
    for round in 0..6 {
        let t = Instant::now();
        let leader = loop {
            if let Some(i) = nodes.iter().position(|n| n.is_leader()) {
                break i;
            }
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "no leader in round {round}"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        // The old leader stays watched: its term must end before the next one begins.
        let replacement = make(format!("n{leader}-{round}"));
        sampler.watch(Arc::clone(replacement.state()));
        let old = std::mem::replace(&mut nodes[leader], replacement);
        if round % 2 == 0 {
            old.resign()
        } else {
            old.abandon()
        }
        // Across the handover, however busy the machine (one core of two may be taken).
        assert!(
            sampler.wait_for_samples(20, Duration::from_secs(10)),
            "the sampler did not run in round {round}"
        );
    }
    let samples = sampler.finish().unwrap();
    assert!(samples > 100, "sampled {samples} times");
    let tokens = tokens.lock().unwrap().clone();
    assert!(tokens.len() >= 6, "{tokens:?}");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn a_leader_steps_down_when_redis_stops_and_one_leads_again_after_a_restart() {
    let Some(mut server) = common::private_server() else {
        return;
    };
    let backend = Arc::new(RedisBackend::connect_with(&server.url(), fast()).unwrap());
    let a = elector(&backend, "a").campaign("stream", config()).unwrap();
    wait_until("a elected", Duration::from_secs(3), || a.is_leader());
    let events = a.events();
    let b = elector(&backend, "b").campaign("stream", config()).unwrap();

    server.kill();
    let stepped_down = wait_until("a steps down", Duration::from_secs(3), || !a.is_leader());
    assert!(
        stepped_down < config().lease_time(),
        "within one lease: {stepped_down:?}"
    );
    let reason = loop {
        if let LeadershipEvent::Revoked { reason } = events.recv_blocking().unwrap() {
            break reason;
        }
    };
    assert!(
        matches!(
            reason,
            RevokeReason::RenewalFailed(_) | RevokeReason::RenewDeadlinePassed
        ),
        "{reason}"
    );
    assert!(!b.is_leader());

    server.restart(Data::Keep).unwrap();
    wait_until("one leader again", Duration::from_secs(10), || {
        a.is_leader() || b.is_leader()
    });
    std::thread::sleep(config().heartbeat() * 2);
    assert!(
        a.is_leader() ^ b.is_leader(),
        "exactly one leader after the restart"
    );
}

#[test]
fn the_guard_names_the_holder_and_fails_closed_when_redis_is_down() {
    let Some(mut server) = common::private_server() else {
        return;
    };
    let backend = Arc::new(RedisBackend::connect_with(&server.url(), fast()).unwrap());
    let a = elector(&backend, "a");
    let b = elector(&backend, "b");
    let guard = a
        .acquire(
            "bill-run",
            LeaseMode::Watchdog {
                timeout: Duration::from_millis(600),
            },
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!guard.is_lost(), "the watchdog kept it past two timeouts");
    match b.acquire("bill-run", LeaseMode::watchdog()) {
        Err(Error::NotAcquired {
            holder: Some(holder),
            ..
        }) => assert_eq!(holder.leader_id, "a"),
        other => panic!("expected NotAcquired naming a, got {other:?}"),
    }
    drop(guard);

    server.kill();
    let ran = b.with_lock("bill-run", LeaseMode::watchdog(), |_| {
        panic!("must not run")
    });
    assert!(
        matches!(&ran, Err(Error::Backend(e)) if e.key().contains("bill-run")),
        "{ran:?}"
    );
}
