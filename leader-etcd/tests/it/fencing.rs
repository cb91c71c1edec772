//! Fencing tokens never go back: across release, expiry, force release and a whole
//! cluster restart; after the cluster is restored to an older snapshot (its counter and
//! revisions back in time: the clock part keeps tokens ahead); and for a node whose
//! clock is an hour behind (the cluster's compare keeps its tokens above the counter).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{
    EXPIRY_SLACK, Raw, config, must_acquire, private_cluster, recovers, shared_cluster,
    stored_fence,
};
use leader_core::{
    AcquireOutcome, AcquireRequest, ForceReleaseOutcome, LockBackend, LockName, OwnerToken,
    ReleaseRequest,
};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures;
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(30);

/// Checks `token` is above every token in `seen`, and adds it.
#[track_caller]
fn above_all(token: u64, seen: &mut Vec<u64>) {
    let highest = seen.iter().copied().max().unwrap_or(0);
    assert!(token > highest, "token {token} after {seen:?}");
    seen.push(token);
}

/// Acquires and releases `key` once; the token of that acquisition.
fn cycle(backend: &EtcdBackend, key: &LockName) -> u64 {
    let lease = must_acquire(backend, key, "node", LEASE);
    backend
        .release(ReleaseRequest::new(&lease, Duration::ZERO))
        .unwrap();
    lease.fencing_token
}

fn cycles(backend: &EtcdBackend, key: &LockName, n: usize, seen: &mut Vec<u64>) {
    for _ in 0..n {
        above_all(cycle(backend, key), seen);
    }
}

