//! Runs the simulator once failed, kept as it printed them (`Plan::as_test`, shrunk).

use leader_history::{ViolationKind, What};
use leader_sim::{Defect, Fault, FaultKind, Network, Plan, Planted, Profile, Scheduled, run};

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
        tenants: 0,
        schedule: None,
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

/// Seed 20622 of the scheduler's plans (clocks within ±450 ppm), shrunk: Redis restarts
/// without persistence at 3.06 s and 4.46 s. Node 1's firing claimed tick 4.478 before the
/// second loss and ran on past it (its lease lost); the record's versions started again
/// from 1, and by the time node 1 wrote its outcome, over the version it had claimed
/// with, that version was node 2's claim of tick 6.280: the outcome overwrote it, and
/// node 0 ran tick 6.280 again. The scheduler promises at most once only as far as the
/// store keeps its writes (its README says so, this case included); the checker explains
/// a rerun by a data loss up to `STALE_RECORD_WRITE_LEASES` leases before the claim.
#[test]
fn a_stale_outcome_after_a_redis_restart_overwrites_a_newer_claim() {
    let plan = Plan {
        seed: 20622,
        nodes: 4,
        profile: Profile::Redis,
        lease_ms: 1171,
        run_ms: 6917,
        node_drift_ppm: vec![106, 225, -224, -387],
        node_skew_ms: vec![-504, 474, 29, -510],
        store_drift_ppm: -112,
        network: Network {
            min_us: 50,
            max_us: 2000,
            held_back_one_in: 200,
            lost_one_in: 200,
            duplicated_one_in: 200,
        },
        faults: vec![
            Fault {
                at_ms: 3061,
                kind: FaultKind::LoseAll,
            },
            Fault {
                at_ms: 4461,
                kind: FaultKind::LoseAll,
            },
        ],
        campaign: false,
        slots: 1,
        slots_apart: false,
        op_timeout_ms: 390,
        defects: vec![],
        tenants: 0,
        schedule: Some(Scheduled {
            every_ms: 1802,
            clock_skew_ms: 372,
            catch_up: 1,
            at_least_once: false,
        }),
        ranks: vec![],
    };
    let outcome = run(&plan);
    assert!(outcome.passed(), "{}", outcome.report);
    // Tick 4.478 (its claim lost at 4.46 s) and tick 6.280 (overwritten) among them.
    assert!(
        outcome.report.ticks_rerun_after_data_loss >= 2,
        "{}",
        outcome.report.details()
    );
    let twice: Vec<u64> = outcome
        .events
        .iter()
        .filter_map(|e| match e.what {
            What::TickRan { tick, .. } => Some(tick),
            _ => None,
        })
        .filter(|&tick| tick == 1_767_000_006_280)
        .collect();
    assert_eq!(twice.len(), 2, "tick 6.280 ran twice");
    // Without the losses, no tick runs twice.
    let kept = Plan {
        faults: Vec::new(),
        ..plan
    };
    let outcome = run(&kept);
    assert!(outcome.passed(), "{}", outcome.report);
    assert_eq!(outcome.report.ticks_rerun_after_data_loss, 0);
}
