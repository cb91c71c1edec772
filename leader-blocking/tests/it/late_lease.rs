//! No action starts on a lease that is already over: an acquire answered after the lease's
//! deadline (a paused process, a stalled server) is released and reported as
//! `Error::LeaseLost`, by every blocking elector; so is a lease handed out that ran out
//! before its action started.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::{
    CampaignConfig, Error, InMemoryBackend, LeaderElectionOptions, LeadershipEvent, LeaseMode,
    LockBackend, LockName, TenantId,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::wait_until;

type Backend = FaultyBackend<InMemoryBackend>;

/// The lease the electors ask for.
const LEASE: Duration = Duration::from_millis(600);
/// How late the store applies and answers an acquire: past the lease, so the answer is
/// late, while the lease the store starts then would last another `LEASE`.
const LATE: Duration = Duration::from_millis(800);

/// An elector whose every acquire is applied and answered `fault` late.
fn late_elector(fault: Fault, wait_time: Duration) -> LeaderElector<Backend> {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    backend.set(Op::Acquire, fault);
    let options = LeaderElectionOptions::default()
        .with_node_id("late")
        .with_lease_time(LEASE)
        .with_wait_time(wait_time);
    LeaderElector::new(backend, options).unwrap()
}

/// Asserts that the locks `keys` are free within half a lease of `since` — released, not
/// left to run out (the lease the store started at the late answer lasts a whole `LEASE`).
fn assert_released(backend: &Backend, keys: &[String], since: Instant, what: &str) {
    let bound = LEASE / 2;
    for key in keys {
        let key = LockName::new(key.as_str()).unwrap();
        wait_until(&format!("{what}: {key} released"), bound * 4, || {
            backend.inner().state(&key).unwrap().leader().is_none()
        });
        let took = since.elapsed();
        assert!(
            took < bound,
            "{what}: {key} freed {took:?} after the call returned: it ran out rather than being released"
        );
    }
}

/// One way of running an action: the elector, the lock's name, and a flag the action sets.
type Run = fn(&LeaderElector<Backend>, &str, &Arc<AtomicBool>) -> Result<(), Error>;

fn ran(
    flag: &Arc<AtomicBool>,
) -> impl FnOnce(&leader_core::LeaseContext) -> Result<(), Infallible> + Send + 'static {
    let flag = Arc::clone(flag);
    move |_| {
        flag.store(true, Ordering::SeqCst);
        Ok(())
    }
}

/// Every blocking elector kind, and the keys its run may take.
fn kinds() -> Vec<(&'static str, Run, Vec<String>)> {
    let group_keys = |name: &str| vec![name.to_owned(), format!("{name}#1")];
    vec![
        (
            "run_if_leader_with",
            |e, name, flag| e.run_if_leader_with(name, ran(flag)).map(drop),
            vec!["direct".into()],
        ),
        (
            "thread pool",
            |e, name, flag| {
                let pool = ThreadPoolLeaderElector::from_elector(e.clone(), 1);
                pool.run_async_if_leader_with(name, ran(flag))?
                    .wait()
                    .map(drop)
            },
            vec!["pooled".into()],
        ),
        (
            "group run",
            |e, name, flag| e.group(2)?.run_if_leader_with(name, ran(flag)).map(drop),
            group_keys("grouped"),
        ),
        (
            "thread pool group run",
            |e, name, flag| {
                let pool = ThreadPoolLeaderElector::from_elector(e.clone(), 1);
                pool.run_async_in_group_with(name, 2, ran(flag))?
                    .wait()
                    .map(drop)
            },
            group_keys("pool-grouped"),
        ),
        (
            "try_acquire_for_tenants + run",
            |e, name, flag| {
                let tenants = [TenantId::new("acme").unwrap()];
                let answer = e.try_acquire_for_tenants(name, &tenants).pop().unwrap();
                match answer? {
                    Some(acquired) => acquired.run(ran(flag)).map(drop),
                    None => panic!("the lock was free"),
                }
            },
            vec!["tenant:acme:batched".into()],
        ),
        (
            "guard",
            |e, name, flag| {
                let flag = Arc::clone(flag);
                e.with_lock(name, LeaseMode::Fixed(LEASE), move |_| {
                    flag.store(true, Ordering::SeqCst);
                })
            },
            vec!["guarded".into()],
        ),
    ]
}

