//! A holder whose wall clock is behind the reader's is seen holding, by the store's word
//! alone: the holder is a child process of this test binary whose clock libfaketime
//! (`leader_rig::fixtures::faketime_library`) sets 30 s or 7 s back, renewing a 10 s
//! lease every 4 s. Its holder record's times are on its clock, so on this one its lease
//! looks over (30 s back) or over for the last second of every renewal period (7 s back);
//! yet `state`, `list`, `force_release_if` and an observer see it held until it is
//! force-released, and an acquire is refused meanwhile. Likewise a lock released with a
//! minimum lease by a node 30 s behind stays taken for that minimum lease.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::{config, shared_cluster};
use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, ChangeKind, ExtendOutcome, ForceReleaseOutcome, LeaderChange,
    LeaderElectionOptions, ListRequest, LockBackend, LockName, MaxReaders, OwnerToken,
    ReleaseRequest, Renewal, Role, SharedLockBackend, SharedOutcome, SharedRequest,
};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures;
use leader_testkit::fresh_name;

/// The skewed holder's lease, and how often it renews it.
const LEASE: Duration = Duration::from_secs(10);
const RENEW_EVERY: Duration = Duration::from_secs(4);
/// How many renewals the holder is watched through: 12 s, three times the renewal period.
const RENEWALS: usize = 3;
/// How long any one event may take to come, however loaded the machine.
const EVENT_WITHIN: Duration = Duration::from_secs(30);
const PREFIX: &str = "clock-skew";

/// The lock and the cluster a child process uses (its parent's), and what it does:
/// `hold` ([`skewed_holder`]) or `release` ([`skewed_releaser`]).
const CHILD_LOCK: &str = "LEADER_ETCD_SKEWED_HOLDER_LOCK";
const CHILD_URL: &str = "LEADER_ETCD_SKEWED_HOLDER_URL";
const CHILD_ROLE: &str = "LEADER_ETCD_SKEWED_HOLDER_ROLE";
/// The minimum lease of the skewed releaser's release.
const MIN_LEASE: Duration = Duration::from_millis(2500);
/// What a child prints before its clock and its token.
const CHILD_SAYS: &str = "skewed-holder:";

fn millis_now() -> i128 {
    i128::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The child's side: takes the lock for [`LEASE`], prints its clock and token, then
/// renews every [`RENEW_EVERY`] (a line `extended` each time) until its stdin closes or
/// the lock is lost (a line `lost`).
fn skewed_holder(url: &str, name: &str) {
    // HTTP/2 pings no more often than the renewals: etcd closes a connection that pings
    // more often than every 5 s (its `--grpc-keepalive-min-time`) between calls, and a
    // renewal sent just then fails.
    let config = config(PREFIX).with_keep_alive(Duration::from_secs(10));
    let backend = EtcdBackend::connect_with(url, config).unwrap();
    let key = LockName::new(name).unwrap();
    let mut lease = common::must_acquire(&backend, &key, "skewed", LEASE);
    println!("{CHILD_SAYS} {} {}", millis_now(), lease.fencing_token);
    let (closed, stdin_closed) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut line = String::new();
        while std::io::stdin()
            .read_line(&mut line)
            .is_ok_and(|read| read > 0)
        {
            line.clear();
        }
        let _ = closed.send(());
    });
    loop {
        match stdin_closed.recv_timeout(RENEW_EVERY) {
            Err(RecvTimeoutError::Timeout) => match backend.extend(Renewal::new(&lease, LEASE)) {
                Ok(ExtendOutcome::Extended { expires_at }) => {
                    lease.expires_at = expires_at;
                    println!("extended");
                }
                Ok(_) => {
                    println!("lost");
                    return;
                }
                Err(err) => println!("extend failed: {err}"),
            },
            _ => return,
        }
    }
}

