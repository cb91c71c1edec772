//! Faults of a three-member cluster, the client given every member: the raft leader
//! killed under a held lock and under processes contending for one, a member paused, a
//! member cut off from the others, the whole cluster restarted, quorum lost. Never two
//! holders, never a made-up answer, tokens always up; errors are transient and come
//! within the operation timeout; the same backends recover.
//!
//! The tests run one at a time: each has a cluster of its own, and three of them at once
//! on a small machine would hold elections of their own.

use std::convert::Infallible;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::common::{
    Raw, bound, fails_fast, fast, must_acquire, private_cluster, recovers, stored_fence,
};
use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, LeaderElectionOptions, LockBackend,
    LockName, OwnerToken, ReleaseOutcome, ReleaseRequest, Renewal,
};
use leader_etcd::EtcdBackend;
use leader_rig::contenders::{Action, Contender, Contenders, micros_now};
use leader_rig::fixtures;
use leader_rig::fixtures::EtcdCluster;
use leader_testkit::{checks, fresh_name};

/// Far longer than any fault below lasts.
const LEASE: Duration = Duration::from_secs(30);
/// How long a healed cluster may take to serve again.
const RECOVERY: Duration = Duration::from_secs(30);

fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn backend(url: &str, prefix: &str) -> EtcdBackend {
    EtcdBackend::connect_with(url, fast(prefix)).unwrap()
}

/// `result` is fine, or a transient error: what a call may answer during a fault.
#[track_caller]
fn ok_or_transient<T>(result: Result<T, Error>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(err) => {
            assert!(
                err.is_transient(),
                "a permanent error during a fault: {err}"
            );
            None
        }
    }
}

fn request<'a>(key: &'a LockName, node: &'a str, lease: Duration) -> AcquireRequest<'a> {
    AcquireRequest::new(key, OwnerToken::random(), node, lease)
}

