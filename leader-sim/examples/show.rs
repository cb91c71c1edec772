//! Prints the history of one seed's run: `cargo run -p leader-sim --example show -- SEED`.

use leader_sim::{Plan, run, shrink};

fn main() {
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let plan = shrink(&Plan::random(seed, 0));
    let outcome = run(&plan);
    for event in &outcome.events {
        println!("{event:?}");
    }
    println!("{}", outcome.report);
}