#[test]
fn no_elector_runs_an_action_on_an_acquire_answered_after_the_lease() {
    let names = [
        "direct",
        "pooled",
        "grouped",
        "pool-grouped",
        "batched",
        "guarded",
    ];
    let checks: Vec<_> = kinds()
        .into_iter()
        .zip(names)
        .map(|((kind, run, keys), name)| {
            std::thread::spawn(move || {
                for fault in [Fault::Delay(LATE), Fault::ApplyThenDelay(LATE)] {
                    let elector = late_elector(fault, Duration::ZERO);
                    let flag = Arc::new(AtomicBool::new(false));
                    let answer = run(&elector, name, &flag);
                    let returned = Instant::now();
                    assert!(
                        !flag.load(Ordering::SeqCst),
                        "{kind} ({fault:?}): the action ran on a lease already over"
                    );
                    match answer {
                        Err(Error::LeaseLost { key }) => assert!(
                            keys.contains(&key),
                            "{kind}: LeaseLost names {key}, not one of {keys:?}"
                        ),
                        other => panic!("{kind} ({fault:?}): expected LeaseLost, got {other:?}"),
                    }
                    assert_released(elector.backend(), &keys, returned, kind);
                }
            })
        })
        .collect();
    for check in checks {
        check.join().unwrap();
    }
}

#[test]
fn late_answers_are_retried_within_the_wait_then_lost() {
    let elector = late_elector(Fault::Delay(LATE), LATE + LATE / 2);
    let flag = Arc::new(AtomicBool::new(false));
    let answer = elector.run_if_leader_with("retried", ran(&flag));
    assert!(!flag.load(Ordering::SeqCst), "no action on a late lease");
    assert!(
        matches!(&answer, Err(Error::LeaseLost { key }) if key == "retried"),
        "{answer:?}"
    );
    assert!(
        elector.backend().calls(Op::Acquire) >= 2,
        "a late answer counts as a failed attempt, retried within the wait"
    );
    assert_released(
        elector.backend(),
        &["retried".into()],
        Instant::now(),
        "retried",
    );

    // Once the store answers in time again, the next attempt wins.
    elector.backend().clear(Op::Acquire);
    let won = elector.run_if_leader("retried", || 7).unwrap();
    assert_eq!(won, Some(7));
}

#[test]
fn a_batch_lock_that_ran_out_before_its_run_is_released_unrun() {
    let options = LeaderElectionOptions::default()
        .with_lease_time(Duration::from_millis(100))
        .with_min_lease_time(Duration::from_millis(50));
    let elector = LeaderElector::new(InMemoryBackend::new(), options).unwrap();
    let tenants = [TenantId::new("acme").unwrap()];
    let acquired = elector
        .try_acquire_for_tenants("waited", &tenants)
        .pop()
        .unwrap()
        .unwrap()
        .expect("free");
    let context = acquired.context().clone();
    assert!(context.wait_lost_timeout(Duration::from_secs(5)));
    let ran = AtomicBool::new(false);
    let answer = acquired.run(|_| {
        ran.store(true, Ordering::SeqCst);
        Ok::<_, Infallible>(())
    });
    assert!(
        !ran.load(Ordering::SeqCst),
        "the action ran on a lost lease"
    );
    assert!(
        matches!(&answer, Err(Error::LeaseLost { key }) if key == "tenant:acme:waited"),
        "{answer:?}"
    );
    let scoped = elector.for_tenant("acme").unwrap();
    assert!(
        scoped.state("waited").unwrap().leader().is_none(),
        "released without the minimum lease"
    );
}

#[test]
fn a_campaign_does_not_start_a_term_on_a_late_acquire_and_keeps_campaigning() {
    let elector = late_elector(Fault::Delay(LATE), Duration::ZERO);
    let backend = Arc::clone(elector.backend());
    let elected = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&elected);
    let config = CampaignConfig::default()
        .with_lease_time(LEASE)
        .with_heartbeat(LEASE / 4)
        .with_poll_interval(Duration::from_millis(50));
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
    wait_until("a second attempt", Duration::from_secs(10), || {
        backend.calls(Op::Acquire) >= 2
    });
    let handled = Instant::now();
    assert_eq!(
        elected.load(Ordering::SeqCst),
        0,
        "a term began on a late lease"
    );
    assert!(!leadership.is_leader());
    assert_released(&backend, &["campaign".into()], handled, "campaign");

    backend.clear(Op::Acquire);
    let term = leadership.wait_for_term_timeout(Duration::from_secs(10));
    assert!(
        term.is_some(),
        "the campaign goes on and leads once answers are in time"
    );
    // The event follows the state it describes: it may land a moment after the term.
    wait_until("the Elected event", Duration::from_secs(5), || {
        elected.load(Ordering::SeqCst) == 1
    });
    leadership.resign();
}
