//! Runs the simulator once failed, kept as it printed them (`Plan::as_test`, shrunk).

use leader_history::ViolationKind;
use leader_sim::{Defect, Fault, FaultKind, Network, Plan, Planted, Profile, run};

/// Seed 881 with 30 s leases and clocks up to ±200 ppm off, shrunk: node 0's clock ran
/// 180 ppm slow and the store's 56 ppm slow; cut off from the store by a partition, node
/// 0 held its lease 1.8 ms past the store's expiry while node 2 took the lock. Before the
/// engine gave up the last thousandth of each lease, this plan failed as it does with
/// that allowance taken out again.
fn slow_clock() -> Plan {
    Plan {
        seed: 881,
        nodes: 4,
        profile: Profile::Sql,
        lease_ms: 30000,
        run_ms: 218700,
        node_drift_ppm: vec![-180, -100, 126, 43],
        node_skew_ms: vec![13693, -2297, -2304, -976],
        store_drift_ppm: -56,
        network: Network {
            min_us: 50,
            max_us: 2000,
            held_back_one_in: 200,
            lost_one_in: 200,
            duplicated_one_in: 200,
        },
        faults: vec![
            Fault {
                at_ms: 42889,
                kind: FaultKind::Partition { node: 0, ms: 28944 },
            },
            Fault {
                at_ms: 154700,
                kind: FaultKind::Crash {
                    node: 1,
                    down_ms: 7887,
                },
            },
        ],
        campaign: false,
        slots: 1,
        slots_apart: false,
        op_timeout_ms: 30000,
        defects: vec![],
        ranks: vec![],
    }
}

#[test]
fn a_slow_clock_gives_up_its_lease_before_the_store_frees_it() {
    let outcome = run(&slow_clock());
    assert!(outcome.passed(), "{}", outcome.report);
}

#[test]
fn without_the_clock_rate_allowance_the_slow_clock_overlaps() {
    let mut plan = slow_clock();
    plan.defects = vec![Planted::Engine(Defect::NoClockRateAllowance)];
    let report = run(&plan).report;
    assert_eq!(report.unexplained_overlaps, 1, "{report}");
    assert_eq!(report.violations[0].kind, ViolationKind::UnexplainedOverlap);
}
