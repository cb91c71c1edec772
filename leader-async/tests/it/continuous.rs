//! Continuous leadership and the must-run guard on the async elector, on every runtime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_core::{
    CampaignConfig, DeploymentMode, Error, InMemoryBackend, LeaderElectionOptions, LeadershipEvent,
    LeaseMode, LockStatus,
};
use leader_testkit::{Runner, eventually, sleep, within};

leader_testkit::on_every_runtime!(
    a_resignation_hands_over_at_once,
    a_dropped_handle_resigns_in_the_background,
    a_standby_stops_at_once_however_long_its_poll,
    all_instances_mode_makes_every_instance_lead,
    the_guard_fails_closed_and_reports_the_holder,
    the_watchdog_keeps_an_async_guard_alive,
    a_fixed_lease_guard_reports_its_expiry,
);

fn config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(600))
        .with_heartbeat(Duration::from_millis(100))
        .with_poll_interval(Duration::from_millis(50))
}

fn elector(backend: &InMemoryBackend, node: &str) -> AsyncLeaderElector<InMemoryBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::from_millis(50));
    AsyncLeaderElector::new(backend.clone(), options).unwrap()
}

fn a_resignation_hands_over_at_once<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    runner.block_on(async {
        let a = elector(&backend, "a").campaign("stream", config()).unwrap();
        let term = within(Duration::from_secs(2), a.wait_for_term())
            .await
            .expect("a elected");
        let b = elector(&backend, "b").campaign("stream", config()).unwrap();
        let events = b.events();
        eventually("b sees a", Duration::from_secs(3), || {
            b.current_leader().as_deref() == Some("a")
        })
        .await;
        a.resign().await;
        assert!(term.is_lost());
        let took = eventually("b takes over", Duration::from_secs(3), || b.is_leader()).await;
        assert!(took < Duration::from_millis(300), "{took:?}");
        // The event follows the state it describes, so it may land a moment after
        // `is_leader()` turns true: wait for it rather than peek.
        let elected = within(Duration::from_secs(1), async {
            loop {
                if let LeadershipEvent::Elected { fencing_token } = events.recv().await.unwrap() {
                    return fencing_token;
                }
            }
        })
        .await
        .expect("b's Elected event arrives");
        assert!(elected > term.fencing_token(), "tokens grow across terms");
        b.resign().await;
    });
}

fn a_dropped_handle_resigns_in_the_background<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    runner.block_on(async {
        let a = elector(&backend, "a").campaign("stream", config()).unwrap();
        let term = within(Duration::from_secs(2), a.wait_for_term())
            .await
            .expect("a elected");
        let b = elector(&backend, "b").campaign("stream", config()).unwrap();
        drop(a);
        within(Duration::from_secs(1), term.lost())
            .await
            .expect("the term ends when the handle is dropped");
        eventually("b takes over", Duration::from_secs(3), || b.is_leader()).await;
        b.resign().await;
    });
}

fn a_standby_stops_at_once_however_long_its_poll<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let slow_poll = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(30))
        .with_heartbeat(Duration::from_secs(1))
        .with_poll_interval(Duration::from_secs(10));
    runner.block_on(async {
        let a = elector(&backend, "a")
            .campaign("stream", slow_poll)
            .unwrap();
        within(Duration::from_secs(2), a.wait_for_term())
            .await
            .expect("a elected");
        let b = elector(&backend, "b")
            .campaign("stream", slow_poll)
            .unwrap();
        eventually("b sees a", Duration::from_secs(3), || {
            b.current_leader().as_deref() == Some("a")
        })
        .await;
        // b now sleeps through a 10 s poll; a stop request must cut that short.
        within(Duration::from_secs(2), b.resign())
            .await
            .expect("the standby's task ends on resign, not at its next poll");
        assert!(
            a.is_leader(),
            "the standby's resignation leaves the leader alone"
        );
        within(Duration::from_secs(2), a.resign())
            .await
            .expect("the leader's task ends on resign, not at its next heartbeat");
    });
}

fn all_instances_mode_makes_every_instance_lead<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    runner.block_on(async {
        let all = config().with_mode(DeploymentMode::AllInstances);
        let a = elector(&backend, "a").campaign("stream", all).unwrap();
        let b = elector(&backend, "b").campaign("stream", all).unwrap();
        eventually("both lead", Duration::from_secs(3), || {
            a.is_leader() && b.is_leader()
        })
        .await;
        assert_eq!(
            elector(&backend, "c")
                .state("stream")
                .await
                .unwrap()
                .status(),
            LockStatus::Empty,
            "the real backend is untouched"
        );
        a.resign().await;
        b.resign().await;
    });
}

fn the_guard_fails_closed_and_reports_the_holder<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    runner.block_on(async {
        let a = elector(&backend, "a");
        let b = elector(&backend, "b");
        let guard = a.acquire("bill-run", LeaseMode::watchdog()).await.unwrap();
        match b.acquire("bill-run", LeaseMode::watchdog()).await {
            Err(Error::NotAcquired { key, holder }) => {
                assert_eq!(key, "bill-run");
                assert_eq!(holder.unwrap().fencing_token, guard.fencing_token());
            }
            other => panic!("expected NotAcquired, got {other:?}"),
        }
        let ran = b
            .with_lock("bill-run", LeaseMode::watchdog(), |_| async {
                unreachable!()
            })
            .await;
        assert!(matches!(ran, Err(Error::NotAcquired { .. })));
        guard.release().await;
        let token = b
            .with_lock("bill-run", LeaseMode::watchdog(), |lease| async move {
                lease.fencing_token()
            })
            .await
            .unwrap();
        assert_eq!(token, 2);
    });
}

fn the_watchdog_keeps_an_async_guard_alive<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    runner.block_on(async {
        let mode = LeaseMode::Watchdog {
            timeout: Duration::from_millis(120),
        };
        let guard = elector(&backend, "a").acquire("job", mode).await.unwrap();
        sleep(Duration::from_millis(600)).await;
        assert!(!guard.is_lost());
        assert!(matches!(
            elector(&backend, "b").acquire("job", mode).await,
            Err(Error::NotAcquired { .. })
        ));
        drop(guard);
        let b = elector(&backend, "b");
        let t = Instant::now();
        let next = b.acquire("job", LeaseMode::watchdog()).await.unwrap();
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "dropping the guard released it"
        );
        next.release().await;
    });
}

fn a_fixed_lease_guard_reports_its_expiry<R: Runner>(runner: &R) {
    let backend = Arc::new(InMemoryBackend::new());
    runner.block_on(async {
        let guard = elector(&backend, "a")
            .acquire("job", LeaseMode::Fixed(Duration::from_millis(80)))
            .await
            .unwrap();
        within(Duration::from_secs(2), guard.context().lost())
            .await
            .expect("the loss is signalled");
        assert!(guard.is_lost());
        let next = elector(&backend, "b")
            .acquire("job", LeaseMode::watchdog())
            .await
            .unwrap();
        assert!(next.fencing_token() > guard.fencing_token());
        guard.release().await;
        assert_eq!(
            elector(&backend, "c")
                .state("job")
                .await
                .unwrap()
                .leader()
                .unwrap()
                .leader_id,
            "b"
        );
        next.release().await;
    });
}
