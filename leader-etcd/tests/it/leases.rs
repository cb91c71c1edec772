//! No etcd lease outlives the call that granted it unless a lock hangs on it: calls cut by
//! the operation timeout on a slow link (the testkit's proxy delays every chunk), after
//! their grant or during it, leave no lease behind, long before the leases' TTL of an
//! hour; and an extend whose transaction did land keeps its lock, whether its call was
//! cut (the answer dropped) or failed (the connection reset). Each test has a
//! one-member server of its own, so the cluster's lease list (`LeaseLeases`) is the
//! test's alone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime};

use crate::common::{Raw, config, must_acquire, private_server};
use leader_core::{
    AcquireRequest, GroupSlots, Lease, LockBackend, LockName, OwnerToken, ReleaseRequest, Renewal,
    SlotRequest,
};
use leader_etcd::{EtcdBackend, EtcdConfig};
use leader_rig::FaultProxy;
use leader_testkit::{fresh_name, wait_until};

/// The lease every cut call asks for: were it left behind, it would stay an hour.
const HOUR: Duration = Duration::from_secs(3600);
/// How long a call may take before it is cut.
const CUT_AFTER: Duration = Duration::from_millis(2500);
/// How long the leases a cut call leaves may take to go: well short of their TTL.
const GONE_WITHIN: Duration = Duration::from_secs(30);

/// A backend through `proxy`, its calls cut after [`CUT_AFTER`]; the HTTP/2 keep-alive
/// far apart, so the slow link's queue is the calls'.
fn through(proxy: &FaultProxy, prefix: &str) -> EtcdBackend {
    let config: EtcdConfig = config(prefix)
        .with_connect_timeout(Duration::from_secs(2))
        .with_operation_timeout(CUT_AFTER)
        .with_keep_alive(Duration::from_secs(60));
    EtcdBackend::connect_with(&format!("etcd://{}", proxy.addr()), config).unwrap()
}

/// The ids of every lease of the cluster, in order.
fn leases(raw: &Raw) -> Vec<i64> {
    let answer = raw
        .with(|c| async move { c.lease_client().leases().await })
        .unwrap();
    let mut ids: Vec<i64> = answer.leases().iter().map(|lease| lease.id()).collect();
    ids.sort_unstable();
    ids
}

/// The keys that hang on the lease `id` (`None` once it is gone).
fn keys_on(raw: &Raw, id: i64) -> Option<Vec<String>> {
    let options = etcd_client::LeaseTimeToLiveOptions::new().with_keys();
    let answer = raw
        .with(|c| async move { c.lease_client().time_to_live(id, Some(options)).await })
        .ok()?;
    (answer.ttl() != -1).then(|| {
        answer
            .keys()
            .iter()
            .map(|key| String::from_utf8_lossy(key).into_owned())
            .collect()
    })
}

/// Whether a lock hangs on the lease `id` (a lock or holder key; a void key marks a lease
/// about to be revoked).
fn holds_a_lock(raw: &Raw, id: i64) -> bool {
    keys_on(raw, id).is_some_and(|keys| {
        keys.iter()
            .any(|key| key.contains("/lock/") || key.contains("/holder/"))
    })
}

/// The leases of the cluster that no lock hangs on, with their TTL left (s).
fn unused_leases(raw: &Raw) -> Vec<(i64, i64)> {
    leases(raw)
        .into_iter()
        .filter(|id| !holds_a_lock(raw, *id))
        .map(|id| {
            let options = etcd_client::LeaseTimeToLiveOptions::new();
            let ttl = raw
                .with(|c| async move { c.lease_client().time_to_live(id, Some(options)).await })
                .map(|answer| answer.ttl())
                .unwrap_or(-1);
            (id, ttl)
        })
        .filter(|(_, ttl)| *ttl != -1)
        .collect()
}

/// How many leases the member at `addr` has granted since it started (its
/// `etcd_debugging_lease_granted_total`), read from `GET /metrics`.
fn granted_total(addr: SocketAddr) -> u64 {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .lines()
        .find_map(|line| {
            line.strip_prefix("etcd_debugging_lease_granted_total ")
                .or_else(|| line.strip_prefix("etcd_debugging_server_lease_granted_total "))
        })
        .and_then(|count| count.trim().parse::<f64>().ok())
        .map(|count| count as u64)
        .unwrap_or_else(|| panic!("no lease_granted_total in the member's metrics"))
}

