//! Plays tenant-poller plans and prints each failing one: `cargo run -p leader-sim
//! --release --example tenants -- [FIRST [COUNT [MAX_DRIFT_PPM [LEASE_MS]]]]` plays the
//! first `COUNT` poller plans (`Plan::polls_tenants`) among the seeds from `FIRST`.
//! Without `FIRST`, the first seed is drawn from the time and printed before anything
//! runs, so a long run can be replayed.

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
    let drift = i32::try_from(args.get(2).copied().unwrap_or(0)).unwrap_or(0);
    let lease = args.get(3).copied();
    println!("poller plans from seed {first}, clocks within ±{drift} ppm");
    let started = std::time::Instant::now();
    let (mut failed, mut acquisitions, mut grants, mut steps) = (0, 0, 0, 0);
    let plans = (0..)
        .map(|i| first.wrapping_add(i))
        .map(|seed| Plan::random_with_lease(seed, drift, lease))
        .filter(Plan::polls_tenants);
    for plan in plans.take(usize::try_from(count).unwrap_or(usize::MAX)) {
        let outcome = run(&plan);
        acquisitions += outcome.report.acquisitions;
        grants += outcome.grants.len();
        steps += outcome.steps;
        if !outcome.passed() {
            failed += 1;
            if failed <= 3 {
                println!("seed {}: {}", plan.seed, outcome.report);
                for stuck in outcome.stuck.iter().take(2) {
                    println!("  stuck: {stuck}");
                }
                for v in outcome.report.violations.iter().take(2) {
                    println!("  {:?}: {}", v.kind, v.detail);
                }
                let small = shrink(&plan);
                println!("{}", small.as_test(&format!("seed_{}", plan.seed)));
            }
        }
    }
    let elapsed = started.elapsed();
    let per_minute = acquisitions as f64 * 60.0 / elapsed.as_secs_f64().max(1e-9);
    println!(
        "{count} poller plans: {failed} failed, {acquisitions} tenant acquisitions ({grants} grants by the store), {steps} steps, {elapsed:?}: {:.0} plans/s, {:.2} million acquisitions a minute",
        count as f64 / elapsed.as_secs_f64().max(1e-9),
        per_minute / 1e6
    );
}
