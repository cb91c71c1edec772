//! Failover to a promoted standby, with real processes: the primary killed with SIGKILL
//! under held locks and under the contention of three other processes, the standby
//! promoted, the same backends (one multi-host URL) carrying on against it.
//!
//! Synchronous replication loses no acknowledged write. Asynchronous replication with a
//! lagging standby may lose the last ones; tokens still never repeat or go back, and the
//! one overlap a lost write allows (the old holder still inside its lease while a new one
//! holds on the promoted standby) is rejected by a fence at the resource.
//!
//! Each test prints the time from the kill to the first successful acquire.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::config;
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Error, ExtendOutcome, Lease, LockBackend, LockName,
    OwnerToken, ReleaseOutcome, ReleaseRequest, Renewal,
};
use leader_postgres::{PostgresBackend, PostgresConfig};
use leader_rig::fixtures::{self, PostgresStandbyPair, Replication};
use leader_testkit::{fresh_name, wait_until};

const CHILD_URL: &str = "LEADER_STANDBY_CHILD_URL";
const CHILD_LOCK: &str = "LEADER_STANDBY_CHILD_LOCK";
const CHILD_UNTIL: &str = "LEADER_STANDBY_CHILD_UNTIL_MS";
const CHILD_SAYS: &str = "contender:";
const CONTENDERS: usize = 3;
/// A contender's lease: short, so the lock changes hands through the failover.
const CONTENDER_LEASE: Duration = Duration::from_millis(700);

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Calls fail in a second or two while no primary answers; connecting to a dead host
/// is refused at once on 127.0.0.1.
fn fast() -> PostgresConfig {
    config("standby_locks")
        .with_connect_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(2))
}

fn pair(replication: Replication) -> Option<PostgresStandbyPair> {
    fixtures::require("postgres", PostgresStandbyPair::start(replication))
}

fn acquire(
    backend: &PostgresBackend,
    key: &LockName,
    owner: &OwnerToken,
    node: &str,
    lease: Duration,
) -> Result<AcquireOutcome, Error> {
    LockBackend::try_acquire(backend, AcquireRequest::new(key, *owner, node, lease))
}

fn must_acquire(backend: &PostgresBackend, key: &LockName, node: &str, lease: Duration) -> Lease {
    match acquire(backend, key, &OwnerToken::random(), node, lease) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    }
}

/// One answer: when the call began and ended (ms since the epoch, one machine's clock
/// for every process), who asked, and what it got.
#[derive(Debug, Clone)]
struct Answer {
    began: u64,
    ended: u64,
    who: String,
    got: Got,
}

#[derive(Debug, Clone, PartialEq)]
enum Got {
    Acquired(u64),
    Held,
    Transient,
    Permanent(String),
}

impl Got {
    fn of(result: &Result<AcquireOutcome, Error>) -> Got {
        match result {
            Ok(AcquireOutcome::Acquired(lease)) => Got::Acquired(lease.fencing_token),
            Ok(_) => Got::Held,
            Err(err) if err.is_transient() => Got::Transient,
            Err(err) => Got::Permanent(err.to_string()),
        }
    }
}

