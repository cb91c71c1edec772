//! The scheduler's plan and firing under simulation: nodes run a scheduled job through
//! `leader-schedule`'s `Firing`, and no tick runs twice.

use leader_sim::{Plan, run};

/// The first `count` random plans whose nodes run a scheduled job (clocks within
/// ±`drift` ppm), with the seeds they came from.
pub(crate) fn scheduled(count: usize, drift: i32) -> impl Iterator<Item = Plan> {
    (0..)
        .map(move |seed| Plan::random(seed, drift))
        .filter(|plan| plan.schedule.is_some())
        .take(count)
}

#[test]
fn no_tick_runs_twice_in_scheduled_plans() {
    let (mut ticks, mut acquisitions, mut reruns) = (0, 0, 0);
    for plan in scheduled(300, 450) {
        let outcome = run(&plan);
        assert!(
            outcome.passed(),
            "seed {}: {}\n{:#?}\nshrunk:\n{}",
            plan.seed,
            outcome.report,
            outcome.report.violations,
            leader_sim::shrink(&plan).as_test(&format!("seed_{}", plan.seed))
        );
        ticks += outcome.report.ticks_run;
        acquisitions += outcome.report.acquisitions;
        reruns += outcome.report.ticks_rerun_after_data_loss;
    }
    // Many ticks per run (a tick every half lease to two leases, over 20 leases).
    assert!(ticks > 300 * 8, "{ticks} ticks");
    assert!(acquisitions > ticks / 2, "{acquisitions} acquisitions");
    eprintln!("{ticks} ticks, {acquisitions} acquisitions, {reruns} reruns after data loss");
}
