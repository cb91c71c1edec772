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
            (!outcome.passed()).then_some((seed, outcome))
        });
        match found {
            Some((seed, outcome)) => {
                let mut kinds: Vec<String> = outcome
                    .report
                    .violations
                    .iter()
                    .map(|v| format!("{:?}", v.kind))
                    .collect();
                if !outcome.stuck.is_empty() {
                    kinds.push("Stuck".to_owned());
                }
                kinds.dedup();
                println!("{}: caught at seed {seed}: {kinds:?}", defect.name());
            }
            None => println!("{}: NOT caught in {max} seeds", defect.name()),
        }
    }
}
