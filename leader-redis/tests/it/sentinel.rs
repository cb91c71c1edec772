//! Failovers behind Redis Sentinel, with real processes: a master, its replica and three
//! sentinels of each test's own (`leader_rig::fixtures::RedisSentinel`). The master
//! is killed with SIGKILL while a lock is held, while a waiter waits, while three
//! processes contend (with and without replica acknowledgement); a replica made to lag is promoted without the last lock, and a fence
//! at the resource refuses the stale holder. Each failover prints the time from the kill
//! to the next successful acquire.
//!
//! Every scenario is a function taking the `RedisConfig` the backends are built with, so
//! the same scenarios can run again with other settings (replica acknowledgement, say):
//! a new variant is one more `#[test]` calling the scenario with its config.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, LeaderElectionOptions, Lease,
    LockBackend, LockName, OwnerToken, ReleaseOutcome, ReleaseRequest, Renewal,
};
use leader_redis::fence::{Fence, FenceOutcome};
use leader_redis::{RedisBackend, RedisConfig};
use leader_rig::contenders::{Action, Contender, Contenders, micros_now};
use leader_rig::fixtures::{self, RedisSentinel};
use leader_testkit::{fresh_name, wait_until};

/// How long the sentinels may take to agree on a new master, and service to resume, on
/// a loaded two-core machine (it takes about two seconds when idle: one second until the
/// master is down for a sentinel, then the vote and the promotion).
const RECOVERY: Duration = Duration::from_secs(30);

/// The settings every scenario runs with here.
fn base_config() -> RedisConfig {
    RedisConfig::default()
        .with_connect_timeout(Duration::from_millis(300))
        .with_response_timeout(Duration::from_millis(800))
}

fn private_set() -> Option<RedisSentinel> {
    fixtures::require("redis sentinels", RedisSentinel::start())
}

fn backend(set: &RedisSentinel, config: &RedisConfig) -> RedisBackend {
    RedisBackend::connect_sentinel(&set.url(), config.clone()).unwrap()
}

fn request<'a>(key: &'a LockName, holder: &'a str, lease: Duration) -> AcquireRequest<'a> {
    AcquireRequest::new(key, OwnerToken::random(), holder, lease)
}

/// `Some(answer)`, or `None` for a transient error; any other error fails the test.
fn ok_or_transient<T>(answer: Result<T, Error>) -> Option<T> {
    match answer {
        Ok(value) => Some(value),
        Err(err) => {
            assert!(err.is_transient(), "a permanent error in a failover: {err}");
            None
        }
    }
}

fn must_acquire(backend: &RedisBackend, key: &LockName, holder: &str, lease: Duration) -> Lease {
    match backend.try_acquire(request(key, holder, lease)).unwrap() {
        AcquireOutcome::Acquired(lease) => lease,
        other => panic!("{holder} could not take {key}: {other:?}"),
    }
}

