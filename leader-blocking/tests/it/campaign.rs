//! Continuous leadership: one leader, standbys take over on crash and on resignation.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leader_blocking::{LeaderElector, LeadershipHandle};
use leader_core::{
    CampaignConfig, DeploymentMode, Error, EventCallback, InMemoryBackend, LeaderElectionOptions,
    LeadershipEvent, OptionsError, RevokeReason,
};
use leader_rig::LeaderSampler;
use leader_rig::{Fault, FaultyBackend};
use leader_testkit::wait_until;

fn config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(600))
        .with_heartbeat(Duration::from_millis(100))
        .with_poll_interval(Duration::from_millis(50))
}

type Flaky = FaultyBackend<InMemoryBackend>;

fn elector(backend: Flaky, node: &str) -> LeaderElector<Flaky> {
    LeaderElector::new(backend, LeaderElectionOptions::default().with_node_id(node)).unwrap()
}

fn flaky(shared: &InMemoryBackend) -> Flaky {
    FaultyBackend::new(shared.clone())
}

#[test]
fn one_leader_is_elected_and_a_resignation_hands_over_at_once() {
    let shared = InMemoryBackend::new();
    let a = elector(flaky(&shared), "a")
        .campaign("stream", config())
        .unwrap();
    wait_until("a elected", Duration::from_secs(2), || a.is_leader());
    let b = elector(flaky(&shared), "b")
        .campaign("stream", config())
        .unwrap();
    let events = b.events();
    wait_until("b sees a", Duration::from_secs(2), || {
        b.current_leader().as_deref() == Some("a")
    });
    assert!(!b.is_leader());
    let term_a = a.term().unwrap();

    let t = Instant::now();
    a.resign();
    assert!(term_a.is_lost(), "the term signal fires on resignation");
    let took = wait_until("b takes over", Duration::from_secs(2), || b.is_leader());
    assert!(
        took < Duration::from_millis(300),
        "notified takeover, not a poll-and-expiry: {took:?} after {:?}",
        t.elapsed()
    );
    // The event follows the state it describes, so it may land a moment after
    // `is_leader()` turns true: wait for it rather than peek.
    let mut got = Vec::new();
    wait_until("b's Elected event", Duration::from_secs(1), || {
        got.extend(std::iter::from_fn(|| events.try_recv()));
        got.iter()
            .any(|e| matches!(e, LeadershipEvent::Elected { .. }))
    });
}

#[test]
fn a_standby_stops_at_once_however_long_its_poll() {
    let shared = InMemoryBackend::new();
    let slow_poll = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(30))
        .with_heartbeat(Duration::from_secs(1))
        .with_poll_interval(Duration::from_secs(10));
    let a = elector(flaky(&shared), "a")
        .campaign("stream", slow_poll)
        .unwrap();
    wait_until("a elected", Duration::from_secs(2), || a.is_leader());
    let b = elector(flaky(&shared), "b")
        .campaign("stream", slow_poll)
        .unwrap();
    wait_until("b sees a", Duration::from_secs(2), || {
        b.current_leader().as_deref() == Some("a")
    });
    // b now sleeps through a 10 s poll; resign joins its thread, so it must wake it.
    let t = Instant::now();
    b.resign();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the standby stopped on resign, not at its next poll: {:?}",
        t.elapsed()
    );
    assert!(
        a.is_leader(),
        "the standby's resignation leaves the leader alone"
    );
    let t = Instant::now();
    a.resign();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[test]
fn a_crashed_leader_steps_down_at_once_and_a_standby_takes_over_after_the_lease() {
    let shared = InMemoryBackend::new();
    let a_backend = flaky(&shared);
    let a_down = a_backend.clone();
    let a = elector(a_backend, "a")
        .campaign("stream", config())
        .unwrap();
    wait_until("a elected", Duration::from_secs(2), || a.is_leader());
    let a_events = a.events();
    let b = elector(flaky(&shared), "b")
        .campaign("stream", config())
        .unwrap();

    let t = Instant::now();
    a_down.set_all(Fault::Fail); // a can no longer reach the store: renewals fail, no release
    let stepped_down = wait_until("a steps down", Duration::from_secs(2), || !a.is_leader());
    assert!(
        stepped_down <= config().heartbeat() + Duration::from_millis(100),
        "{stepped_down:?}"
    );
    // `a_events` may still hold a's own `Elected` (events trail the state they describe).
    let revoked = std::iter::from_fn(|| a_events.recv_blocking())
        .find(|e| {
            !matches!(
                e,
                LeadershipEvent::Elected { .. } | LeadershipEvent::LeaderChanged { .. }
            )
        })
        .unwrap();
    assert!(
        matches!(
            revoked,
            LeadershipEvent::Revoked {
                reason: RevokeReason::RenewalFailed(_)
            }
        ),
        "{revoked:?}"
    );

    wait_until("b takes over", Duration::from_secs(3), || b.is_leader());
    let took = t.elapsed();
    let bound = config().lease_time() + config().poll_interval();
    assert!(
        took <= bound + bound / 2,
        "takeover {took:?} vs bound {bound:?}"
    );
    assert!(
        took >= config().lease_time() / 2,
        "b waited for a's lease to run out: {took:?}"
    );
}

