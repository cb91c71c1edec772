//! Each planted defect is caught within a bounded number of seeds, and its failing run
//! shrinks to a short plan that still fails the same way.

use leader_history::ViolationKind;
use leader_sim::{Defect, Plan, Planted, run, shrink};

use crate::{first_failing, passes_without_defects};

/// The first seed (below `within`) whose run with `defect` planted fails, and the kinds
/// of violation it shows (none when only a lock was stuck with a given-up owner).
fn caught(defect: Planted, within: u64) -> (Plan, Vec<ViolationKind>) {
    let seeds = (0..within).map(|seed| Plan::random(seed, 0));
    let (plan, outcome) = first_failing(seeds, defect, |outcome| !outcome.passed());
    let kinds = outcome.report.violations.iter().map(|v| v.kind).collect();
    (plan, kinds)
}

#[test]
fn a_forgotten_stray_slot_stays_held_beside_the_term() {
    // A group on a store that tries its slots one call each: an attempt whose answer
    // was lost took a slot, the next attempt (same owner) another; the first is a stray.
    let defect = Planted::Engine(Defect::ForgetStraySlot);
    let (plan, kinds) = caught(defect, 1_500);
    assert!(kinds.is_empty(), "{kinds:?}");
    assert!(
        plan.campaign && plan.slots > 1 && plan.slots_apart,
        "{plan:?}"
    );
    let outcome = run(&plan);
    assert!(
        outcome
            .stuck
            .iter()
            .any(|s| s.contains("for the same owner")),
        "{:?}",
        outcome.stuck
    );
    // Without the defect, the engine releases the stray: the same plan passes.
    assert!(passes_without_defects(plan));
}

#[test]
fn a_dropped_orphan_release_leaves_the_lock_stuck() {
    let defect = Planted::Engine(Defect::DropOrphanRelease);
    let (plan, kinds) = caught(defect, 500);
    // Not a safety violation: the lock is held for nobody until it expires.
    assert!(kinds.is_empty(), "{kinds:?}");
    let outcome = run(&plan);
    assert!(!outcome.stuck.is_empty());
    assert!(
        outcome.stuck[0].contains("still held the lock"),
        "{:?}",
        outcome.stuck
    );
}

#[test]
fn renewing_after_the_deadline_lets_a_second_holder_in() {
    let (_, kinds) = caught(Planted::Engine(Defect::RenewAfterDeadline), 50);
    assert!(
        kinds.contains(&ViolationKind::UnexplainedOverlap),
        "{kinds:?}"
    );
}

#[test]
fn an_action_on_a_late_lease_is_seen_starting_late() {
    let (_, kinds) = caught(Planted::Engine(Defect::ActionOnLateLease), 400);
    assert!(kinds.contains(&ViolationKind::LateAction), "{kinds:?}");
}

#[test]
fn tokens_from_the_clients_clock_go_back() {
    let (_, kinds) = caught(Planted::TokenFromClientClock, 50);
    assert!(kinds.contains(&ViolationKind::TokenOrder), "{kinds:?}");
}

#[test]
fn without_the_clock_rate_allowance_slow_clocks_let_a_second_holder_in() {
    // Jobs with 60 s leases, clocks up to ±450 ppm off (within the allowance, when it is
    // there): the window is a lease times the rates' difference, up to 54 ms.
    let defect = Planted::Engine(Defect::NoClockRateAllowance);
    let plan = |seed| Plan {
        campaign: false,
        op_timeout_ms: 60_000,
        ..Plan::random_with_lease(seed, 450, Some(60_000))
    };
    let (failing, _) = first_failing((0..300).map(plan), defect, |outcome| {
        outcome
            .report
            .violations
            .iter()
            .any(|v| v.kind == ViolationKind::UnexplainedOverlap)
    });
    // With the allowance, the same plan passes.
    let seed = failing.seed;
    assert!(passes_without_defects(failing), "seed {seed}");
}

#[test]
fn a_failing_run_shrinks_and_prints_as_a_test() {
    let (plan, kinds) = caught(Planted::TokenFromClientClock, 50);
    let small = shrink(&plan);
    assert!(small.faults.len() <= plan.faults.len());
    assert!(small.run_ms <= plan.run_ms);
    let report = run(&small).report;
    assert!(
        report.violations.iter().any(|v| v.kind == kinds[0]),
        "{report}"
    );
    let test = small.as_test("found");
    assert!(test.starts_with("#[test]\nfn found() {"), "{test}");
    assert!(test.contains("Planted::TokenFromClientClock"), "{test}");
}

#[test]
fn without_a_defect_the_same_seeds_pass() {
    for seed in 0..50 {
        let plan = Plan::random(seed, 0);
        assert!(run(&plan).passed(), "seed {seed}");
    }
}

#[test]
fn claiming_a_tick_twice_runs_it_twice() {
    // The plan ignores the record's claim of the tick fired: a node that fires a tick
    // another node ran (each node fires every tick) claims and runs it again.
    let (plan, kinds) = caught(Planted::Engine(Defect::ClaimTickTwice), 50);
    assert!(kinds.contains(&ViolationKind::TickRanTwice), "{kinds:?}");
    assert!(plan.schedule.is_some(), "{plan:?}");
    // Without the defect, the record stops the second run: the same plan passes.
    let mut fixed = plan;
    fixed.defects.clear();
    let outcome = run(&fixed);
    assert!(outcome.passed(), "{}", outcome.report);
    assert!(outcome.report.ticks_run > 0);
}
