//! Real electors on the in-memory backend, traced by `TraceLayer`, judged by the checker.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::{InMemoryBackend, LeaderElectionOptions};
use leader_history::{
    Report, Settings, TraceLayer, ViolationKind, What, check_trace, read_history,
};
use tracing::Dispatch;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;

/// A layer writing to memory, as the dispatcher of this test's threads.
fn traced() -> (Dispatch, leader_history::TraceHandle<Vec<u8>>) {
    let layer = TraceLayer::new(Vec::new());
    let handle = layer.handle();
    let subscriber = tracing_subscriber::registry().with(layer.with_filter(LevelFilter::DEBUG));
    (Dispatch::new(subscriber), handle)
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_lease_time(Duration::from_secs(5))
}

fn settings() -> Settings {
    Settings {
        backend: "memory".into(),
        lease_us: 5_000_000,
        ..Settings::default()
    }
}

/// Runs `rounds` short actions on each of `electors` (one thread each, all under
/// `dispatch`), returning how many ran.
fn contend(
    dispatch: &Dispatch,
    electors: Vec<LeaderElector<InMemoryBackend>>,
    rounds: usize,
) -> usize {
    let start = Arc::new(Barrier::new(electors.len()));
    let threads: Vec<_> = electors
        .into_iter()
        .map(|elector| {
            let (dispatch, start) = (dispatch.clone(), Arc::clone(&start));
            thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    start.wait();
                    (0..rounds)
                        .filter(|_| {
                            let ran = elector
                                .run_if_leader("job", || thread::sleep(Duration::from_millis(2)))
                                .unwrap();
                            thread::sleep(Duration::from_millis(1));
                            ran.is_some()
                        })
                        .count()
                })
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).sum()
}

#[test]
fn electors_sharing_one_store_leave_a_trace_that_passes() {
    let (dispatch, trace) = traced();
    let store = InMemoryBackend::new();
    let electors = ["a", "b", "c"]
        .map(|node| LeaderElector::new(store.clone(), options(node)).unwrap())
        .into();
    let ran = contend(&dispatch, electors, 40);
    let lines = trace.take_output().unwrap();
    let report = check_trace(&lines[..], settings()).unwrap();
    assert!(report.passed(), "{report}\n{:#?}", report.violations);
    assert!(ran > 0);
    assert_eq!(report.acquisitions, ran, "{report}");
    assert_eq!(report.tallies.releases, ran, "{report}");
    assert_eq!(report.tallies.skips, 3 * 40 - ran, "{report}");
    let history = read_history(&lines[..], settings()).unwrap();
    let names: Vec<String> = history
        .logs
        .iter()
        .filter_map(|log| match &log.events[0].what {
            What::NodeStarted { name, .. } => name.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for node in ["a", "b", "c"] {
        assert!(names.iter().any(|n| n == node), "{names:?}");
    }
}

#[test]
fn electors_on_two_stores_are_caught_acting_at_once() {
    // A misconfiguration: two nodes given different stores for one job both lead.
    let (dispatch, trace) = traced();
    let electors = ["a", "b"]
        .map(|node| LeaderElector::new(InMemoryBackend::new(), options(node)).unwrap())
        .into();
    let ran = contend(&dispatch, electors, 20);
    assert_eq!(ran, 40);
    let lines = trace.take_output().unwrap();
    let report: Report = check_trace(&lines[..], settings()).unwrap();
    assert!(!report.passed());
    // Both stores count from 1: every token is handed out twice.
    assert_eq!(report.duplicate_tokens, 20, "{report}");
    assert!(report.unexplained_overlaps > 0, "{report}");
    let overlap = report
        .violations
        .iter()
        .find(|v| v.kind == ViolationKind::UnexplainedOverlap)
        .unwrap();
    let nodes: Vec<Option<u32>> = overlap.events.iter().map(|e| e.node).collect();
    assert!(
        nodes.contains(&Some(0)) && nodes.contains(&Some(1)),
        "{overlap:?}"
    );
}

#[test]
fn an_action_that_outlives_its_lease_is_a_loss_in_the_trace() {
    let (dispatch, trace) = traced();
    let elector = LeaderElector::new(
        InMemoryBackend::new(),
        options("a")
            .with_lease_time(Duration::from_millis(50))
            .with_auto_extend(false),
    )
    .unwrap();
    let ran = tracing::dispatcher::with_default(&dispatch, || {
        elector
            .run_if_leader("job", || thread::sleep(Duration::from_millis(150)))
            .unwrap()
    });
    assert!(ran.is_some());
    let lines = trace.take_output().unwrap();
    let report = check_trace(
        &lines[..],
        Settings {
            lease_us: 50_000,
            ..settings()
        },
    )
    .unwrap();
    assert_eq!(report.tallies.lost, 1, "{report}");
    // Nothing in the trace explains it.
    assert_eq!(report.unexplained_losses, 1, "{report}");
    assert_eq!(report.violations[0].kind, ViolationKind::UnexplainedLoss);
}

/// The async elector's action and the loss found as it returns, under one `leader.run`.
#[test]
fn an_async_action_that_outlives_its_lease_is_a_loss_in_the_trace() {
    let (dispatch, trace) = traced();
    let elector = AsyncLeaderElector::new(
        InMemoryBackend::new(),
        options("a")
            .with_lease_time(Duration::from_millis(50))
            .with_auto_extend(false),
    )
    .unwrap();
    let ran = tracing::dispatcher::with_default(&dispatch, || {
        smol::block_on(
            elector.run_if_leader("job", || smol::Timer::after(Duration::from_millis(150))),
        )
        .unwrap()
    });
    assert!(ran.is_some());
    let lines = trace.take_output().unwrap();
    let history = read_history(&lines[..], settings()).unwrap();
    let order: Vec<&str> = history
        .logs
        .iter()
        .flat_map(|log| &log.events)
        .filter_map(|e| match e.what {
            What::LeaseLost { .. } => Some("lost"),
            What::ActionEnded { .. } => Some("ended"),
            _ => None,
        })
        .collect();
    // Lost inside the run: the section ends with its loss (no `action-ended` after it).
    assert_eq!(order, ["lost"], "{history:?}");
    let report = check_trace(
        &lines[..],
        Settings {
            lease_us: 50_000,
            ..settings()
        },
    )
    .unwrap();
    assert_eq!(report.tallies.lost, 1, "{report}");
    assert_eq!(report.unexplained_losses, 1, "{report}");
}
