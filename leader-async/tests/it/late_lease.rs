//! No action starts on a lease that is already over: an acquire answered after the lease's
//! deadline (a paused process, a stalled server) is released and reported as
//! `Error::LeaseLost` by every async elector, on every runtime; so is a lease handed out
//! that ran out before its action started.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use leader_async::AsyncLeaderElector;
use leader_core::{
    CampaignConfig, Error, InMemoryBackend, LeaderElectionOptions, LeadershipEvent, LeaseMode,
    LockBackend, LockName, TenantId,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::{Runner, eventually, within};

leader_testkit::on_every_runtime!(
    no_elector_runs_an_action_on_an_acquire_answered_after_the_lease,
    a_batch_lock_that_ran_out_before_its_run_is_released_unrun,
    a_campaign_does_not_start_a_term_on_a_late_acquire_and_keeps_campaigning,
);

type Backend = FaultyBackend<InMemoryBackend>;

/// The lease the electors ask for.
const LEASE: Duration = Duration::from_millis(600);
/// How late the store applies and answers an acquire: past the lease, so the answer is
/// late, while the lease the store starts then would last another `LEASE`.
const LATE: Duration = Duration::from_millis(800);

fn late_elector(fault: Fault) -> AsyncLeaderElector<Backend> {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set(Op::Acquire, fault);
    let options = LeaderElectionOptions::default()
        .with_node_id("late")
        .with_lease_time(LEASE)
        .with_wait_time(Duration::ZERO);
    AsyncLeaderElector::new(backend, options).unwrap()
}

/// Asserts that the locks `keys` are free within half a lease of `since` — released, not
/// left to run out (the lease the store started at the late answer lasts a whole `LEASE`).
async fn assert_released(backend: &Backend, keys: &[&str], since: Instant, what: &str) {
    for key in keys {
        let key = LockName::new(*key).unwrap();
        eventually(&format!("{what}: {key} released"), LEASE * 2, || {
            LockBackend::state(backend.inner(), &key)
                .unwrap()
                .leader()
                .is_none()
        })
        .await;
        let took = since.elapsed();
        assert!(
            took < LEASE / 2,
            "{what}: {key} freed {took:?} after the call returned: it ran out rather than being released"
        );
    }
}

fn expect_lost(what: &str, answer: Result<(), Error>, keys: &[&str]) {
    match answer {
        Err(Error::LeaseLost { key }) => assert!(
            keys.contains(&key.as_str()),
            "{what}: LeaseLost names {key}, not one of {keys:?}"
        ),
        other => panic!("{what}: expected LeaseLost, got {other:?}"),
    }
}

fn no_elector_runs_an_action_on_an_acquire_answered_after_the_lease<R: Runner>(runner: &R) {
    runner.block_on(async {
        for fault in [Fault::Delay(LATE), Fault::ApplyThenDelay(LATE)] {
            let ran = Arc::new(AtomicBool::new(false));
            let action = |flag: &Arc<AtomicBool>| {
                let flag = Arc::clone(flag);
                move |_| async move {
                    flag.store(true, Ordering::SeqCst);
                    Ok::<_, std::convert::Infallible>(())
                }
            };

            let e = late_elector(fault);
            let answer = e.run_if_leader_with("direct", action(&ran)).await.map(drop);
            let returned = Instant::now();
            expect_lost("run_if_leader_with", answer, &["direct"]);
            assert_released(e.backend(), &["direct"], returned, "run_if_leader_with").await;

            let e = late_elector(fault);
            let group = e.group(2).unwrap();
            let answer = group
                .run_if_leader_with("grouped", action(&ran))
                .await
                .map(drop);
            let returned = Instant::now();
            let slots = ["grouped", "grouped#1"];
            expect_lost("group run", answer, &slots);
            assert_released(e.backend(), &slots, returned, "group run").await;

            let e = late_elector(fault);
            let tenants = [TenantId::new("acme").unwrap()];
            let answer = match e.try_acquire_for_tenants("batched", &tenants).await.pop() {
                Some(Ok(Some(acquired))) => acquired.run(action(&ran)).await.map(drop),
                Some(Ok(None)) => panic!("the lock was free"),
                Some(Err(err)) => Err(err),
                None => panic!("one answer per tenant"),
            };
            let returned = Instant::now();
            let key = "tenant:acme:batched";
            expect_lost("try_acquire_for_tenants", answer, &[key]);
            assert_released(e.backend(), &[key], returned, "try_acquire_for_tenants").await;

            let e = late_elector(fault);
            let flag = Arc::clone(&ran);
            let answer = e
                .with_lock("guarded", LeaseMode::Fixed(LEASE), |_| async move {
                    flag.store(true, Ordering::SeqCst);
                })
                .await;
            let returned = Instant::now();
            expect_lost("guard", answer, &["guarded"]);
            assert_released(e.backend(), &["guarded"], returned, "guard").await;

            assert!(
                !ran.load(Ordering::SeqCst),
                "{fault:?}: an action ran on a lease already over"
            );
        }
    });
}

fn a_batch_lock_that_ran_out_before_its_run_is_released_unrun<R: Runner>(runner: &R) {
    let options = LeaderElectionOptions::default()
        .with_lease_time(Duration::from_millis(100))
        .with_min_lease_time(Duration::from_millis(50));
    let store = InMemoryBackend::new();
    let elector = AsyncLeaderElector::new(store.clone(), options).unwrap();
    runner.block_on(async {
        let tenants = [TenantId::new("acme").unwrap()];
        let acquired = elector
            .try_acquire_for_tenants("waited", &tenants)
            .await
            .pop()
            .unwrap()
            .unwrap()
            .expect("free");
        // Nothing renews or watches a lock waiting to be run: its deadline passes.
        let context = acquired.context().clone();
        eventually("the lease runs out", Duration::from_secs(5), || {
            context.is_lost()
        })
        .await;
        let ran = AtomicBool::new(false);
        let answer = acquired
            .run(|_| async {
                ran.store(true, Ordering::SeqCst);
                Ok::<_, std::convert::Infallible>(())
            })
            .await;
        assert!(
            !ran.load(Ordering::SeqCst),
            "the action ran on a lost lease"
        );
        assert!(
            matches!(&answer, Err(Error::LeaseLost { key }) if key == "tenant:acme:waited"),
            "{answer:?}"
        );
        let key = LockName::new("tenant:acme:waited").unwrap();
        eventually("released", Duration::from_secs(2), || {
            LockBackend::state(&store, &key).unwrap().leader().is_none()
        })
        .await;
    });
}

fn a_campaign_does_not_start_a_term_on_a_late_acquire_and_keeps_campaigning<R: Runner>(runner: &R) {
    let elector = late_elector(Fault::Delay(LATE));
    let backend = Arc::clone(elector.backend());
    let elected = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&elected);
    let config = CampaignConfig::default()
        .with_lease_time(LEASE)
        .with_heartbeat(LEASE / 4)
        .with_poll_interval(Duration::from_millis(50));
    runner.block_on(async {
        let leadership = elector
            .campaign_with_callbacks(
                "campaign",
                config,
                vec![Arc::new(move |event: &LeadershipEvent| {
                    if matches!(event, LeadershipEvent::Elected { .. }) {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                })],
            )
            .unwrap();
        // The second attempt is on its way once the first (late) answer was dealt with.
        eventually("a second attempt", Duration::from_secs(10), || {
            backend.calls(Op::Acquire) >= 2
        })
        .await;
        let handled = Instant::now();
        assert_eq!(
            elected.load(Ordering::SeqCst),
            0,
            "a term began on a late lease"
        );
        assert!(!leadership.is_leader());
        assert_released(&backend, &["campaign"], handled, "campaign").await;

        backend.clear(Op::Acquire);
        within(Duration::from_secs(10), leadership.wait_for_term())
            .await
            .expect("the campaign goes on and leads once answers are in time");
        // The event follows the state it describes: it may land a moment after the term.
        eventually("the Elected event", Duration::from_secs(5), || {
            elected.load(Ordering::SeqCst) == 1
        })
        .await;
        leadership.resign().await;
    });
}
