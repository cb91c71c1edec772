//! The rule "a tick ran twice", on made-up histories (the checker's shared helpers are in
//! `checker/tests.rs`).

use super::STALE_RECORD_WRITE_LEASES;
use crate::checker::ViolationKind;
use crate::checker::tests::{fault, run};
use crate::event::{Clock, Event, FaultKind, What};
use crate::history::Log;

/// A log of `worker` holding its `tick-ran` events: (at, tick, claimed, rerun).
fn ticks_of(worker: u32, runs: &[(u64, u64, Option<u64>, bool)]) -> Log {
    Log {
        node: worker,
        events: runs
            .iter()
            .map(|&(at, tick, claimed, rerun)| Event {
                at,
                clock: Clock::Wall,
                node: Some(worker),
                what: What::TickRan {
                    lock: 0,
                    tick,
                    token: u64::from(worker),
                    claimed,
                    rerun,
                },
            })
            .collect(),
        died_at: None,
        torn: 0,
    }
}

#[test]
fn a_tick_run_twice_is_a_violation() {
    // Ticks 1000 and 2000 each once: passes.
    let once = run(
        vec![
            ticks_of(1, &[(100, 1_000, Some(90), false)]),
            ticks_of(2, &[(300, 2_000, Some(290), false)]),
        ],
        vec![],
        &[],
    );
    assert!(once.passed(), "{once}");
    assert_eq!((once.ticks_run, once.ticks_run_twice), (2, 0));
    // Tick 1000 again, on another node (or the same one): a violation showing both runs.
    for worker in [2, 1] {
        let twice = run(
            vec![
                ticks_of(1, &[(100, 1_000, Some(90), false)]),
                ticks_of(worker + 10, &[(300, 1_000, Some(290), false)]),
            ],
            vec![fault(FaultKind::Restart { data_lost: false }, 95, 200)],
            &[],
        );
        assert!(!twice.passed());
        assert_eq!(twice.ticks_run_twice, 1);
        let violation = &twice.violations[0];
        assert_eq!(violation.kind, ViolationKind::TickRanTwice);
        assert_eq!(
            violation.events.iter().map(|e| e.at).collect::<Vec<_>>(),
            vec![100, 300]
        );
    }
}

#[test]
fn a_rerun_or_a_data_loss_around_the_claim_lets_a_tick_run_again() {
    // Claims sent at 5,000 and 9,000 µs, runs at 5,010 and 9,010 (leases of 100 µs).
    let twice = |rerun| {
        vec![
            ticks_of(1, &[(5_010, 1_000, Some(5_000), false)]),
            ticks_of(2, &[(9_010, 1_000, Some(9_000), rerun)]),
        ]
    };
    // At-least-once delivery reruns a tick whose run did not finish: allowed.
    let rerun = run(twice(true), vec![], &[]);
    assert!(rerun.passed(), "{rerun}");
    // The store lost data after the first claim was sent, before the second run: the
    // claim may have been lost (the scheduler's README allows the tick to run again).
    // Or it lost data shortly before the first claim: the versions started again, and a
    // firing under way across the loss may have written over that claim.
    let window = STALE_RECORD_WRITE_LEASES * 100;
    for lost in [
        FaultKind::Restart { data_lost: true },
        FaultKind::Wipe { rows: 1 },
        FaultKind::Failover { data_lost: true },
    ] {
        for at in [7_000, 5_000 - window] {
            let after = run(twice(false), vec![fault(lost, at, at)], &[]);
            assert!(after.passed(), "{lost:?} at {at}: {after}");
            assert_eq!(after.ticks_rerun_after_data_loss, 1);
        }
    }
    // A loss over longer before the first claim, or begun after the second run began,
    // or one that keeps the data, explains nothing.
    for (kind, start, end) in [
        (
            FaultKind::Restart { data_lost: true },
            10,
            5_000 - window - 1,
        ),
        (FaultKind::Restart { data_lost: true }, 9_011, 9_020),
        (FaultKind::Restart { data_lost: false }, 7_000, 7_000),
    ] {
        let unrelated = run(twice(false), vec![fault(kind, start, end)], &[]);
        assert_eq!(unrelated.ticks_run_twice, 1, "{kind:?} {start}..{end}");
        assert!(!unrelated.passed());
    }
}