#[test]
fn killing_the_raft_leader_under_a_held_lock_never_makes_two_holders() {
    let _turn = one_at_a_time();
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let url = cluster.url();
    let (holder, other) = (backend(&url, "failover"), backend(&url, "failover"));
    let key = fresh_name("failover");
    let lease_time = Duration::from_secs(5);
    let sent = Instant::now();
    let lease = must_acquire(&holder, &key, "holder", lease_time);
    let mut valid_until = sent + lease_time;

    let leader = cluster.leader().unwrap();
    cluster.members_mut()[leader].kill();
    let killed = Instant::now();
    let (mut extended_after_kill, mut lost) = (0, false);
    while extended_after_kill < 3 && !lost {
        assert!(
            killed.elapsed() < lease_time * 3,
            "the holder neither renewed nor learned it lost the lock"
        );
        let sent = Instant::now();
        match ok_or_transient(holder.extend(Renewal::new(&lease, lease_time))) {
            Some(ExtendOutcome::Extended { .. }) => {
                assert!(sent < valid_until, "renewed a lease already over");
                valid_until = sent + lease_time;
                extended_after_kill += 1;
            }
            Some(ExtendOutcome::NotHeld) => {
                assert!(
                    Instant::now() >= valid_until,
                    "lost the lock within its lease"
                );
                lost = true;
            }
            Some(outcome) => panic!("{outcome:?}"),
            None => {}
        }
        match ok_or_transient(other.try_acquire(request(&key, "other", lease_time))) {
            Some(AcquireOutcome::Acquired(taken)) => {
                assert!(
                    Instant::now() >= valid_until,
                    "two holders: taken with token {} within the holder's lease",
                    taken.fencing_token
                );
                assert!(taken.fencing_token > lease.fencing_token);
                lost = true;
            }
            Some(AcquireOutcome::Held(Some(seen))) => {
                assert_eq!(seen.fencing_token, lease.fencing_token);
            }
            Some(AcquireOutcome::Held(None)) | None => {}
            Some(outcome) => panic!("{outcome:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!lost, "a 5 s lease renewed through a failover was lost");

    // After the failover, the next holder's token is above the one before it.
    assert_eq!(
        recovers(RECOVERY, || holder
            .release(ReleaseRequest::new(&lease, Duration::ZERO))),
        ReleaseOutcome::Released
    );
    let next = must_acquire(&other, &key, "other", lease_time);
    assert!(next.fencing_token > lease.fencing_token);
    cluster.members_mut()[leader].restart().unwrap();
    cluster.wait_until_healthy().unwrap();
    let after = must_acquire(&holder, &fresh_name("after"), "holder", lease_time);
    assert!(after.fencing_token > next.fencing_token);
}

const CONTENDERS: usize = 3;

/// The child: `run_if_leader` in a loop until told to stop. Every error must be
/// transient.
fn contend(child: Contender) {
    let backend = backend(child.url(), "contend");
    let options = LeaderElectionOptions::default()
        .with_node_id(format!("child-{}", std::process::id()))
        .with_wait_time(Duration::from_millis(500))
        .with_lease_time(Duration::from_secs(3));
    let elector = leader_blocking::LeaderElector::new(backend, options).unwrap();
    child.run(Duration::from_millis(50), || {
        elector
            .run_if_leader_with("the-one-job", |lease| {
                let hold = Duration::from_millis(rand::random_range(5..20));
                Ok::<_, Infallible>(Action::hold(lease.fencing_token(), hold))
            })
            .map(|outcome| outcome.into_value())
    });
}

#[test]
fn processes_contending_through_a_leader_failover_never_overlap() {
    if let Some(child) = Contender::from_env() {
        return contend(child);
    }
    let _turn = one_at_a_time();
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let contenders = Contenders::spawn(
        "cluster_faults::processes_contending_through_a_leader_failover_never_overlap",
        CONTENDERS,
        &cluster.url(),
    );
    contenders.progress(10);
    let leader = cluster.leader().unwrap();
    cluster.members_mut()[leader].kill();
    let killed = micros_now();
    cluster.wait_until_quorum().unwrap();
    contenders.progress(10);
    cluster.members_mut()[leader].restart().unwrap();
    cluster.wait_until_healthy().unwrap();
    contenders.progress(10);
    let all = contenders.finish();
    assert!(
        all.iter().filter(|action| action.start > killed).count() >= 10,
        "no actions after the failover"
    );
    for pair in all.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(!a.overlaps(&b), "two actions at once: {a:?}, {b:?}");
    }
}

/// The raft leader paused (SIGSTOP, so its connections stay open): the other two serve
/// the holder, nobody else gets the lock, and each client leaves one call on the paused
/// member, not one in three.
#[test]
fn a_paused_member_never_gives_a_wrong_answer() {
    let _turn = one_at_a_time();
    let Some(cluster) = private_cluster() else {
        return;
    };
    let url = cluster.url();
    let (holder, other) = (backend(&url, "paused"), backend(&url, "paused"));
    let key = fresh_name("paused");
    let lease = must_acquire(&holder, &key, "holder", LEASE);

    let paused = cluster.leader().unwrap();
    cluster.members()[paused].pause();
    // The other two elect a leader before the clients call again: from then on, a call
    // that waits long waits on the paused member.
    cluster.wait_until_quorum().unwrap();
    let started = Instant::now();
    let (mut states, mut refusals, mut renewals) = (0, 0, 0);
    // Per client: the calls that failed after waiting long, with what they answered.
    let (mut waited_other, mut waited_holder) = (Vec::new(), Vec::new());
    while states < 3 || refusals < 3 || renewals < 3 {
        assert!(
            started.elapsed() < RECOVERY,
            "the other members did not serve: {states} states, {refusals} refusals, {renewals} renewals"
        );
        if let Some(state) = counting_waits(&mut waited_other, || other.state(&key)) {
            assert_eq!(
                state.leader().map(|holder| holder.fencing_token),
                Some(lease.fencing_token),
                "a wrong holder"
            );
            states += 1;
        }
        match counting_waits(&mut waited_other, || {
            other.try_acquire(request(&key, "other", LEASE))
        }) {
            Some(AcquireOutcome::Held(Some(seen))) => {
                assert_eq!(seen.fencing_token, lease.fencing_token);
                refusals += 1;
            }
            Some(outcome) => panic!("a wrong answer to another owner: {outcome:?}"),
            None => {}
        }
        match counting_waits(&mut waited_holder, || {
            holder.extend(Renewal::new(&lease, LEASE))
        }) {
            Some(ExtendOutcome::Extended { .. }) => renewals += 1,
            Some(outcome) => panic!("the holder lost a 30 s lease: {outcome:?}"),
            None => {}
        }
    }
    // The kernel keeps the paused member's connections open, so only the calls tell: each
    // client leaves one call unanswered there, then passes the member over (for longer
    // than this loop lasts) while another serves. A second wait per client is allowed for
    // an election the loaded machine may hold again (its calls fail late too); calling
    // the paused member in turn cost a client 3 to 5 waits here.
    assert!(
        waited_other.len() <= 2 && waited_holder.len() <= 2,
        "the clients kept calling the paused member: {waited_other:?}, {waited_holder:?}"
    );
    cluster.members()[paused].resume();
    cluster.wait_until_healthy().unwrap();
    assert_eq!(
        recovers(RECOVERY, || holder
            .release(ReleaseRequest::new(&lease, Duration::ZERO))),
        ReleaseOutcome::Released
    );
}

/// `call`'s result as [`ok_or_transient`] gives it, keeping in `waits` a failure that
/// took half the operation timeout or more (a call that got no answer): how long it took,
/// and its error.
#[track_caller]
fn counting_waits<T>(
    waits: &mut Vec<(Duration, String)>,
    call: impl FnOnce() -> Result<T, Error>,
) -> Option<T> {
    let sent = Instant::now();
    let result = call();
    let took = sent.elapsed();
    if let Err(err) = &result
        && took >= fast("paused").operation_timeout() / 2
    {
        waits.push((took, err.to_string()));
    }
    ok_or_transient(result)
}

/// A member cut off from the other two by a partition of the peer traffic (every process
/// runs): its client, given that member only, fails closed until the cut heals, while
/// the two others go on serving the holder.
#[test]
fn a_member_cut_off_from_the_others_fails_closed_and_heals() {
    let _turn = one_at_a_time();
    let Some(cluster) = fixtures::require("etcd", EtcdCluster::start_with_peer_proxies()) else {
        return;
    };
    let writer = backend(&cluster.url(), "cut");
    let key = fresh_name("cut");
    let lease = must_acquire(&writer, &key, "writer", LEASE);
    // The leader: it must notice it lost its quorum and step down.
    let alone = cluster.leader().unwrap();
    let config = fast("cut");
    let bound = bound(&config);
    let cut_off = EtcdBackend::connect_with(
        &format!("etcd://{}", cluster.members()[alone].endpoint()),
        config,
    )
    .unwrap();
    assert!(cut_off.state(&key).unwrap().leader().is_some());
    let majority: Vec<String> = (0..3)
        .filter(|&i| i != alone)
        .map(|i| cluster.members()[i].endpoint())
        .collect();
    let majority = backend(&format!("etcd://{}", majority.join(",")), "cut");

    cluster.cut_off(alone).unwrap();
    // Reads and writes alike, every call an error: never a stale "free", never a made-up
    // acquisition; the member's leadership ends meanwhile ("no leader" after that).
    let fresh = fresh_name("cut-fresh");
    for _ in 0..3 {
        fails_fast("state", &key, bound, || cut_off.state(&key));
        fails_fast("try_acquire", &key, bound, || {
            cut_off.try_acquire(request(&key, "cut", LEASE))
        });
        fails_fast("try_acquire of a free lock", &fresh, bound, || {
            cut_off.try_acquire(request(&fresh, "cut", LEASE))
        });
        fails_fast("extend", &key, bound, || {
            cut_off.extend(Renewal::new(&lease, LEASE))
        });
    }
    // The other side elects a leader and serves: the lock is still the writer's.
    let seen = recovers(RECOVERY, || {
        majority.try_acquire(request(&key, "majority", LEASE))
    });
    assert!(
        matches!(&seen, AcquireOutcome::Held(Some(holder)) if holder.fencing_token == lease.fencing_token),
        "{seen:?}"
    );
    let extended = recovers(RECOVERY, || majority.extend(Renewal::new(&lease, LEASE)));
    assert!(matches!(extended, ExtendOutcome::Extended { .. }));
    assert_ne!(
        cluster.leader().unwrap(),
        alone,
        "the cut-off member still leads"
    );

    cluster.heal_cut();
    cluster.wait_until_healthy().unwrap();
    let state = recovers(RECOVERY, || cut_off.state(&key));
    assert_eq!(
        state.leader().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    let taken = recovers(RECOVERY, || {
        cut_off.try_acquire(request(&fresh, "cut", LEASE))
    });
    assert!(matches!(taken, AcquireOutcome::Acquired(_)), "{taken:?}");
}

#[test]
fn a_whole_cluster_restart_keeps_the_holder_and_the_counter() {
    let _turn = one_at_a_time();
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let backend = backend(&cluster.url(), "restart");
    let key = fresh_name("restart");
    let lease = must_acquire(&backend, &key, "holder", LEASE);

    cluster.restart_all().unwrap();
    let raw = Raw::connect(&cluster.endpoints(), None);
    assert_eq!(stored_fence(&raw, "restart", &key), lease.fencing_token);
    let state = recovers(RECOVERY, || backend.state(&key));
    assert_eq!(
        state.leader().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    let extended = recovers(RECOVERY, || backend.extend(Renewal::new(&lease, LEASE)));
    assert!(matches!(extended, ExtendOutcome::Extended { .. }));
    assert_eq!(
        backend
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );
    // A backend that never saw a token before: the stored counter keeps it above.
    let fresh = EtcdBackend::connect_with(&cluster.url(), fast("restart")).unwrap();
    let next = must_acquire(&fresh, &key, "next", LEASE);
    assert!(next.fencing_token > lease.fencing_token);
}

#[test]
fn losing_quorum_fails_every_call_transiently_and_recovers() {
    let _turn = one_at_a_time();
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let config = fast("quorum");
    let bound = bound(&config);
    let backend = EtcdBackend::connect_with(&cluster.url(), config).unwrap();
    let key = fresh_name("quorum");
    let lease = must_acquire(&backend, &key, "holder", LEASE);

    kill_two(&mut cluster);
    checks::a_stopped_server_fails_closed_within_the_timeout(
        &backend, &lease, bound, false, "etcd",
    );
    cluster.start_all().unwrap();
    let state = recovers(RECOVERY, || backend.state(&key));
    assert_eq!(
        state.leader().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    let extended = recovers(RECOVERY, || backend.extend(Renewal::new(&lease, LEASE)));
    assert!(matches!(extended, ExtendOutcome::Extended { .. }));
}

/// Kills two of the three members, the leader among them.
fn kill_two(cluster: &mut EtcdCluster) {
    let leader = cluster.leader().unwrap();
    let second = (leader + 1) % 3;
    cluster.members_mut()[leader].kill();
    cluster.members_mut()[second].kill();
}

/// One member of three down is a failure etcd is built for: the two others serve every
/// call. The client still counts the dead member among its choices, so a call refused
/// on its way there must be tried again, not failed.
#[test]
fn with_one_member_down_the_others_serve_every_call() {
    let _turn = one_at_a_time();
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let backend = backend(&cluster.url(), "one-down");
    let key = fresh_name("one-down");
    let lease = must_acquire(&backend, &key, "holder", LEASE);
    let down = (cluster.leader().unwrap() + 1) % 3;
    cluster.members_mut()[down].kill();
    cluster.wait_until_quorum().unwrap();
    for round in 0..100 {
        let state = backend.state(&key);
        let state = state.unwrap_or_else(|err| panic!("call {round}: {err}"));
        assert_eq!(
            state.leader().map(|holder| holder.fencing_token),
            Some(lease.fencing_token)
        );
        let extended = backend.extend(Renewal::new(&lease, LEASE));
        let extended = extended.unwrap_or_else(|err| panic!("call {round}: {err}"));
        assert!(matches!(extended, ExtendOutcome::Extended { .. }));
    }
}