/// Runs `call`, which must be cut: a transient error, after about [`CUT_AFTER`].
#[track_caller]
fn cut<T: std::fmt::Debug>(what: &str, call: impl FnOnce() -> Result<T, leader_core::Error>) {
    let started = std::time::Instant::now();
    let result = call();
    let took = started.elapsed();
    match result {
        Err(err) if err.is_transient() => {}
        other => panic!("{what} was not cut: {other:?} after {took:?}"),
    }
    assert!(
        took >= CUT_AFTER - Duration::from_millis(100),
        "{what} failed after {took:?}, before it could be cut"
    );
}

/// Waits until every lease of the cluster has a key on it, at most [`GONE_WITHIN`]
/// (the leases the cut calls left last an hour).
fn no_unused_lease_stays(raw: &Raw) {
    let mut last = Vec::new();
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("every unused lease to be revoked", GONE_WITHIN, || {
            std::thread::sleep(Duration::from_millis(100));
            last = unused_leases(raw);
            last.is_empty()
        })
    }));
    assert!(
        waited.is_ok(),
        "leases with no key on them, (id, TTL left in s), {GONE_WITHIN:?} after the calls: {last:?}"
    );
}

#[test]
fn calls_cut_between_their_grant_and_their_transaction_leave_no_lease() {
    let Some(server) = private_server() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let direct = EtcdBackend::connect_with(&server.url(), config("cut-txn")).unwrap();
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let slow = through(&proxy, "cut-txn");

    // The locks the cut calls go for, held directly: each cut transaction is a refusal,
    // so the lease it was granted for is of no use.
    let lock = fresh_name("cut-lock");
    let held = must_acquire(&direct, &lock, "holder", Duration::from_secs(60));
    let group = GroupSlots::new(2)
        .unwrap()
        .keys(&fresh_name("cut-group"))
        .unwrap();
    for slot in group.iter() {
        must_acquire(&direct, slot, "holder", Duration::from_secs(60));
    }
    let before = leases(&raw);
    assert_eq!(before.len(), 3, "{before:?}");
    slow.state(&lock).unwrap(); // connected before the link slows down

    // A request answers in about three latencies (one chunk up, two down: 1.5 to 2 s),
    // the next in three more: the call is cut at 2.5 s, its transaction on its way.
    proxy.set_latency(Duration::from_millis(500));
    let granted = granted_total(server.addr());
    cut("an acquire", || {
        slow.try_acquire(AcquireRequest::new(&lock, OwnerToken::random(), "n", HOUR))
    });
    cut("a group's slot acquire", || {
        let request = AcquireRequest::new(group.group(), OwnerToken::random(), "n", HOUR);
        slow.try_acquire_slot(SlotRequest::group(request, &group, 0))
    });
    let not_mine = Lease::new(
        lock.clone(),
        OwnerToken::random(),
        "n",
        held.fencing_token,
        held.acquired_at,
        held.expires_at,
    );
    cut("an extend", || slow.extend(Renewal::new(&not_mine, HOUR)));
    let now = SystemTime::now();
    let kept = Lease::new(
        lock.clone(),
        OwnerToken::random(),
        "n",
        held.fencing_token,
        now,
        now + HOUR,
    );
    cut("a release that keeps the lock", || {
        slow.release(ReleaseRequest::new(&kept, HOUR))
    });
    let grants = granted_total(server.addr()) - granted;
    assert!(
        grants >= 4,
        "only {grants} of the 4 cut calls' grants landed"
    );

    // The link recovers.
    proxy.heal();
    no_unused_lease_stays(&raw);
    assert_eq!(leases(&raw), before);
    assert_eq!(
        direct
            .state(&lock)
            .unwrap()
            .leader()
            .map(|h| h.fencing_token),
        Some(held.fencing_token)
    );
}

#[test]
fn calls_cut_while_their_grant_is_on_its_way_leave_no_lease() {
    let Some(server) = private_server() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let slow = through(&proxy, "cut-grant");
    let lock = fresh_name("cut-grant");
    slow.state(&lock).unwrap(); // connected before the link slows down
    assert_eq!(leases(&raw), Vec::<i64>::new());

    // A grant answers in two or three latencies (3 to 4.5 s), after the call was cut at
    // 2.5 s. It lands at the server after one, all the same.
    proxy.set_latency(Duration::from_millis(1500));
    let granted = granted_total(server.addr());
    for _ in 0..2 {
        cut("an acquire", || {
            slow.try_acquire(AcquireRequest::new(&lock, OwnerToken::random(), "n", HOUR))
        });
    }
    wait_until("the cut calls' grants to land", GONE_WITHIN, || {
        std::thread::sleep(Duration::from_millis(100));
        granted_total(server.addr()) - granted >= 2
    });

    proxy.heal();
    no_unused_lease_stays(&raw);
    // Nothing was taken: every transaction that might have taken the lock was cut first.
    assert!(slow.state(&lock).unwrap().leader().is_none());
}

