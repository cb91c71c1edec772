//! Ranked campaigns (`Candidacy`, surveys, preemption) and resignations: random ranked
//! plans pass, the ranked liveness check judges and can fail, a resigning leader's
//! record is gone before the lock is free.

use leader_history::What;
use leader_sim::{Fault, FaultKind, Network, Plan, Planted, Profile, run};

use crate::{first_failing, passes_without_defects};

/// A quiet network: nothing lost, held back or duplicated.
fn quiet() -> Network {
    Network {
        held_back_one_in: 0,
        lost_one_in: 0,
        duplicated_one_in: 0,
        ..Network::default()
    }
}

/// Two or three ranked nodes on `profile`, no fault but `faults`.
fn ranked(profile: Profile, ranks: Vec<(u32, bool)>, faults: Vec<Fault>) -> Plan {
    let nodes = u32::try_from(ranks.len()).unwrap();
    Plan {
        seed: 7,
        nodes,
        profile,
        lease_ms: 1_000,
        run_ms: 12_000,
        node_drift_ppm: Vec::new(),
        node_skew_ms: Vec::new(),
        store_drift_ppm: 0,
        network: quiet(),
        faults,
        campaign: true,
        slots: 1,
        slots_apart: false,
        op_timeout_ms: 1_000,
        defects: Vec::new(),
        tenants: 0,
        schedule: None,
        ranks,
    }
}

/// The node and start time of every term, in order.
fn terms(plan: &Plan) -> Vec<(u32, u64)> {
    run(plan)
        .events
        .iter()
        .filter(|e| matches!(e.what, What::ActionStarted { .. }))
        .map(|e| (e.node.unwrap(), e.at))
        .collect()
}

#[test]
fn random_ranked_plans_pass() {
    let (mut judged, mut resigned) = (0, 0);
    for seed in 0..300 {
        let plan = Plan::random_ranked(seed, 300);
        assert!(plan.ranked(), "{plan:?}");
        let outcome = run(&plan);
        assert!(
            outcome.passed(),
            "seed {seed}: {}\n{:#?}\n{:?}\n{:?}",
            outcome.report,
            outcome.report.violations,
            outcome.stuck,
            outcome.rank_ignored
        );
        judged += outcome.ranked_checks;
        resigned += plan
            .faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Resign { .. }))
            .count();
    }
    // Not vacuous: quiet stretches were judged, and campaigns resigned.
    assert!(judged > 20, "{judged} ranked checks judged");
    assert!(resigned > 100, "{resigned} resignations");
}

#[test]
fn half_the_single_leader_campaigns_of_random_plans_are_ranked() {
    let plans: Vec<Plan> = (0..400).map(|seed| Plan::random(seed, 0)).collect();
    let single = plans.iter().filter(|p| p.campaign && p.slots == 1).count();
    let ranked = plans.iter().filter(|p| p.ranked()).count();
    assert!(
        ranked * 3 > single && ranked * 3 < single * 2,
        "{ranked} of {single}"
    );
    // Jobs and groups are never ranked, and never resign.
    for plan in plans.iter().filter(|p| !p.ranked()) {
        assert!(plan.ranks.is_empty());
        assert!(
            !plan
                .faults
                .iter()
                .any(|f| matches!(f.kind, FaultKind::Resign { .. }))
        );
    }
}

#[test]
fn the_best_rank_leads_and_a_preempting_leader_hands_over() {
    // Node 1 (rank 2) outranks node 0 (rank 1, preempting): whoever wins first, node 1
    // leads within a few heartbeats and keeps leading.
    let plan = ranked(Profile::Sql, vec![(1, true), (2, true)], Vec::new());
    let outcome = run(&plan);
    assert!(outcome.passed(), "{}", outcome.report);
    assert!(outcome.ranked_checks > 10, "{}", outcome.ranked_checks);
    let terms = terms(&plan);
    let (last, since) = *terms.last().unwrap();
    assert_eq!(last, 1, "{terms:?}");
    assert!(since < 2_000_000, "{terms:?}");
    // Not preempting, node 0 keeps a term it won; node 1 waits it out (forever here).
    let keeps = ranked(Profile::Sql, vec![(1, false), (2, true)], Vec::new());
    let first = self::terms(&keeps)[0].0;
    assert!(self::terms(&keeps).iter().all(|(n, _)| *n == first));
}

#[test]
fn a_resigning_leaders_record_is_gone_before_the_lock_is_free() {
    // Node 0 (rank 3) leads; it resigns at 3 s. On Redis the lock's release wakes node 1
    // (rank 1) at once: its survey must not see node 0's record (released first), so it
    // takes over within a few round trips — not when the record would run out (a lease).
    let resign = Fault {
        at_ms: 3_000,
        kind: FaultKind::Resign { node: 0 },
    };
    let plan = ranked(Profile::Redis, vec![(3, true), (1, true)], vec![resign]);
    let outcome = run(&plan);
    assert!(outcome.passed(), "{}", outcome.report);
    let terms = terms(&plan);
    assert_eq!(terms[0].0, 0, "{terms:?}");
    let next = terms.iter().find(|(_, at)| *at > 3_000_000).unwrap();
    assert_eq!(next.0, 1, "{terms:?}");
    assert!(next.1 < 3_050_000, "{terms:?}");
    // Node 0 campaigns again after its rest, and as the better rank takes the lock back.
    assert_eq!(terms.last().unwrap().0, 0, "{terms:?}");
}

