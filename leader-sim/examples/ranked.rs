//! Plays ranked plans (`Plan::random_ranked`) and reports failures, shrunk, and the rate.
//!
//! ```text
//! cargo run -p leader-sim --release --example ranked -- FIRST COUNT [MAX_DRIFT_PPM [DEFECT]]
//! ```
//!
//! DEFECT: a planted defect's name (see `Planted::name`), to see how soon it is caught.

use std::time::Instant;

use leader_history::What;
use leader_sim::{Plan, Planted, run, shrink};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| {
        args.get(i)
            .and_then(|a| a.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let first = number(0, 0);
    let count = number(1, 1_000);
    let drift = i32::try_from(number(2, 0)).unwrap_or(0);
    let defect = args
        .get(3)
        .and_then(|name| Planted::all().into_iter().find(|d| d.name() == name));
    let started = Instant::now();
    let (mut failed, mut acquisitions, mut checks, mut resigned) = (0, 0u64, 0u64, 0u64);
    for seed in first..first + count {
        let mut plan = Plan::random_ranked(seed, drift);
        plan.defects.extend(defect);
        let outcome = run(&plan);
        acquisitions += outcome
            .events
            .iter()
            .filter(|e| matches!(e.what, What::ActionStarted { .. }))
            .count() as u64;
        checks += outcome.ranked_checks;
        resigned += plan
            .faults
            .iter()
            .filter(|f| matches!(f.kind, leader_sim::FaultKind::Resign { .. }))
            .count() as u64;
        if !outcome.passed() {
            failed += 1;
            println!("seed {seed} failed: {}", outcome.report);
            for v in &outcome.report.violations {
                println!("  {}", v.detail);
            }
            for s in outcome.stuck.iter().chain(&outcome.rank_ignored) {
                println!("  {s}");
            }
            if failed <= 3 && std::env::var_os("SHRINK").is_some() {
                println!("{}", shrink(&plan).as_test(&format!("ranked_seed_{seed}")));
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{count} ranked plans in {secs:.1} s ({:.0}/s): {failed} failed; {acquisitions} terms ({:.0}/min), {resigned} resignations, {checks} ranked checks judged",
        count as f64 / secs,
        acquisitions as f64 / secs * 60.0
    );
}
