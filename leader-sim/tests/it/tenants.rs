//! Tenant pollers (`Plan::tenants`): each cycle one batched acquire of every tenant's
//! lock, an action per tenant won, batched renewals and a batched release, through the
//! engine's `AcquireBatch` and `TenantBatch`.

use std::collections::{BTreeMap, HashSet};

use leader_history::{Answer, ViolationKind, What};
use leader_sim::{Defect, Outcome, Plan, Planted, run};

use crate::{first_failing, passes_without_defects};

/// The first `count` poller plans among the random seeds from `first` (clocks within the
/// allowance).
fn pollers(first: u64, count: usize) -> impl Iterator<Item = Plan> {
    (first..)
        .map(|seed| Plan::random(seed, 450))
        .filter(Plan::polls_tenants)
        .take(count)
}

/// Each action's (lock, token, node), from the history.
fn actions(outcome: &Outcome) -> Vec<(u32, u64, u32)> {
    outcome
        .events
        .iter()
        .filter_map(|e| match e.what {
            What::ActionStarted { lock, token, .. } => Some((lock, token, e.node?)),
            _ => None,
        })
        .collect()
}

#[test]
fn poller_plans_pass_and_every_action_ran_on_a_grant_of_the_store() {
    let mut acquisitions = 0;
    let mut grants = 0;
    let mut locks = BTreeMap::new();
    let mut failed_alone = 0;
    for plan in pollers(0, 300) {
        let outcome = run(&plan);
        assert!(
            outcome.passed(),
            "seed {}: {}\n{:#?}\n{:?}\nshrunk:\n{}",
            plan.seed,
            outcome.report,
            outcome.report.violations,
            outcome.stuck,
            leader_sim::shrink(&plan).as_test(&format!("seed_{}", plan.seed))
        );
        // The store's own record of what it granted, not the history: every action ran
        // on a lease the store gave that node for that tenant, and no grant served two.
        let granted: HashSet<(u32, u64, u32)> = outcome.grants.iter().copied().collect();
        let acted = actions(&outcome);
        for action in &acted {
            assert!(granted.contains(action), "seed {}: {action:?}", plan.seed);
            assert!(action.0 < plan.tenants, "seed {}: {action:?}", plan.seed);
        }
        let distinct: HashSet<_> = acted.iter().collect();
        assert_eq!(distinct.len(), acted.len(), "seed {}", plan.seed);
        // The checker counts the same actions.
        assert_eq!(
            outcome.report.acquisitions,
            acted.len(),
            "seed {}",
            plan.seed
        );
        acquisitions += acted.len();
        grants += outcome.grants.len();
        for (lock, _, _) in acted {
            *locks.entry(lock).or_insert(0) += 1;
        }
        failed_alone += outcome
            .events
            .iter()
            .filter(|e| {
                matches!(&e.what, What::AcquireAnswered { answer: Answer::Indeterminate { message: Some(m) }, .. } if m.contains("failed this item alone"))
            })
            .count();
    }
    // Most grants were acted on (the rest: answers lost, late, or refused by the
    // engine), and every tenant index up to the largest poller's was used.
    assert!(acquisitions > 8_000, "{acquisitions}");
    assert!(
        acquisitions * 10 >= grants * 8,
        "{acquisitions} of {grants}"
    );
    assert_eq!(locks.len(), 8, "{locks:?}");
    // Batches that failed one tenant alone were played.
    assert!(failed_alone > 50, "{failed_alone}");
}

/// The first poller plan (among the first `within`) whose run with `defect` fails.
fn caught(defect: Defect, within: usize) -> (Plan, Outcome) {
    first_failing(pollers(0, within), Planted::Engine(defect), |outcome| {
        !outcome.passed()
    })
}

#[test]
fn a_renewal_after_the_deadline_lets_a_second_holder_in_to_a_tenant() {
    let (plan, outcome) = caught(Defect::RenewAfterDeadline, 50);
    let kinds: Vec<_> = outcome.report.violations.iter().map(|v| v.kind).collect();
    assert!(
        kinds.contains(&ViolationKind::UnexplainedOverlap)
            || kinds.contains(&ViolationKind::LateRenewal),
        "{kinds:?}"
    );
    // The same plan passes without the defect.
    assert!(passes_without_defects(plan));
}

#[test]
fn an_action_on_a_late_tenant_lease_is_seen_starting_late() {
    let (plan, outcome) = caught(Defect::ActionOnLateLease, 200);
    let kinds: Vec<_> = outcome.report.violations.iter().map(|v| v.kind).collect();
    assert!(kinds.contains(&ViolationKind::LateAction), "{kinds:?}");
    assert!(passes_without_defects(plan));
}

#[test]
fn a_dropped_orphan_release_leaves_a_tenant_stuck() {
    let (plan, outcome) = caught(Defect::DropOrphanRelease, 50);
    assert!(outcome.report.violations.is_empty(), "{}", outcome.report);
    assert!(
        outcome
            .stuck
            .iter()
            .any(|s| s.contains("still held the lock")),
        "{:?}",
        outcome.stuck
    );
    assert!(passes_without_defects(plan));
}

#[test]
fn a_poller_plan_always_plays_the_same_run_and_prints_its_tenants() {
    let plan = pollers(0, 1).next().unwrap();
    let (first, again) = (run(&plan), run(&plan));
    assert_eq!(first.events, again.events);
    assert_eq!(first.grants, again.grants);
    let test = plan.as_test("poller");
    assert!(
        test.contains(&format!("tenants: {},", plan.tenants)),
        "{test}"
    );
}

#[test]
fn a_failing_poller_plan_shrinks_to_a_poller_that_still_fails() {
    let (plan, outcome) = caught(Defect::ActionOnLateLease, 200);
    assert!(!outcome.report.violations.is_empty());
    let small = leader_sim::shrink(&plan);
    assert!(small.polls_tenants(), "{small:?}");
    assert!(small.tenants <= plan.tenants && small.faults.len() <= plan.faults.len());
    let again = run(&small);
    assert!(
        again
            .report
            .violations
            .iter()
            .any(|v| v.kind == ViolationKind::LateAction),
        "{}",
        again.report
    );
}