#[test]
fn tokens_go_up_across_release_expiry_force_release_and_a_cluster_restart() {
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let backend = EtcdBackend::connect_with(&cluster.url(), config("fence-up")).unwrap();
    let key = fresh_name("fence-up");
    let mut seen = Vec::new();
    cycles(&backend, &key, 3, &mut seen);

    // Expiry: a one-second lease left to run out, then taken by another owner.
    let short = Duration::from_secs(1);
    let expiring = must_acquire(&backend, &key, "node", short);
    above_all(expiring.fencing_token, &mut seen);
    let deadline = Instant::now() + short + EXPIRY_SLACK + Duration::from_secs(3);
    let taken = loop {
        let request = AcquireRequest::new(&key, OwnerToken::random(), "next", LEASE);
        match backend.try_acquire(request).unwrap() {
            AcquireOutcome::Acquired(lease) => break lease,
            _ => {
                assert!(Instant::now() < deadline, "the lease never expired");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    above_all(taken.fencing_token, &mut seen);

    // Force release by an operator.
    let freed = backend.force_release(&key).unwrap();
    assert!(
        matches!(&freed, ForceReleaseOutcome::Released(holder) if holder.fencing_token == taken.fencing_token),
        "{freed:?}"
    );
    cycles(&backend, &key, 2, &mut seen);

    // The whole cluster restarted on its data; a fresh backend (no token seen) too.
    cluster.restart_all().unwrap();
    recovers(Duration::from_secs(30), || backend.state(&key));
    cycles(&backend, &key, 2, &mut seen);
    let fresh = EtcdBackend::connect_with(&cluster.url(), config("fence-up")).unwrap();
    cycles(&fresh, &key, 2, &mut seen);
}

#[test]
fn a_restore_to_an_older_snapshot_never_makes_a_token_go_back() {
    let Some(mut cluster) = private_cluster() else {
        return;
    };
    let backend = EtcdBackend::connect_with(&cluster.url(), config("fence-restore")).unwrap();
    let key = fresh_name("fence-restore");
    let mut seen = Vec::new();
    cycles(&backend, &key, 3, &mut seen);
    let raw = Raw::connect(&cluster.endpoints(), None);
    let snapshot_revision = raw.revision();
    let snapshot_counter = stored_fence(&raw, "fence-restore", &key);
    let dir = std::env::temp_dir().join(format!("leader-etcd-snapshot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let snapshot = dir.join("before.db");
    cluster.save_snapshot(&snapshot).unwrap();

    cycles(&backend, &key, 3, &mut seen);
    let revision_before_restore = raw.revision();
    assert!(revision_before_restore > snapshot_revision);
    drop(raw);

    cluster.restore_snapshot(&snapshot).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let raw = Raw::connect(&cluster.endpoints(), None);
    // The restore happened: revisions and the counter went back to the snapshot's.
    let restored_revision = raw.revision();
    assert!(
        restored_revision < revision_before_restore,
        "revision {restored_revision}, {revision_before_restore} before the restore"
    );
    assert_eq!(stored_fence(&raw, "fence-restore", &key), snapshot_counter);
    assert!(snapshot_counter < *seen.iter().max().unwrap());

    // A node that never saw a token: the clock part puts its token past every one
    // handed out before the restore.
    let fresh = EtcdBackend::connect_with(&cluster.url(), config("fence-restore")).unwrap();
    let token = recovers(Duration::from_secs(30), || {
        let request = AcquireRequest::new(&key, OwnerToken::random(), "fresh", LEASE);
        fresh.try_acquire(request)
    });
    let AcquireOutcome::Acquired(lease) = token else {
        panic!("the lock is free after the restore: {token:?}")
    };
    above_all(lease.fencing_token, &mut seen);
}

/// The lock and the cluster a child process uses: its parent's.
const CHILD_LOCK: &str = "LEADER_ETCD_SKEW_LOCK";
const CHILD_URL: &str = "LEADER_ETCD_SKEW_URL";
/// What a child prints before its answer.
const CHILD_SAYS: &str = "skewed-node:";
const TEST: &str = "fencing::a_node_whose_clock_is_an_hour_behind_still_gets_a_greater_token";

fn millis_now() -> i128 {
    i128::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The child's side: its clock, then the token of its acquisition of the lock.
fn skewed_node(url: &str, name: &str) {
    let backend = EtcdBackend::connect_with(url, config("fence-skew")).unwrap();
    let key = LockName::new(name).unwrap();
    let token = cycle(&backend, &key);
    println!("{CHILD_SAYS} {} {token}", millis_now());
}

/// Runs this test again in a child whose clock is `offset_secs` off, acquiring `name`;
/// the token it got. Checks the child's clock really was off.
fn skewed_token(faketime: &Path, url: &str, offset_secs: i64, name: &str) -> u64 {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture"])
        .env("LD_PRELOAD", faketime)
        .env("FAKETIME", format!("{offset_secs:+}s"))
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env(CHILD_LOCK, name)
        .env(CHILD_URL, url)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer = stdout
        .lines()
        .find_map(|line| line.strip_prefix(CHILD_SAYS))
        .unwrap_or_else(|| panic!("no answer from the child:\n{stdout}"));
    let mut words = answer.split_whitespace();
    let child_clock: i128 = words.next().unwrap().parse().unwrap();
    let skew = child_clock - millis_now();
    assert!(
        (skew - i128::from(offset_secs) * 1000).abs() < 10_000,
        "the child's clock is off by {skew} ms, not {offset_secs} s: is libfaketime working?"
    );
    words.next().unwrap().parse().unwrap()
}

#[test]
fn a_node_whose_clock_is_an_hour_behind_still_gets_a_greater_token() {
    if let (Ok(name), Ok(url)) = (std::env::var(CHILD_LOCK), std::env::var(CHILD_URL)) {
        return skewed_node(&url, &name);
    }
    let Some(cluster) = shared_cluster() else {
        return;
    };
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let url = cluster.url();
    let backend = EtcdBackend::connect_with(&url, config("fence-skew")).unwrap();
    let key = fresh_name("fence-skew");
    let mut seen = Vec::new();
    cycles(&backend, &key, 2, &mut seen);
    let behind = skewed_token(&faketime, &url, -3600, key.as_str());
    above_all(behind, &mut seen);
    // This node again: above the skewed node's token too.
    cycles(&backend, &key, 1, &mut seen);
}
