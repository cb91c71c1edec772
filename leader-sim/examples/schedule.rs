//! Plays the random plans whose nodes run a scheduled job and prints each failing one:
//! `cargo run -p leader-sim --release --example schedule -- FIRST COUNT [MAX_DRIFT_PPM]`
//! (seeds from `FIRST` on, until `COUNT` scheduled plans were played).

use leader_history::What;
use leader_sim::{Plan, run, shrink};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let first = args.first().copied().unwrap_or(0);
    let count = args.get(1).copied().unwrap_or(1_000);
    let drift = i32::try_from(args.get(2).copied().unwrap_or(0)).unwrap_or(0);
    let started = std::time::Instant::now();
    let (mut played, mut failed, mut ticks, mut acquisitions, mut reruns) = (0, 0, 0, 0, 0);
    let mut at_least_once = 0;
    for seed in first.. {
        if played == count {
            break;
        }
        let plan = Plan::random(seed, drift);
        if plan.schedule.is_none() {
            continue;
        }
        played += 1;
        let outcome = run(&plan);
        ticks += outcome.report.ticks_run;
        acquisitions += outcome.report.acquisitions;
        reruns += outcome.report.ticks_rerun_after_data_loss;
        at_least_once += outcome
            .events
            .iter()
            .filter(|e| matches!(e.what, What::TickRan { rerun: true, .. }))
            .count();
        if !outcome.passed() {
            failed += 1;
            if failed <= 3 {
                println!("seed {seed}: {}", outcome.report);
                for v in outcome.report.violations.iter().take(2) {
                    println!("  {:?}: {}", v.kind, v.detail);
                }
                println!("{}", shrink(&plan).as_test(&format!("seed_{seed}")));
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{played} scheduled plans from seed {first}: {failed} failed; {ticks} ticks run \
         ({reruns} again after data loss, {at_least_once} reruns of unfinished ticks), \
         {acquisitions} acquisitions; {secs:.1} s: \
         {:.0} plans/s, {:.0} acquisitions/min",
        played as f64 / secs,
        acquisitions as f64 / secs * 60.0
    );
}
