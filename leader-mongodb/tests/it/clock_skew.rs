//! Mutual exclusion under clock skew: nodes whose wall clocks are 30 s apart never hold one lock
//! at once, with the default options. Each skewed node is a child process of this test
//! binary whose clock libfaketime (`leader_rig::fixtures::faketime_library`) sets off,
//! talking to the parent's server.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::{config, uri};
use leader_core::{AcquireOutcome, AcquireRequest, LeaderElectionOptions, LockBackend, OwnerToken};
use leader_mongodb::MongoBackend;
use leader_rig::fixtures;
use leader_testkit::fresh_name;

const COLLECTION: &str = "clock_skew";
/// The lock name a child process competes for.
const CHILD_LOCK: &str = "LEADER_SKEW_LOCK";
/// The server a child process uses: its parent's (a child must not start one of its own,
/// the less so under libfaketime).
const CHILD_URI: &str = "LEADER_SKEW_URI";
/// What a child prints before its answer.
const CHILD_SAYS: &str = "skewed-node:";

fn backend(uri: &str) -> MongoBackend {
    MongoBackend::connect_with(uri, config(COLLECTION)).unwrap()
}

/// Tries once to take `name` the way a node with default options does (node clock, no
/// `use_db_time`), with a 10 s lease that is never released.
fn try_take(backend: &MongoBackend, name: &str) -> bool {
    let key = leader_core::LockName::new(name).unwrap();
    let options = LeaderElectionOptions::default();
    let request = AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(10))
        .with_db_time(options.use_db_time());
    matches!(
        LockBackend::try_acquire(backend, request).unwrap(),
        AcquireOutcome::Acquired(_)
    )
}

fn millis_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// The child's side: report its clock, try to take the lock, report the outcome.
fn skewed_node(name: &str, backend: &MongoBackend) {
    let took = try_take(backend, name);
    println!("{CHILD_SAYS} {} {took}", millis_now());
}

/// Runs this test again in a child whose wall clock is off by `offset_secs`, as a
/// [`skewed_node`]; whether it took the lock. Checks the child's clock really was off.
fn skewed_node_takes(faketime: &Path, uri: &str, offset_secs: i64, name: &str) -> bool {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "clock_skew::nodes_with_clocks_30_s_apart_never_share_a_lock",
            "--nocapture",
        ])
        .env("LD_PRELOAD", faketime)
        .env("FAKETIME", format!("{offset_secs:+}s"))
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env(CHILD_LOCK, name)
        .env(CHILD_URI, uri)
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
    let skew = child_clock - millis_now() as i128;
    assert!(
        (skew - i128::from(offset_secs) * 1000).abs() < 5_000,
        "the child's clock is off by {skew} ms, not {offset_secs} s: is libfaketime working?"
    );
    words.next().unwrap().parse().unwrap()
}

#[test]
fn nodes_with_clocks_30_s_apart_never_share_a_lock() {
    if let (Ok(name), Ok(uri)) = (std::env::var(CHILD_LOCK), std::env::var(CHILD_URI)) {
        return skewed_node(&name, &backend(&uri));
    }
    let Some(uri) = uri() else { return };
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let backend = backend(&uri);

    // A node 30 s behind takes the lock; to a node with the right clock it is held.
    let behind = fresh_name("skew-behind");
    assert!(skewed_node_takes(&faketime, &uri, -30, behind.as_str()));
    assert!(
        !try_take(&backend, behind.as_str()),
        "a node 30 s behind and this node both held the lock"
    );

    // This node takes the lock; to a node 30 s ahead it is held.
    let ahead = fresh_name("skew-ahead");
    assert!(try_take(&backend, ahead.as_str()));
    assert!(
        !skewed_node_takes(&faketime, &uri, 30, ahead.as_str()),
        "a node 30 s ahead and this node both held the lock"
    );
}