/// The child's side: tries (and, holding, renews) the lock every 50 ms with its own owner
/// token until the deadline, printing each answer.
fn contender(url: &str, name: &str, until_ms: u64) {
    let backend = PostgresBackend::connect_with(url, fast()).unwrap();
    let key = LockName::new(name).unwrap();
    let owner = OwnerToken::random();
    let who = std::process::id().to_string();
    while now_ms() < until_ms {
        let began = now_ms();
        let got = Got::of(&acquire(&backend, &key, &owner, &who, CONTENDER_LEASE));
        let ended = now_ms();
        let got = match got {
            Got::Acquired(token) => format!("acquired {token}"),
            Got::Held => "held".to_owned(),
            Got::Transient => "transient".to_owned(),
            Got::Permanent(err) => format!("permanent {err}"),
        };
        println!("{CHILD_SAYS} {began} {ended} {who} {got}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Three contenders: this test's binary again, each running [`contender`] on `key`.
fn contenders(test: &str, url: &str, key: &LockName, for_ms: u64) -> Vec<std::process::Child> {
    let until = now_ms() + for_ms;
    (0..CONTENDERS)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", test, "--nocapture", "--test-threads=1"])
                .env(CHILD_URL, url)
                .env(CHILD_LOCK, key.as_str())
                .env(CHILD_UNTIL, until.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Runs the child's side when this process is a contender; `true` then.
fn as_contender() -> bool {
    match (
        std::env::var(CHILD_URL),
        std::env::var(CHILD_LOCK),
        std::env::var(CHILD_UNTIL),
    ) {
        (Ok(url), Ok(name), Ok(until)) => {
            contender(&url, &name, until.parse().unwrap());
            true
        }
        _ => false,
    }
}

fn answers_of(children: Vec<std::process::Child>) -> Vec<Answer> {
    let mut answers = Vec::new();
    for mut child in children {
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "a contender failed:\n{stdout}\n{stderr}");
        for line in stdout
            .lines()
            .filter_map(|line| line.strip_prefix(CHILD_SAYS))
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let got = match words[3] {
                "acquired" => Got::Acquired(words[4].parse().unwrap()),
                "held" => Got::Held,
                "transient" => Got::Transient,
                _ => Got::Permanent(words[4..].join(" ")),
            };
            answers.push(Answer {
                began: words[0].parse().unwrap(),
                ended: words[1].parse().unwrap(),
                who: words[2].to_owned(),
                got,
            });
        }
    }
    answers
}

/// Tokens never go back, and a new holder's is greater: of two acquisitions one of which
/// ended before the other began, the later's token is at least the earlier's, and greater
/// when another process took it.
fn tokens_never_go_back(answers: &[Answer]) {
    let acquired: Vec<(&Answer, u64)> = answers
        .iter()
        .filter_map(|answer| match answer.got {
            Got::Acquired(token) => Some((answer, token)),
            _ => None,
        })
        .collect();
    for (earlier, first) in &acquired {
        for (later, second) in &acquired {
            if earlier.ended < later.began {
                assert!(
                    second >= first && (later.who == earlier.who || second > first),
                    "token {second} of {later:?} after token {first} of {earlier:?}"
                );
            }
        }
    }
}

/// While no primary answers (from the kill until the promotion began) no answer is a
/// lock outcome: each is a typed, transient error. No answer is a permanent error.
fn no_answer_without_a_primary(answers: &[Answer], killed: u64, promoting: u64) {
    for answer in answers {
        assert!(!matches!(answer.got, Got::Permanent(_)), "{answer:?}");
        if answer.began >= killed && answer.ended < promoting {
            assert_eq!(
                answer.got,
                Got::Transient,
                "an answer with no primary: {answer:?}"
            );
        }
    }
}

/// Tries a fresh lock every 20 ms from `killed` on until one is acquired, recording each
/// answer; the time from the kill to that acquire.
fn first_acquire_after(
    backend: &PostgresBackend,
    killed: Instant,
    answers: &mut Vec<Answer>,
) -> Duration {
    let key = fresh_name("after-failover");
    loop {
        let began = now_ms();
        let result = acquire(
            backend,
            &key,
            &OwnerToken::random(),
            "prober",
            Duration::from_secs(30),
        );
        let got = Got::of(&result);
        answers.push(Answer {
            began,
            ended: now_ms(),
            who: "prober".to_owned(),
            got: got.clone(),
        });
        match got {
            Got::Acquired(_) => return killed.elapsed(),
            Got::Transient => {}
            other => panic!("a fresh lock after the failover: {other:?}"),
        }
        assert!(
            killed.elapsed() < Duration::from_secs(40),
            "no acquire 40 s after the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the primary, probes from another thread while the standby is promoted; when the
/// primary was gone and when the promotion began (ms), the time from the kill to the first
/// acquire, and the probe's answers.
fn fail_over(
    pair: &mut PostgresStandbyPair,
    backend: &PostgresBackend,
) -> (u64, u64, Duration, Vec<Answer>) {
    let killed = Instant::now();
    pair.kill_primary().unwrap();
    let killing = killed.elapsed();
    // Every process of the primary is gone now (a call begun a moment before may still
    // have had its answer).
    let killed_ms = now_ms();
    let prober = backend.clone();
    let probe = std::thread::spawn(move || {
        let mut answers = Vec::new();
        let took = first_acquire_after(&prober, killed, &mut answers);
        (took, answers)
    });
    // A moment without any primary, long enough for the probe to meet it.
    std::thread::sleep(Duration::from_millis(300));
    let promoting_ms = now_ms();
    pair.promote().unwrap();
    let (took, answers) = probe.join().unwrap();
    let unpromoted = Duration::from_millis(promoting_ms - killed_ms) + killing;
    println!(
        "failover ({:?}): kill to first acquire {took:?}, {:?} after the promotion began",
        pair.replication(),
        took.saturating_sub(unpromoted)
    );
    (killed_ms, promoting_ms, took, answers)
}

const SYNCHRONOUS: &str =
    "standby::synchronous_replication_loses_no_acknowledged_acquire_renewal_or_release";

#[test]
fn synchronous_replication_loses_no_acknowledged_acquire_renewal_or_release() {
    if as_contender() {
        return;
    }
    let Some(mut pair) = pair(Replication::Synchronous) else {
        return;
    };
    let url = pair.url();
    let backend = PostgresBackend::connect_with(&url, fast()).unwrap();
    // A second node of its own, waiting for releases over its own LISTEN session.
    let waiter = PostgresBackend::connect_with(&url, fast()).unwrap();
    let events = waiter.release_events().unwrap().clone();
    wait_until("the waiter listening", Duration::from_secs(10), || {
        waiter.is_listening()
    });

    let held = fresh_name("sync-held");
    let lease = must_acquire(&backend, &held, "node-a", Duration::from_secs(60));
    let renewed = LockBackend::extend(
        &backend,
        Renewal::new(&lease, Duration::from_secs(60)).with_db_time(true),
    )
    .unwrap();
    let ExtendOutcome::Extended { expires_at } = renewed else {
        panic!("{renewed:?}")
    };
    let freed = fresh_name("sync-freed");
    let once = must_acquire(&backend, &freed, "node-a", Duration::from_secs(60));
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&once, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );

    let raced = fresh_name("sync-raced");
    let children = contenders(SYNCHRONOUS, &url, &raced, 6_000);
    wait_until("a contender to hold", Duration::from_secs(10), || {
        LockBackend::state(&backend, &raced).is_ok_and(|state| state.leader().is_some())
    });
    std::thread::sleep(Duration::from_millis(800));

    let (killed, promoting, _took, mut answers) = fail_over(&mut pair, &backend);

    // Every acknowledged write is on the new primary.
    let state = LockBackend::state(&backend, &held).unwrap();
    let holder = state.leader().expect("the held lock survived the failover");
    assert_eq!(
        (holder.leader_id.as_str(), holder.fencing_token),
        ("node-a", lease.fencing_token)
    );
    assert!(holder.expires_at >= expires_at, "the renewal was lost");
    assert!(
        LockBackend::state(&backend, &freed)
            .unwrap()
            .leader()
            .is_none(),
        "the release was lost"
    );
    let again = LockBackend::extend(
        &backend,
        Renewal::new(&lease, Duration::from_secs(60)).with_db_time(true),
    )
    .unwrap();
    assert!(matches!(again, ExtendOutcome::Extended { .. }), "{again:?}");

    // The waiter's LISTEN session moved to the new primary: a release there wakes it.
    wait_until(
        "the waiter listening again",
        Duration::from_secs(15),
        || waiter.is_listening(),
    );
    let woken = events.listen(held.as_str());
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
    assert!(
        woken.wait_timeout(Duration::from_secs(10)),
        "the waiter was not woken on the new primary"
    );

    answers.extend(answers_of(children));
    let won = answers
        .iter()
        .filter(|a| a.who != "prober" && matches!(a.got, Got::Acquired(_)));
    assert!(
        won.clone().any(|a| a.ended < killed),
        "no contender acquired before the kill"
    );
    assert!(
        won.clone().any(|a| a.began > promoting),
        "no contender acquired after the promotion"
    );
    no_answer_without_a_primary(&answers, killed, promoting);
    // The contenders' lock only (the prober tried another).
    answers.retain(|answer| answer.who != "prober");
    tokens_never_go_back(&answers);
}

/// A resource that accepts a write only with a token at least the greatest it has seen.
#[derive(Default)]
struct Fence {
    greatest: u64,
}

impl Fence {
    fn write(&mut self, token: u64) -> bool {
        if token < self.greatest {
            return false;
        }
        self.greatest = token;
        true
    }
}

const ASYNCHRONOUS: &str =
    "standby::asynchronous_replication_never_repeats_a_token_and_the_fence_rejects_the_old_holder";

#[test]
fn asynchronous_replication_never_repeats_a_token_and_the_fence_rejects_the_old_holder() {
    if as_contender() {
        return;
    }
    let Some(mut pair) = pair(Replication::Asynchronous) else {
        return;
    };
    let url = pair.url();
    let backend = PostgresBackend::connect_with(&url, fast()).unwrap();
    let key = fresh_name("async");
    let mut fence = Fence::default();

    // Three processes take turns at another lock through it all.
    let raced = fresh_name("async-raced");
    let children = contenders(ASYNCHRONOUS, &url, &raced, 6_000);
    wait_until("a contender to hold", Duration::from_secs(10), || {
        LockBackend::state(&backend, &raced).is_ok_and(|state| state.leader().is_some())
    });

    // node-a's lease reaches the standby; then the standby stops receiving.
    let a = must_acquire(&backend, &key, "node-a", Duration::from_secs(2));
    assert!(fence.write(a.fencing_token));
    pair.wait_caught_up().unwrap();
    pair.pause_walreceiver().unwrap();

    // Acknowledged by the primary only: node-a's release and node-b's acquire.
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&a, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
    let b = must_acquire(&backend, &key, "node-b", Duration::from_secs(30));
    assert!(b.fencing_token > a.fencing_token);
    assert!(fence.write(b.fencing_token));
    let b_deadline = Instant::now() + Duration::from_secs(30);
    // The contenders' acquisitions meanwhile reach the primary only, too.
    std::thread::sleep(Duration::from_millis(800));

    let (killed, promoting, _took, mut answers) = fail_over(&mut pair, &backend);

    // Both writes are lost: the promoted standby has node-a's lease (running out), not
    // node-b's. node-b, still inside its lease by its own reckoning, learns it lost it.
    let extended = LockBackend::extend(
        &backend,
        Renewal::new(&b, Duration::from_secs(30)).with_db_time(true),
    )
    .unwrap();
    assert_eq!(
        extended,
        ExtendOutcome::NotHeld,
        "node-b's lease came back from nowhere"
    );
    assert!(Instant::now() < b_deadline);

    // node-c takes the lock once node-a's lost-and-found lease ran out: its token is
    // above node-b's, which the new primary never saw (a token from the stored counter
    // alone would repeat node-b's).
    let c = loop {
        match acquire(
            &backend,
            &key,
            &OwnerToken::random(),
            "node-c",
            Duration::from_secs(30),
        )
        .unwrap()
        {
            AcquireOutcome::Acquired(lease) => break lease,
            AcquireOutcome::Held(holder) => {
                let holder = holder.expect("a holder");
                assert_eq!(holder.fencing_token, a.fencing_token, "{holder:?}");
                std::thread::sleep(Duration::from_millis(50));
            }
            other => panic!("{other:?}"),
        }
    };
    assert!(
        c.fencing_token > b.fencing_token,
        "token {} after the lost {}",
        c.fencing_token,
        b.fencing_token
    );
    assert!(fence.write(c.fencing_token));
    // The overlap: node-b still thinks it holds until its deadline; the fence says no.
    assert!(Instant::now() < b_deadline);
    assert!(
        !fence.write(b.fencing_token),
        "the fence let the old holder write"
    );

    // The contenders' lost acquisitions did not make a token repeat or go back either.
    answers.extend(answers_of(children));
    no_answer_without_a_primary(&answers, killed, promoting);
    answers.retain(|answer| answer.who != "prober");
    let won = answers
        .iter()
        .filter(|answer| matches!(answer.got, Got::Acquired(_)));
    assert!(
        won.clone().any(|answer| answer.ended < killed),
        "no contender acquired before the kill"
    );
    assert!(
        won.clone().any(|answer| answer.began > promoting),
        "no contender acquired after the promotion"
    );
    tokens_never_go_back(&answers);
}

/// A primary frozen (SIGSTOP) rather than dead: the kernel still accepts connections to
/// it, and nothing answers on them. The hosts after it in the URL must still be tried,
/// each host's whole handshake bounded by the connect timeout.
#[test]
fn a_frozen_primary_does_not_hide_the_promoted_standby_after_it() {
    let Some(mut pair) = pair(Replication::Asynchronous) else {
        return;
    };
    let backend = PostgresBackend::connect_with(&pair.url(), fast()).unwrap();
    let waiter = PostgresBackend::connect_with(&pair.url(), fast()).unwrap();
    waiter.release_events().unwrap();
    wait_until("the waiter listening", Duration::from_secs(10), || {
        waiter.is_listening()
    });
    let key = fresh_name("frozen");
    let lease = must_acquire(&backend, &key, "node-a", Duration::from_secs(60));
    pair.wait_caught_up().unwrap();

    let frozen = Instant::now();
    pair.primary().pause();
    let promoted = pair.promote().unwrap();
    let mut answers = Vec::new();
    let took = first_acquire_after(&backend, frozen, &mut answers);
    println!(
        "failover (frozen primary): freeze to first acquire {took:?}, promotion took {promoted:?}"
    );
    let state = LockBackend::state(&backend, &key).unwrap();
    assert_eq!(
        state.leader().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    // The LISTEN session found the new primary too.
    wait_until(
        "the waiter listening again",
        Duration::from_secs(20),
        || waiter.is_listening(),
    );
}