/// Waits until the replica has everything the master acknowledged (`WAIT 1`), so that a
/// failover now loses nothing.
fn replicate(set: &RedisSentinel) {
    let master = set.master_addr().unwrap();
    let mut conn = redis::Client::open(format!("redis://{master}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let acked: u32 = redis::cmd("WAIT")
        .arg(1)
        .arg(10_000)
        .query(&mut conn)
        .unwrap();
    assert!(acked >= 1, "the replica did not acknowledge");
}

/// Runs an elector's action on a fresh lock every 20 ms until it runs: how long after
/// `killed` service resumed. Nobody else holds a fresh name, so every answer must be a run
/// or a transient error: a skipped run (`Ok(None)`) while the master is gone would be a
/// made-up answer.
fn next_acquire(backend: &RedisBackend, killed: Instant) -> Duration {
    let options = LeaderElectionOptions::default()
        .with_node_id("probe")
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(5));
    let elector = leader_blocking::LeaderElector::new(backend.clone(), options).unwrap();
    loop {
        let key = fresh_name("sentinel-probe");
        match ok_or_transient(elector.run_if_leader(key.as_str(), || ())) {
            Some(Some(())) => return killed.elapsed(),
            Some(None) => panic!("a run on a fresh name was skipped during the failover"),
            None => {}
        }
        assert!(
            killed.elapsed() < RECOVERY,
            "no acquire within {RECOVERY:?} of the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The async twin of [`next_acquire`].
async fn next_acquire_async(backend: &RedisBackend, killed: Instant) -> Duration {
    use leader_core::AsyncLockBackend;
    loop {
        let key = fresh_name("sentinel-probe");
        let answer =
            AsyncLockBackend::try_acquire(backend, request(&key, "probe", Duration::from_secs(5)))
                .await;
        match ok_or_transient(answer) {
            Some(AcquireOutcome::Acquired(_)) => return killed.elapsed(),
            Some(other) => panic!("a fresh name is not free during the failover: {other:?}"),
            None => {}
        }
        assert!(
            killed.elapsed() < RECOVERY,
            "no acquire within {RECOVERY:?} of the kill"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn report(scenario: &str, took: Duration) {
    println!(
        "sentinel failover [{scenario}]: kill -9 to the next successful acquire: {} ms",
        took.as_millis()
    );
}

/// A lock held (and replicated) when the master is killed is still held on the new master:
/// another owner never gets it before the lease ends, the holder renews it there, and the
/// next owner's token is larger.
fn a_held_lock_survives_a_failover(config: RedisConfig) {
    let Some(mut set) = private_set() else {
        return;
    };
    let (holder, other) = (backend(&set, &config), backend(&set, &config));
    let key = fresh_name("sentinel-held");
    let lease_time = Duration::from_secs(8);
    let taken = Instant::now();
    let lease = must_acquire(&holder, &key, "holder", lease_time);
    replicate(&set);

    let old = set.kill_master().unwrap();
    let killed = Instant::now();
    // Until the lease ends, the other owner sees the holder or a transient error.
    let mut refusals = 0;
    while refusals < 3 {
        match ok_or_transient(other.try_acquire(request(&key, "other", lease_time))) {
            Some(AcquireOutcome::Held(seen)) => {
                if let Some(seen) = seen {
                    assert_eq!(seen.fencing_token, lease.fencing_token, "a wrong holder");
                }
                refusals += 1;
            }
            Some(AcquireOutcome::Acquired(stolen)) => {
                assert!(
                    taken.elapsed() >= lease_time,
                    "another owner took a held lock {:?} after it was taken (token {})",
                    taken.elapsed(),
                    stolen.fencing_token
                );
                panic!("the holder's lease ran out before the failover ended");
            }
            Some(other) => panic!("an unexpected answer: {other:?}"),
            None => std::thread::sleep(Duration::from_millis(20)),
        }
        assert!(killed.elapsed() < RECOVERY, "no answer after the kill");
    }
    report("held lock", next_acquire(&other, killed));
    set.wait_for_new_master(old, RECOVERY).unwrap();

    // The holder renews on the new master (no restart of its backend).
    let renewed = wait_until("the holder to renew", RECOVERY, || {
        match ok_or_transient(holder.extend(Renewal::new(&lease, lease_time))) {
            Some(ExtendOutcome::Extended { .. }) => true,
            Some(other) => panic!("the replicated lock was lost in the failover: {other:?}"),
            None => false,
        }
    });
    assert!(renewed < RECOVERY);
    assert_eq!(
        holder
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );
    let next = must_acquire(&other, &key, "other", lease_time);
    assert!(
        next.fencing_token > lease.fencing_token,
        "{} then {}",
        lease.fencing_token,
        next.fencing_token
    );
}

#[test]
fn a_held_lock_survives_a_failover_on_the_blocking_api() {
    a_held_lock_survives_a_failover(base_config());
}

/// A waiter waiting (async, on tokio) for a held lock when the master is killed: its
/// release subscription moves to the new master, and the holder's release there wakes it.
fn an_async_waiter_is_woken_on_the_new_master(config: RedisConfig) {
    let Some(mut set) = private_set() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (holder, waiter) = (backend(&set, &config), backend(&set, &config));
    let key = fresh_name("sentinel-wait");
    let lease = must_acquire(&holder, &key, "holder", Duration::from_secs(30));
    replicate(&set);

    let options = LeaderElectionOptions::default()
        .with_node_id("waiter")
        .with_wait_time(Duration::from_secs(40))
        .with_lease_time(Duration::from_secs(10));
    let elector = leader_async::AsyncLeaderElector::new(waiter.clone(), options).unwrap();
    let name = key.to_string();
    // A wait the failover cut short is a transient error (asserted): the waiter waits
    // again, as an application would.
    let waiting = runtime.spawn(async move {
        loop {
            let run = elector
                .run_if_leader_with(&name, |ctx| {
                    let token = ctx.fencing_token();
                    async move { Ok::<_, Infallible>((token, Instant::now())) }
                })
                .await;
            match ok_or_transient(run).and_then(|run| run.into_value()) {
                Some(ran) => break ran,
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    });
    wait_until("the waiter to subscribe", RECOVERY, || {
        waiter.is_subscribed()
    });

    let old = set.kill_master().unwrap();
    let killed = Instant::now();
    let took = runtime.block_on(next_acquire_async(&waiter, killed));
    report("async waiter", took);
    set.wait_for_new_master(old, RECOVERY).unwrap();
    wait_until("the subscription on the new master", RECOVERY, || {
        waiter.is_subscribed()
    });

    let released = loop {
        if let Some(outcome) =
            ok_or_transient(holder.release(ReleaseRequest::new(&lease, Duration::ZERO)))
        {
            assert_eq!(
                outcome,
                ReleaseOutcome::Released,
                "the replicated lock is gone"
            );
            break Instant::now();
        }
        assert!(killed.elapsed() < RECOVERY, "the holder could not release");
        std::thread::sleep(Duration::from_millis(20));
    };
    let (token, started) = runtime.block_on(waiting).unwrap();
    assert!(
        token > lease.fencing_token,
        "{} then {token}",
        lease.fencing_token
    );
    // Woken by the release, not by its next poll of a 40 s wait.
    let woken = started.saturating_duration_since(released);
    assert!(
        woken < Duration::from_secs(3),
        "the waiter took {woken:?} after the release"
    );
}

#[test]
fn an_async_waiter_is_woken_on_the_new_master_on_tokio() {
    an_async_waiter_is_woken_on_the_new_master(base_config());
}

/// The replica lags (its link cut and the process stopped) while a holder takes a lock;
/// the master is killed and the replica promoted without that lock. That lost lock is the
/// one overlap a failover allows: another owner takes it while the first still believes
/// it holds. Its token is still larger (it comes from the new master's clock in µs, which
/// is ahead of the lost lock's: both servers run on this host; it would not be larger if
/// the new master's clock were behind), so a fence at the resource refuses the stale
/// holder's write; and the stale holder learns that it lost the lease before its deadline
/// (its renewal finds the lock gone).
fn a_lagging_replica_loses_the_last_lock_and_the_fence_refuses_the_stale_holder(
    config: RedisConfig,
) {
    let Some(mut set) = private_set() else {
        return;
    };
    let Some(resource) = fixtures::shared_redis() else {
        return;
    };
    let resource_url = resource.url();
    let key = fresh_name("sentinel-lag");
    let (fence_key, data_key) = (format!("{{{key}}}:fence"), format!("{{{key}}}:data"));
    let (stale, other) = (backend(&set, &config), backend(&set, &config));

    set.stall_replica().unwrap();
    let lease_time = Duration::from_secs(9);
    let options = LeaderElectionOptions::default()
        .with_node_id("stale")
        .with_lease_time(lease_time)
        .with_auto_extend(true);
    let elector = leader_blocking::LeaderElector::new(stale, options).unwrap();
    let (to_main, from_holder) = mpsc::channel::<(u64, bool, bool)>();
    let (to_holder, from_main) = mpsc::channel::<()>();
    let name = key.to_string();
    let (fence_key2, data_key2, url2) = (fence_key.clone(), data_key.clone(), resource_url.clone());
    let holder = std::thread::spawn(move || {
        elector.run_if_leader_with(&name, |ctx| {
            let mut conn = redis::Client::open(url2.as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            let fence = Fence::new(fence_key2.as_str(), ctx.fencing_token());
            let first = fence
                .set(&data_key2, "stale-holder-1")
                .invoke(&mut conn)
                .unwrap();
            to_main
                .send((ctx.fencing_token(), first.is_accepted(), false))
                .unwrap();
            // Lost: found by a renewal on the new master, before the deadline passes.
            let lost = ctx.wait_lost_timeout(RECOVERY);
            let before_deadline = lost && Instant::now() < ctx.deadline();
            to_main.send((0, lost, before_deadline)).unwrap();
            from_main.recv().unwrap();
            let late = fence
                .set(&data_key2, "stale-holder-2")
                .invoke(&mut conn)
                .unwrap();
            Ok::<_, Infallible>(late)
        })
    });
    let (stale_token, accepted, _) = from_holder.recv_timeout(RECOVERY).unwrap();
    assert!(accepted, "the first holder's write");

    let old = set.kill_master().unwrap();
    let killed = Instant::now();
    set.resume_replica(old).unwrap();
    // The other owner takes the lock the new master never had: the one overlap.
    let next = loop {
        match ok_or_transient(other.try_acquire(request(&key, "other", lease_time))) {
            Some(AcquireOutcome::Acquired(lease)) => break lease,
            // Only the promoted replica can answer: it must not have the lock.
            Some(other) => panic!("the lagging replica had the lock: {other:?}"),
            None => {}
        }
        assert!(killed.elapsed() < RECOVERY, "no acquire after the failover");
        std::thread::sleep(Duration::from_millis(20));
    };
    report("lagging replica", killed.elapsed());
    set.wait_for_new_master(old, RECOVERY).unwrap();
    assert!(
        next.fencing_token > stale_token,
        "the new master's token {} is not above the lost lock's {stale_token}",
        next.fencing_token
    );
    let mut conn = redis::Client::open(resource_url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let written = Fence::new(fence_key.as_str(), next.fencing_token)
        .set(&data_key, "next-holder")
        .invoke(&mut conn)
        .unwrap();
    assert_eq!(written, FenceOutcome::Accepted);

    let (_, lost, before_deadline) = from_holder.recv_timeout(RECOVERY).unwrap();
    assert!(lost, "the stale holder never learned it lost the lease");
    assert!(
        before_deadline,
        "the stale holder learned it only at its deadline"
    );
    to_holder.send(()).unwrap();
    let late = holder.join().unwrap().unwrap().into_value().unwrap();
    assert_eq!(
        late,
        FenceOutcome::Rejected {
            highest_seen: next.fencing_token
        }
    );
    let data: String = redis::cmd("GET").arg(&data_key).query(&mut conn).unwrap();
    assert_eq!(data, "next-holder");
}

#[test]
fn a_lagging_replica_loses_the_last_lock_and_the_fence_refuses_the_stale_holder_on_the_blocking_api()
 {
    a_lagging_replica_loses_the_last_lock_and_the_fence_refuses_the_stale_holder(base_config());
}

/// Failover after failover (each killed master back as a replica of the new one): the
/// same backend serves after each, within the bound. Prints p50 and max.
fn service_resumes_after_each_failover(config: RedisConfig) {
    let Some(mut set) = private_set() else {
        return;
    };
    let backend = backend(&set, &config);
    let key = fresh_name("sentinel-repeat");
    let mut last_token =
        must_acquire(&backend, &key, "warm-up", Duration::from_millis(1)).fencing_token;
    let mut took = Vec::new();
    for _ in 0..2 {
        let old = set.kill_master().unwrap();
        let killed = Instant::now();
        took.push(next_acquire(&backend, killed));
        set.wait_for_new_master(old, RECOVERY).unwrap();
        // Tokens keep going forward on each new master (the lock was free: nothing lost
        // can explain a smaller one).
        let lease = loop {
            // A `Held`: the 1 ms lease of the round before may still be running out.
            let answer = backend.try_acquire(request(&key, "n", Duration::from_millis(1)));
            if let Some(AcquireOutcome::Acquired(lease)) = ok_or_transient(answer) {
                break lease;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(
            lease.fencing_token > last_token,
            "{last_token} then {}",
            lease.fencing_token
        );
        last_token = lease.fencing_token;
        set.restart_as_replica(old).unwrap();
    }
    took.sort();
    println!(
        "sentinel failovers: kill -9 to the next successful acquire over {}: p50 {} ms, max {} ms",
        took.len(),
        took[(took.len() - 1) / 2].as_millis(),
        took[took.len() - 1].as_millis()
    );
}

#[test]
fn service_resumes_after_each_failover_on_the_blocking_api() {
    service_resumes_after_each_failover(base_config());
}

/// With replica acknowledgement on, a lock is granted only once the replica has it. While
/// the replica lags (stopped, its link cut) an acquire is refused with a transient error
/// and its grant released on the master; a lock granted before the lag survives the
/// failover to that replica with its token. The new master has no replica of its own
/// until the old one comes back as one: until then acknowledged acquires fail closed, and
/// then they succeed again without a restart of the backend.
#[test]
fn with_replica_acks_a_lagging_replica_cannot_lose_a_granted_lock() {
    let Some(mut set) = private_set() else {
        return;
    };
    let acked_config = base_config().with_replica_acks(1, Duration::from_millis(250));
    let (acked, plain) = (backend(&set, &acked_config), backend(&set, &base_config()));
    // Longer than every bounded wait below together (each up to `RECOVERY`), so that only
    // the failover could take the lock: with 20 s, a slow run (19.8 s from the kill to the
    // first acknowledged acquire, on a loaded machine) saw the lease run out, rightly
    // answered `NotHeld`.
    let lease_time = RECOVERY * 10;
    let granted_key = fresh_name("sentinel-acked");
    // The replica's first acknowledgement may come only after its initial sync.
    replicate(&set);
    let granted = must_acquire(&acked, &granted_key, "holder", lease_time);

    set.stall_replica().unwrap();
    let refused_key = fresh_name("sentinel-unacked");
    match acked.try_acquire(request(&refused_key, "holder", lease_time)) {
        Err(err) => assert!(
            err.is_transient(),
            "a permanent error for a lagging replica: {err}"
        ),
        Ok(outcome) => panic!("granted without the replica's acknowledgement: {outcome:?}"),
    }
    // The refused grant was released on the master: another owner takes it at once.
    let taken = must_acquire(&plain, &refused_key, "other", lease_time);
    assert_eq!(
        plain
            .release(ReleaseRequest::new(&taken, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );

    let old = set.kill_master().unwrap();
    let killed = Instant::now();
    set.resume_replica(old).unwrap();
    let promoted = set.wait_for_new_master(old, RECOVERY).unwrap();
    // The acknowledged lock is on the promoted replica, with its token.
    wait_until(
        "the new master to answer for the granted lock",
        RECOVERY,
        || match ok_or_transient(plain.try_acquire(request(&granted_key, "other", lease_time))) {
            Some(AcquireOutcome::Held(seen)) => {
                if let Some(seen) = seen {
                    assert_eq!(seen.fencing_token, granted.fencing_token, "a wrong holder");
                }
                true
            }
            Some(other) => panic!("the acknowledged lock was lost in the failover: {other:?}"),
            None => false,
        },
    );
    // No replica behind the new master yet: acknowledged acquires are refused, never granted.
    let fresh = fresh_name("sentinel-no-replica");
    match acked.try_acquire(request(&fresh, "holder", lease_time)) {
        Err(err) => assert!(err.is_transient(), "{err}"),
        Ok(outcome) => panic!("granted with no replica to acknowledge it: {outcome:?}"),
    }

    set.restart_as_replica(old).unwrap();
    wait_until(
        "an acknowledged acquire on the new master",
        RECOVERY,
        || {
            matches!(
                ok_or_transient(acked.try_acquire(request(&fresh, "holder", lease_time))),
                Some(AcquireOutcome::Acquired(_))
            )
        },
    );
    report("replica acks, old master back as replica", killed.elapsed());
    // The holder renews its lock, acknowledged, on the new master.
    wait_until("the holder to renew", RECOVERY, || {
        match ok_or_transient(acked.extend(Renewal::new(&granted, lease_time))) {
            Some(ExtendOutcome::Extended { .. }) => true,
            Some(other) => panic!(
                "the acknowledged lock was lost: {other:?} (promoted {promoted}, master now {:?})",
                set.master_addr()
            ),
            None => false,
        }
    });
    assert_eq!(
        acked
            .release(ReleaseRequest::new(&granted, Duration::ZERO))
            .unwrap(),
        ReleaseOutcome::Released
    );
}

const CONTENDERS: usize = 3;

/// A child process of a contention test: leads `the-one-job` as often as it can until
/// told to stop. Every error is transient (asserted), and no run is skipped while the
/// store is unreachable: an elector answers `Ok(None)` only when another holder was seen.
fn contend(child: Contender) {
    let backend = RedisBackend::connect_sentinel(child.url(), base_config()).unwrap();
    let options = LeaderElectionOptions::default()
        .with_node_id(format!("child-{}", std::process::id()))
        .with_wait_time(Duration::from_millis(300))
        .with_lease_time(Duration::from_secs(2));
    let elector = leader_blocking::LeaderElector::new(backend, options).unwrap();
    child.run(Duration::from_millis(20), || {
        elector
            .run_if_leader_with("the-one-job", |lease| {
                let hold = Duration::from_millis(rand::random_range(5..20));
                Ok::<_, Infallible>(Action::hold(lease.fencing_token(), hold))
            })
            .map(|outcome| outcome.into_value())
    });
}

/// In a child process of a contention test: runs [`contend`] and answers `true`, for the
/// test to return at once.
fn run_as_child() -> bool {
    Contender::from_env().map(contend).is_some()
}

/// Three processes lead one job in turn while the master is killed, the replica promoted
/// and the old master brought back as a replica. Tokens strictly increase in the order
/// the actions started; two actions overlap at most once, and only across the kill (a lock
/// taken just before it, not yet replicated, lost in the failover).
fn processes_contending_through_a_failover(set: &mut RedisSentinel, test: &str) {
    let contenders = Contenders::spawn(test, CONTENDERS, &set.url());
    contenders.progress(10);
    let probe = RedisBackend::connect_sentinel(&set.url(), base_config()).unwrap();
    let old = set.kill_master().unwrap();
    let killed_at = Instant::now();
    let killed = micros_now();
    report("three processes", next_acquire(&probe, killed_at));
    set.wait_for_new_master(old, RECOVERY).unwrap();
    contenders.progress(10);
    set.restart_as_replica(old).unwrap();
    contenders.progress(10);

    let all = contenders.finish();
    assert!(
        all.iter().filter(|action| action.start > killed).count() >= 20,
        "too few actions after the failover"
    );
    let mut overlaps = 0;
    for pair in all.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.overlaps(&b) {
            overlaps += 1;
            assert!(
                a.start < killed && b.start > killed,
                "two actions at once away from the kill at {killed}: {a:?}, {b:?}"
            );
        }
    }
    assert!(overlaps <= 1, "{overlaps} overlaps across one failover");
}

#[test]
fn processes_contending_through_a_failover_stay_ordered() {
    if run_as_child() {
        return;
    }
    let Some(mut set) = private_set() else {
        return;
    };
    processes_contending_through_a_failover(
        &mut set,
        "sentinel::processes_contending_through_a_failover_stay_ordered",
    );
}

/// How many acknowledged acquires the test sees refused by the new master (each waits out
/// the ack timeout) while the children must not lead: the window in which nothing may
/// be granted.
const REFUSALS: usize = 5;

/// The three processes again, with replica acknowledgement (on their URL): every grant is
/// on the replica before it is reported, so the failover loses none and no two actions
/// ever overlap. The promoted replica has no replica of its own, so acquires fail closed
/// (transient errors, nobody leads) until the old master is back as its replica; then
/// service resumes. Prints the time from the kill to the first acknowledged acquire.
#[test]
fn processes_contending_through_a_failover_with_replica_acks_never_overlap() {
    const TEST: &str =
        "sentinel::processes_contending_through_a_failover_with_replica_acks_never_overlap";
    if run_as_child() {
        return;
    }
    let Some(mut set) = private_set() else {
        return;
    };
    // The replica's first acknowledgement may come only after its initial sync.
    replicate(&set);
    let url = format!("{}?replica_acks=1&replica_ack_timeout=250ms", set.url());
    let acked = RedisBackend::connect_sentinel(&url, base_config()).unwrap();
    let contenders = Contenders::spawn(TEST, CONTENDERS, &url);
    contenders.progress(10);

    let old = set.kill_master().unwrap();
    let killed_at = Instant::now();
    let killed = micros_now();
    set.wait_for_new_master(old, RECOVERY).unwrap();
    // Refused by the new master itself (its `WAIT` found no replica), not only
    // unreachable; then a few more refusals, during which no child may lead either.
    let mut refusals = 0;
    let mut closed_from = None;
    while refusals < REFUSALS {
        let fresh = fresh_name("sentinel-no-replica");
        match acked.try_acquire(request(&fresh, "probe", Duration::from_secs(5))) {
            Err(err) => {
                assert!(err.is_transient(), "a permanent error in a failover: {err}");
                if err.to_string().contains("0 of 1 replicas") {
                    closed_from.get_or_insert_with(micros_now);
                    refusals += 1;
                }
            }
            Ok(outcome) => panic!("granted with no replica to acknowledge it: {outcome:?}"),
        }
        assert!(
            killed_at.elapsed() < RECOVERY,
            "the new master did not refuse within {RECOVERY:?} of the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let closed_from = closed_from.unwrap();
    let closed_until = micros_now();

    set.restart_as_replica(old).unwrap();
    let back_at = Instant::now();
    let resumed = next_acquire(&acked, back_at);
    // Most of the total is the fixture waiting for the sentinels to settle
    // (`failover-timeout`) before it restarts the old master, and its sync: in production,
    // however long it takes to bring a replica back.
    println!(
        "sentinel failover [three processes, replica acks]: kill -9 to the first acknowledged \
         acquire: {} ms ({} ms after the old master was back as a connected replica)",
        (back_at.duration_since(killed_at) + resumed).as_millis(),
        resumed.as_millis()
    );
    contenders.progress(10);

    let all = contenders.finish();
    assert!(
        all.iter()
            .filter(|action| action.start > closed_until)
            .count()
            >= 10,
        "too few actions after the old master came back"
    );
    for pair in all.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(
            !a.overlaps(&b),
            "two actions at once (kill at {killed}): {a:?}, {b:?}"
        );
    }
    let granted: Vec<_> = all
        .iter()
        .filter(|action| action.start > closed_from && action.start < closed_until)
        .collect();
    assert!(
        granted.is_empty(),
        "led while the new master had no replica: {granted:?}"
    );
}

#[test]
fn sentinel_urls_are_checked_and_never_show_their_password() {
    for bad in [
        "redis+sentinel://:hunter2@127.0.0.1:26379",
        "redis+sentinel://:hunter2@127.0.0.1:notaport/m",
        "redis+sentinel://:hunter2@127.0.0.1/m/notadb",
    ] {
        let err = RedisBackend::connect_sentinel(bad, base_config()).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            matches!(err, leader_redis::ConnectError::InvalidUrl { .. }),
            "{text}"
        );
    }
    assert_eq!(
        leader_redis::redacted_url("redis+sentinel://app:hunter2@a:1,b:2/m/3"),
        "redis+sentinel://app:***@a:1,b:2/m/3"
    );
    // Sentinels that are not there: a transient error, never an answer.
    let backend = RedisBackend::connect_sentinel(
        &format!("redis+sentinel://:hunter2@{}/m", unused_addr()),
        base_config(),
    )
    .unwrap();
    let key = fresh_name("sentinel-none");
    let err = backend
        .try_acquire(request(&key, "nobody", Duration::from_secs(1)))
        .unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
}

/// A free port of 127.0.0.1 (nothing listens there).
fn unused_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}