#[test]
fn a_listing_that_misses_records_is_caught_by_the_ranked_check() {
    let defect = Planted::ListingMissesRecords;
    let seeds = (0..300).map(|seed| Plan::random_ranked(seed, 0));
    let (plan, outcome) = first_failing(seeds, defect, |outcome| !outcome.passed());
    assert!(outcome.report.passed(), "{}", outcome.report);
    assert!(
        outcome.rank_ignored[0].contains("below the live rank"),
        "{:?}",
        outcome.rank_ignored
    );
    // With a sound listing, the same plan passes.
    assert!(passes_without_defects(plan));
    // And in the smallest case: the worse node that won first is never preempted.
    let mut plan = ranked(Profile::Sql, vec![(2, true), (1, true)], Vec::new());
    plan.seed = (0..50)
        .find(|&seed| {
            let plan = Plan {
                seed,
                ..plan.clone()
            };
            terms(&plan)[0].0 == 1
        })
        .unwrap();
    assert!(run(&plan).passed());
    plan.defects = vec![defect];
    assert!(!run(&plan).rank_ignored.is_empty());
}

#[test]
fn a_late_action_is_caught_in_ranked_campaigns() {
    // An engine defect of every campaign, planted in ranked ones.
    let defect = Planted::Engine(leader_sim::Defect::ActionOnLateLease);
    let seeds = (0..300).map(|seed| Plan::random_ranked(seed, 0));
    let (plan, _) = first_failing(seeds, defect, |outcome| {
        outcome
            .report
            .violations
            .iter()
            .any(|v| v.kind == leader_history::ViolationKind::LateAction)
    });
    assert!(passes_without_defects(plan));
}

#[test]
fn a_ranked_plan_prints_as_a_test_that_replays() {
    let plan = Plan::random_ranked(11, 100);
    let text = plan.as_test("replay");
    assert!(
        text.contains(&format!("ranks: vec!{:?},", plan.ranks)),
        "{text}"
    );
    if plan
        .faults
        .iter()
        .any(|f| matches!(f.kind, FaultKind::Resign { .. }))
    {
        assert!(text.contains("FaultKind::Resign { node: "), "{text}");
    }
    let first = run(&plan);
    let again = run(&plan);
    assert_eq!(first.events, again.events);
}

/// Ranked seed 44 with `listing-misses-records` planted, shrunk and printed by
/// `Plan::as_test` (`SHRINK=1 cargo run -p leader-sim --release --example ranked -- 44 1 0
/// listing-misses-records`): the literal replays the failure, and passes without the
/// defect.
#[test]
fn a_shrunk_ranked_failure_replays_from_its_literal() {
    let plan = Plan {
        seed: 44,
        nodes: 5,
        profile: Profile::Redis,
        lease_ms: 567,
        run_ms: 5670,
        node_drift_ppm: vec![0, 0, 0, 0, 0],
        node_skew_ms: vec![242, -214, -99, -109, 167],
        store_drift_ppm: 0,
        network: Network {
            min_us: 50,
            max_us: 2000,
            held_back_one_in: 200,
            lost_one_in: 200,
            duplicated_one_in: 200,
        },
        faults: vec![
            Fault {
                at_ms: 278,
                kind: FaultKind::LoseAll,
            },
            Fault {
                at_ms: 1217,
                kind: FaultKind::Pause { node: 4, ms: 420 },
            },
            Fault {
                at_ms: 2795,
                kind: FaultKind::Partition { node: 0, ms: 504 },
            },
        ],
        campaign: true,
        slots: 1,
        slots_apart: false,
        op_timeout_ms: 189,
        defects: vec![Planted::ListingMissesRecords],
        tenants: 0,
        schedule: None,
        ranks: vec![(3, true), (1, false), (2, true), (0, true), (1, true)],
    };
    let outcome = run(&plan);
    assert!(outcome.report.passed(), "{}", outcome.report);
    assert!(
        outcome.rank_ignored[0]
            .contains("node 3 (rank 0, preempting) held the lock below the live rank 3"),
        "{:?}",
        outcome.rank_ignored
    );
    let mut fixed = plan;
    fixed.defects.clear();
    let outcome = run(&fixed);
    assert!(outcome.passed(), "{:?}", outcome.rank_ignored);
}

#[test]
fn a_resigning_standby_withdraws_its_record_at_once() {
    // Node 0 (rank 0, not preempting) leads; node 1 (rank 3) stands by behind it, node 2
    // (rank 2) too, deferring to node 1. Node 1 resigns at 3 s, node 0 at 3.1 s: the
    // lock's release wakes node 2, whose survey must no longer see node 1's record.
    let faults = vec![
        Fault {
            at_ms: 3_000,
            kind: FaultKind::Resign { node: 1 },
        },
        Fault {
            at_ms: 3_100,
            kind: FaultKind::Resign { node: 0 },
        },
    ];
    let mut plan = ranked(
        Profile::Redis,
        vec![(0, false), (3, true), (2, true)],
        faults,
    );
    // A seed where node 0 wins first, and node 1 rests (before it campaigns again) past
    // 3.2 s.
    plan.seed = (0..200)
        .find(|&seed| {
            let terms = terms(&Plan {
                seed,
                ..plan.clone()
            });
            terms[0].0 == 0 && !terms.iter().any(|(n, at)| *n == 1 && *at < 3_200_000)
        })
        .unwrap();
    let outcome = run(&plan);
    assert!(outcome.passed(), "{}", outcome.report);
    let terms = terms(&plan);
    assert!(
        terms.iter().all(|(n, at)| *n == 0 || *at > 3_100_000),
        "{terms:?}"
    );
    let next = terms.iter().find(|(_, at)| *at > 3_100_000).unwrap();
    assert_eq!(next.0, 2, "seed {}: {terms:?}", plan.seed);
    assert!(next.1 < 3_150_000, "seed {}: {terms:?}", plan.seed);
}