#[test]
fn never_two_leaders_and_tokens_grow_across_terms() {
    let shared = InMemoryBackend::new();
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let make = |node: &str| -> LeadershipHandle {
        let tokens = Arc::clone(&tokens);
        let record: EventCallback = Arc::new(move |event: &LeadershipEvent| {
            if let LeadershipEvent::Elected { fencing_token } = event {
                tokens.lock().unwrap().push(*fencing_token);
            }
        });
        elector(flaky(&shared), node)
            .campaign_with_callbacks("stream", config(), vec![record])
            .unwrap()
    };
    let mut nodes: Vec<Option<LeadershipHandle>> =
        vec![Some(make("n0")), Some(make("n1")), Some(make("n2"))];

    let sampler = LeaderSampler::start();
    for node in nodes.iter().flatten() {
        sampler.watch(Arc::clone(node.state()));
    }
    for round in 0..12 {
        let leader = wait_until_some_leader(&nodes);
        let handle = nodes[leader].take().unwrap();
        handle.resign(); // still watched: its term must end before the next one begins
        let next = make(&format!("n{leader}-{round}"));
        sampler.watch(Arc::clone(next.state()));
        nodes[leader] = Some(next);
        // Across the handover, however busy the machine (one core of two may be taken).
        assert!(
            sampler.wait_for_samples(10, Duration::from_secs(10)),
            "the sampler did not run in round {round}"
        );
    }
    wait_until_some_leader(&nodes);
    let samples = sampler.finish().unwrap();
    assert!(samples > 100, "sampled {samples} times");

    // The last term's `Elected` callback runs just after its `is_leader()` turns true.
    wait_until(
        "the 13th term's Elected event",
        Duration::from_secs(1),
        || tokens.lock().unwrap().len() >= 13,
    );
    let tokens = tokens.lock().unwrap().clone();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens across terms: {tokens:?}"
    );
}

fn wait_until_some_leader(nodes: &[Option<LeadershipHandle>]) -> usize {
    let t = Instant::now();
    loop {
        if let Some(i) = nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.is_leader()))
        {
            return i;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "no leader");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn all_instances_mode_makes_every_instance_lead() {
    let shared = InMemoryBackend::new();
    let all = config().with_mode(DeploymentMode::AllInstances);
    let a = elector(flaky(&shared), "a")
        .campaign("stream", all)
        .unwrap();
    let b = elector(flaky(&shared), "b")
        .campaign("stream", all)
        .unwrap();
    wait_until("both lead", Duration::from_secs(2), || {
        a.is_leader() && b.is_leader()
    });
    assert!(a.wait_for_term_timeout(Duration::from_secs(1)).is_some());
}

#[test]
fn an_inconsistent_config_is_a_typed_error() {
    let e = elector(flaky(&InMemoryBackend::new()), "a");
    let err = e
        .campaign(
            "stream",
            config().with_heartbeat(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidOptions(OptionsError::HeartbeatTooLong { .. })
        ),
        "{err}"
    );
    assert!(matches!(
        e.campaign("", config()),
        Err(Error::InvalidName(_))
    ));
}

#[test]
fn an_abandoned_leader_is_replaced_only_after_its_lease() {
    let shared = InMemoryBackend::new();
    let a = elector(flaky(&shared), "a")
        .campaign("stream", config())
        .unwrap();
    wait_until("a elected", Duration::from_secs(2), || a.is_leader());
    let b = elector(flaky(&shared), "b")
        .campaign("stream", config())
        .unwrap();
    let t = Instant::now();
    a.abandon();
    let took = wait_until("b takes over", Duration::from_secs(3), || b.is_leader());
    assert!(
        took >= config().lease_time() * 3 / 4,
        "no release, so the lease had to run out: {took:?} ({:?})",
        t.elapsed()
    );
    assert!(
        took <= (config().lease_time() + config().poll_interval()) * 3 / 2,
        "{took:?}"
    );
}