/// The child's side of the release test: takes the lock, releases it at once with a
/// minimum lease of [`MIN_LEASE`] from its acquisition, prints its clock, its token and
/// how long the minimum lease has left (ms, on its clock), then stays until its stdin
/// closes (its background runtime frees the kept lock on time).
fn skewed_releaser(url: &str, name: &str) {
    let backend = EtcdBackend::connect_with(url, config(PREFIX)).unwrap();
    let key = LockName::new(name).unwrap();
    let lease = common::must_acquire(&backend, &key, "skewed", LEASE);
    backend
        .release(ReleaseRequest::new(&lease, MIN_LEASE))
        .unwrap();
    let left = (lease.acquired_at + MIN_LEASE)
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    println!(
        "{CHILD_SAYS} {} {} {}",
        millis_now(),
        lease.fencing_token,
        left.as_millis()
    );
    let mut line = String::new();
    while std::io::stdin()
        .read_line(&mut line)
        .is_ok_and(|read| read > 0)
    {
        line.clear();
    }
}

/// The child's side of the read/write test: asks once to write the read/write lock `name`
/// for [`LEASE`], prints its clock and the answer (`acquired`, `queued` or `held`), and
/// withdraws what it got.
fn skewed_writer(url: &str, name: &str) {
    let backend = EtcdBackend::connect_with(url, config(PREFIX)).unwrap();
    let key = LockName::new(name).unwrap();
    let request = AcquireRequest::new(&key, OwnerToken::random(), "skewed-writer", LEASE);
    let outcome = backend
        .try_acquire_shared(SharedRequest::write(request))
        .unwrap();
    let said = match &outcome {
        SharedOutcome::Acquired(_) => "acquired",
        SharedOutcome::Queued(_) => "queued",
        _ => "held",
    };
    println!("{CHILD_SAYS} {} {said}", millis_now());
    if let SharedOutcome::Acquired(lease) = &outcome {
        backend
            .release_shared(ReleaseRequest::new(lease, Duration::ZERO), Role::Write)
            .unwrap();
    }
}

/// Runs the child's side if this process is a child; `true` if it was.
fn child() -> bool {
    let (Ok(name), Ok(url), Ok(role)) = (
        std::env::var(CHILD_LOCK),
        std::env::var(CHILD_URL),
        std::env::var(CHILD_ROLE),
    ) else {
        return false;
    };
    match role.as_str() {
        "hold" => skewed_holder(&url, &name),
        "write-shared" => skewed_writer(&url, &name),
        _ => skewed_releaser(&url, &name),
    }
    true
}

/// The child's clock, checked to be `offset_secs` off this one's.
#[track_caller]
fn check_skew(child_clock: i128, offset_secs: i64) {
    let skew = child_clock - millis_now();
    assert!(
        (skew - i128::from(offset_secs) * 1000).abs() < 5_000,
        "the child's clock is off by {skew} ms, not {offset_secs} s: is libfaketime working?"
    );
}

