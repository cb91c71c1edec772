//! Plays seeds and prints each failing one: `cargo run -p leader-sim --release --example
//! seeds -- [FIRST [COUNT [MAX_DRIFT_PPM [LEASE_MS]]]]`. Without `FIRST`, the first seed is
//! drawn from the time and printed before anything runs, so a long run can be replayed.

use leader_sim::{Plan, run, shrink};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let first = args.first().copied().unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs().wrapping_mul(1_000_003))
    });
    let count = args.get(1).copied().unwrap_or(100);
    let drift = args.get(2).copied().unwrap_or(0);
    let lease = args.get(3).copied();
    println!(
        "seeds {first}..{}, clocks within ±{drift} ppm",
        first.wrapping_add(count)
    );
    let started = std::time::Instant::now();
    let (mut failed, mut acquisitions, mut steps) = (0, 0, 0);
    for seed in (0..count).map(|i| first.wrapping_add(i)) {
        let plan = Plan::random_with_lease(seed, i32::try_from(drift).unwrap_or(0), lease);
        let outcome = run(&plan);
        acquisitions += outcome.report.acquisitions;
        steps += outcome.steps;
        if !outcome.passed() {
            failed += 1;
            if failed <= 3 {
                println!("seed {seed}: {}", outcome.report);
                for stuck in outcome.stuck.iter().take(2) {
                    println!("  stuck: {stuck}");
                }
                for v in outcome.report.violations.iter().take(2) {
                    println!("  {:?}: {}", v.kind, v.detail);
                }
                let small = shrink(&plan);
                println!("{}", small.as_test(&format!("seed_{seed}")));
            }
        }
    }
    println!(
        "{count} seeds from {first}: {failed} failed, {acquisitions} acquisitions, {steps} steps, {:?}",
        started.elapsed()
    );
}
