//! The spans of the blocking electors: `leader.acquire`, `leader.run`, `leader.extend`,
//! `leader.release` and `leader.term`, with the lock, backend, node, outcome and token.
//! One process-wide subscriber; each test uses its own lock names.

use std::time::Duration;

use leader_blocking::LeaderElector;
use leader_core::{CampaignConfig, InMemoryBackend, LeaderElectionOptions};
use leader_rig::spans::{CapturedSpan, SpanLog};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::{fresh_name, wait_until};

const FIELDS: [&str; 5] = ["backend", "fencing_token", "lock", "node_id", "outcome"];

fn field<'a>(span: &'a CapturedSpan, name: &str) -> &'a str {
    span.fields.get(name).map_or("", String::as_str)
}

fn only_known_fields(span: &CapturedSpan) {
    for name in span.fields.keys() {
        assert!(
            FIELDS.contains(&name.as_str()),
            "unexpected field {name} in {span:?}"
        );
    }
}

#[test]
fn a_run_is_traced_from_acquire_to_release_with_its_token() {
    let log = SpanLog::global();
    let lock = fresh_name("spans").to_string();
    let options = LeaderElectionOptions::default()
        .with_node_id("node-a")
        .with_lease_time(Duration::from_millis(600))
        .with_auto_extend(true);
    let elector = LeaderElector::new(InMemoryBackend::new(), options).unwrap();
    let token = elector
        .run_if_leader_with(&lock, |lease| {
            tracing::info!("inside the action");
            // Wait for a renewal (the watchdog renews every 200 ms): its span is checked below.
            let first = lease.deadline();
            wait_until("a renewal", Duration::from_secs(10), || {
                lease.deadline() > first
            });
            Ok::<_, std::convert::Infallible>(lease.fencing_token())
        })
        .unwrap()
        .into_value()
        .unwrap();

    let [acquire] = log.spans("leader.acquire", &lock).try_into().unwrap();
    assert_eq!(field(&acquire, "backend"), "memory");
    assert_eq!(field(&acquire, "node_id"), "node-a");
    assert_eq!(field(&acquire, "outcome"), "acquired");
    assert_eq!(field(&acquire, "fencing_token"), token.to_string());

    let [run] = log.spans("leader.run", &lock).try_into().unwrap();
    assert_eq!(field(&run, "fencing_token"), token.to_string());
    assert_eq!(field(&run, "node_id"), "node-a");
    let inside = log.events("inside the action");
    assert!(
        inside.iter().any(|scope| scope.first() == Some(&run)),
        "a log line in the action carries its lock and token: {inside:?}"
    );

    let extends = log.spans("leader.extend", &lock);
    assert!(
        extends
            .iter()
            .any(|s| field(s, "outcome") == "extended"
                && field(s, "fencing_token") == token.to_string()),
        "{extends:?}"
    );
    let [release] = log.spans("leader.release", &lock).try_into().unwrap();
    assert_eq!(field(&release, "outcome"), "released");
    for span in [&acquire, &run, &release].into_iter().chain(&extends) {
        only_known_fields(span);
    }
}

#[test]
fn skipped_and_failed_acquires_say_so() {
    let log = SpanLog::global();
    let lock = fresh_name("spans-outcomes").to_string();
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let a = LeaderElector::new(backend.clone(), options.clone().with_node_id("a")).unwrap();
    let b = LeaderElector::new(backend.clone(), options.with_node_id("b")).unwrap();
    a.run_if_leader(&lock, || {
        assert_eq!(b.run_if_leader(&lock, || ()).unwrap(), None);
    })
    .unwrap();
    backend.set(Op::Acquire, Fault::Fail);
    assert!(b.run_if_leader(&lock, || ()).is_err());
    backend.heal();

    let outcomes: Vec<(String, String)> = log
        .spans("leader.acquire", &lock)
        .iter()
        .map(|s| {
            (
                field(s, "node_id").to_owned(),
                field(s, "outcome").to_owned(),
            )
        })
        .collect();
    let expected = [("a", "acquired"), ("b", "skipped"), ("b", "failed")]
        .map(|(n, o)| (n.to_owned(), o.to_owned()));
    assert_eq!(outcomes, expected);
}

#[test]
fn a_campaign_term_has_its_span() {
    let log = SpanLog::global();
    let lock = fresh_name("spans-term").to_string();
    let options = LeaderElectionOptions::default().with_node_id("node-t");
    let elector = LeaderElector::new(InMemoryBackend::new(), options).unwrap();
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_millis(600))
        .with_heartbeat(Duration::from_millis(100))
        .with_renew_deadline(Duration::from_millis(400));
    let handle = elector.campaign(&lock, config).unwrap();
    let term = handle
        .wait_for_term_timeout(Duration::from_secs(10))
        .expect("elected");
    let token = term.fencing_token();
    wait_until("a renewal of the term", Duration::from_secs(10), || {
        !log.spans("leader.extend", &lock).is_empty()
    });
    handle.resign();
    let [span] = log.spans("leader.term", &lock).try_into().unwrap();
    assert_eq!(field(&span, "fencing_token"), token.to_string());
    assert_eq!(field(&span, "node_id"), "node-t");
    wait_until("the term's release", Duration::from_secs(10), || {
        log.spans("leader.release", &lock).len() == 1
    });
}