/// A skewed holder running as a child process: its stdout lines, and its stdin (closing
/// it ends the child).
struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Holder {
    /// Runs `test` again in a child whose clock is `offset_secs` off, in `role` on `name`.
    fn start(
        test: &str,
        role: &str,
        faketime: &std::path::Path,
        url: &str,
        offset_secs: i64,
        name: &str,
    ) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture"])
            .env("LD_PRELOAD", faketime)
            .env("FAKETIME", format!("{offset_secs:+}s"))
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .env(CHILD_LOCK, name)
            .env(CHILD_URL, url)
            .env(CHILD_ROLE, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Holder {
            child,
            stdin,
            lines,
        }
    }

    /// The next line that `wanted` accepts (others are skipped), waiting [`EVENT_WITHIN`]
    /// for each.
    fn line<T>(&self, what: &str, mut wanted: impl FnMut(&str) -> Option<T>) -> T {
        loop {
            let line = self
                .lines
                .recv_timeout(EVENT_WITHIN)
                .unwrap_or_else(|err| panic!("no {what} from the skewed holder: {err}"));
            if let Some(found) = wanted(&line) {
                return found;
            }
            assert!(!line.starts_with("lost"), "the skewed holder lost its lock");
        }
    }

    /// Ends the child: its stdin closed, its exit waited for.
    fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The next change the observer sent, waiting [`EVENT_WITHIN`].
fn next_change(changes: &Receiver<LeaderChange>, what: &str) -> LeaderChange {
    changes
        .recv_timeout(EVENT_WITHIN)
        .unwrap_or_else(|err| panic!("no {what} from the observer: {err}"))
}

/// The scenario, at a holder clock `offset_secs` off this one's.
fn a_holder_behind_is_seen_holding(test: &str, offset_secs: i64) {
    if child() {
        return;
    }
    let Some(cluster) = shared_cluster() else {
        return;
    };
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let url = cluster.url();
    let backend = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let key = fresh_name("skewed-holder");
    let holder = Holder::start(test, "hold", &faketime, &url, offset_secs, key.as_str());
    let (child_clock, token) = holder.line("lock", |line| {
        let mut words = line.strip_prefix(CHILD_SAYS)?.split_whitespace();
        let clock: i128 = words.next()?.parse().ok()?;
        let token: u64 = words.next()?.parse().ok()?;
        Some((clock, token))
    });
    check_skew(child_clock, offset_secs);

    // Held, to every reader of this node, on the store's word.
    let state = backend.state(&key).unwrap();
    assert_eq!(
        state.leader().map(|h| h.fencing_token),
        Some(token),
        "state: {state:?}"
    );
    let page = backend.list(&ListRequest::new(key.as_str())).unwrap();
    assert_eq!(
        page.locks
            .iter()
            .filter_map(|lock| lock.leader().map(|h| h.fencing_token))
            .collect::<Vec<_>>(),
        [token],
        "list: {page:?}"
    );
    let request = AcquireRequest::new(&key, OwnerToken::random(), "this-node", LEASE);
    match backend.try_acquire(request).unwrap() {
        AcquireOutcome::Held(Some(holder)) => assert_eq!(holder.fencing_token, token),
        other => panic!("another node's acquire must be refused: {other:?}"),
    }

    // An observer sees the holder, then nothing while it renews, then its end.
    let options = LeaderElectionOptions::default();
    let elector = LeaderElector::new(backend.clone(), options).unwrap();
    let observer = elector
        .observe(key.as_str())
        .unwrap()
        .with_poll_interval(Duration::from_millis(200));
    let (sender, changes) = mpsc::channel();
    std::thread::spawn(move || {
        for change in observer {
            let Ok(change) = change else { continue };
            if sender.send(change).is_err() {
                return;
            }
        }
    });
    let initial = next_change(&changes, "first look");
    assert_eq!(initial.kind, ChangeKind::Initial, "{initial:?}");
    assert_eq!(
        initial.holder.as_ref().map(|h| h.fencing_token),
        Some(token),
        "the observer's first look: {initial:?}"
    );
    for _ in 0..RENEWALS {
        holder.line("renewal", |line| (line == "extended").then_some(()));
    }

    let forced_at = SystemTime::now();
    match backend.force_release_if(&key, token).unwrap() {
        ForceReleaseOutcome::Released(freed) => assert_eq!(freed.fencing_token, token),
        other => panic!("force_release_if must free the holder it names: {other:?}"),
    }
    let end = next_change(&changes, "end of the holder's lease");
    println!(
        "holder {offset_secs:+} s: after {RENEWALS} renewals, the observer's next change: {:?} at {:?} after the force release",
        end.kind,
        end.seen_at.duration_since(forced_at)
    );
    assert!(
        end.seen_at >= forced_at,
        "while the holder held its lock the observer reported {end:?}"
    );
    assert!(
        matches!(end.kind, ChangeKind::Released | ChangeKind::Expired),
        "{end:?}"
    );
    assert_eq!(end.holder.as_ref().map(|h| h.fencing_token), Some(token));
    holder.stop();
}

#[test]
fn a_holder_30_s_behind_is_seen_holding_its_lock() {
    a_holder_behind_is_seen_holding(
        "clock_skew::a_holder_30_s_behind_is_seen_holding_its_lock",
        -30,
    );
}

#[test]
fn a_holder_7_s_behind_is_seen_holding_its_lock() {
    a_holder_behind_is_seen_holding(
        "clock_skew::a_holder_7_s_behind_is_seen_holding_its_lock",
        -7,
    );
}

#[test]
fn a_lock_released_by_a_node_30_s_behind_stays_taken_for_its_minimum_lease() {
    const TEST: &str =
        "clock_skew::a_lock_released_by_a_node_30_s_behind_stays_taken_for_its_minimum_lease";
    if child() {
        return;
    }
    let Some(cluster) = shared_cluster() else {
        return;
    };
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let url = cluster.url();
    let backend = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let key = fresh_name("skewed-release");
    let releaser = Holder::start(TEST, "release", &faketime, &url, -30, key.as_str());
    let (child_clock, token, left_ms) = releaser.line("release", |line| {
        let mut words = line.strip_prefix(CHILD_SAYS)?.split_whitespace();
        let clock: i128 = words.next()?.parse().ok()?;
        let token: u64 = words.next()?.parse().ok()?;
        let left: u64 = words.next()?.parse().ok()?;
        Some((clock, token, left))
    });
    let released_at = std::time::Instant::now();
    check_skew(child_clock, -30);
    assert!(
        left_ms > 1000,
        "the release took too long to test: {left_ms} ms left"
    );

    // The minimum lease ends 20 s ago by this node's clock, read against the releaser's
    // record: the lock is still taken all the same, until the releaser frees it.
    let freed = loop {
        let request = AcquireRequest::new(&key, OwnerToken::random(), "this-node", LEASE);
        match backend.try_acquire(request).unwrap() {
            AcquireOutcome::Acquired(lease) => break lease,
            AcquireOutcome::Held(holder) => {
                assert_eq!(holder.map(|h| h.fencing_token), Some(token));
                assert!(
                    released_at.elapsed() < Duration::from_millis(left_ms) + EVENT_WITHIN,
                    "the kept lock was never freed"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            other => panic!("{other:?}"),
        }
    };
    let kept = released_at.elapsed();
    println!("kept {kept:?} for a minimum lease with {left_ms} ms left");
    assert!(
        kept >= Duration::from_millis(left_ms),
        "freed {kept:?} after the release, before its minimum lease ({left_ms} ms left) ended"
    );
    assert!(freed.fencing_token > token);
    backend
        .release(ReleaseRequest::new(&freed, Duration::ZERO))
        .unwrap();
    releaser.stop();
}

/// Read/write locks keep expiry on the cluster's clock too: a writer whose clock runs 60 s
/// ahead, asking while a reader on this clock holds a 10 s lease, sees the reader's record
/// run out 50 s ago on its clock, yet is not granted over it (it queues its intent).
#[test]
fn a_writer_60_s_ahead_is_not_granted_over_a_reader_that_holds() {
    const TEST: &str = "clock_skew::a_writer_60_s_ahead_is_not_granted_over_a_reader_that_holds";
    if child() {
        return;
    }
    let Some(cluster) = shared_cluster() else {
        return;
    };
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let url = cluster.url();
    let backend = EtcdBackend::connect_with(&url, config(PREFIX)).unwrap();
    let key = fresh_name("skewed-rw");
    let request = AcquireRequest::new(&key, OwnerToken::random(), "reader", LEASE);
    let SharedOutcome::Acquired(reader) = backend
        .try_acquire_shared(SharedRequest::read(request, MaxReaders::DEFAULT))
        .unwrap()
    else {
        panic!("the reader was refused")
    };
    let writer = Holder::start(TEST, "write-shared", &faketime, &url, 60, key.as_str());
    let (child_clock, said) = writer.line("write", |line| {
        let mut words = line.strip_prefix(CHILD_SAYS)?.split_whitespace();
        let clock: i128 = words.next()?.parse().ok()?;
        Some((clock, words.next()?.to_owned()))
    });
    writer.stop();
    check_skew(child_clock, 60);
    assert!(
        SystemTime::now() < reader.expires_at,
        "the reader's lease ran out during the test: it proves nothing"
    );
    assert_eq!(
        said, "queued",
        "a writer 60 s ahead was answered {said} while a reader held the lock"
    );
    backend
        .release_shared(ReleaseRequest::new(&reader, Duration::ZERO), Role::Read)
        .unwrap();
}
