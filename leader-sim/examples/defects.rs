//! For each plantable defect, the first seed whose run catches it and the kinds of
//! violation: `cargo run -p leader-sim --release --example defects -- [MAX_SEEDS]`.

use leader_sim::{Plan, Planted, run};

fn main() {
    let max: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    for defect in Planted::all() {
        let found = (0..max).find_map(|seed| {
            let mut plan = Plan::random(seed, 0);
            plan.defects = vec![defect];
            let outcome = run(&plan);
            (!outcome.report.passed()).then_some((seed, outcome.report))
        });
        match found {
            Some((seed, report)) => {
                let mut kinds: Vec<_> = report.violations.iter().map(|v| v.kind).collect();
                kinds.dedup();
                println!("{}: caught at seed {seed}: {kinds:?}", defect.name());
            }
            None => println!("{}: NOT caught in {max} seeds", defect.name()),
        }
    }
}