#[test]
fn a_cut_extend_whose_transaction_landed_keeps_the_lock() {
    let Some(server) = private_server() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let slow = through(&proxy, "cut-extend");
    let lock: LockName = fresh_name("cut-extend");
    // A short first lease: the extend moves the lock off it, and it then ends on its own
    // (the cut call never learned its id).
    let lease = must_acquire(&slow, &lock, "holder", Duration::from_secs(5));
    let first = lease_of(&raw, &format!("cut-extend/lock/{lock}")).expect("the lock key");

    // The extend's transaction lands; its answer is dropped (a partition from then on),
    // and the call is cut at its operation timeout.
    proxy.set_latency(Duration::from_millis(300));
    let extend = {
        let (slow, lease) = (slow.clone(), lease.clone());
        std::thread::spawn(move || slow.extend(Renewal::new(&lease, HOUR)))
    };
    wait_until("the extend to move the lock", GONE_WITHIN, || {
        lease_of(&raw, &format!("cut-extend/lock/{lock}")) != Some(first)
    });
    proxy.blackhole();
    let extended = extend.join().unwrap();
    assert!(
        matches!(&extended, Err(err) if err.is_transient()),
        "the call was not cut: {extended:?}"
    );
    proxy.heal();

    // The lock is on the new lease, which the cleanup must not revoke.
    no_unused_lease_stays(&raw);
    let state = slow.state(&lock).unwrap();
    assert_eq!(
        state.leader().map(|h| h.fencing_token),
        Some(lease.fencing_token),
        "the extend's lease was revoked under its lock: {state:?}"
    );
    let on = leases(&raw);
    assert_eq!(on.len(), 1, "{on:?}");
    assert_eq!(keys_on(&raw, on[0]).map(|keys| keys.len()), Some(2));
    slow.release(ReleaseRequest::new(&lease, Duration::ZERO))
        .unwrap();
}

/// The etcd lease the key `key` hangs on, if it exists.
fn lease_of(raw: &Raw, key: &str) -> Option<i64> {
    let key = key.to_owned();
    let answer = raw
        .with(|c| async move { c.kv_client().get(key, None).await })
        .unwrap();
    answer.kvs().first().map(|kv| kv.lease())
}

#[test]
fn an_extend_whose_answer_was_lost_keeps_the_lock_it_moved() {
    let Some(server) = private_server() else {
        return;
    };
    let raw = Raw::connect(&[server.endpoint()], None);
    let proxy = FaultProxy::start(server.addr()).unwrap();
    let config = config("lost-answer").with_keep_alive(Duration::from_secs(60));
    let slow = EtcdBackend::connect_with(&format!("etcd://{}", proxy.addr()), config).unwrap();
    let lock: LockName = fresh_name("lost-answer");
    // A short first lease, as above: the extend moves the lock off it.
    let lease = must_acquire(&slow, &lock, "holder", Duration::from_secs(3));
    let lock_key = format!("lost-answer/lock/{lock}");
    let first = lease_of(&raw, &lock_key).expect("the lock key");

    // The extend's transaction lands; its answer is on its way back when every
    // connection is reset: the call fails, its transaction applied.
    proxy.set_latency(Duration::from_millis(300));
    let extend = {
        let (slow, lease) = (slow.clone(), lease.clone());
        std::thread::spawn(move || slow.extend(Renewal::new(&lease, HOUR)))
    };
    wait_until("the extend to move the lock", GONE_WITHIN, || {
        lease_of(&raw, &lock_key) != Some(first)
    });
    proxy.reset();
    proxy.heal();
    let extended = extend.join().unwrap();
    assert!(extended.is_err(), "the answer was not lost: {extended:?}");

    // Whatever the call's cleanup does, the lock stays its holder's: no revoke of the
    // lease it now hangs on.
    no_unused_lease_stays(&raw);
    let state = slow.state(&lock).unwrap();
    assert_eq!(
        state.leader().map(|h| h.fencing_token),
        Some(lease.fencing_token),
        "the lease the extend moved the lock onto was revoked: {state:?}"
    );
    slow.release(ReleaseRequest::new(&lease, Duration::ZERO))
        .unwrap();
}
