//! Explores a small campaign exhaustively and prints the figures, or the first failing
//! run: `cargo run -p leader-sim --release --example explore -- [NODES [BUDGET [PROFILE
//! [DEPTH [LEASES [DEFECT]]]]]]` (defaults: 2 nodes, budget 2, `sql` (or `redis`,
//! `etcd`), depth 40, 6 leases, no defect; `DEFECT` is a planted defect's name, e.g.
//! `renew-after-deadline`).

use leader_sim::explore::{Exploration, explore};
use leader_sim::{Planted, Profile};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| {
        args.get(i)
            .and_then(|a| a.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let profile = match args.get(2).map(String::as_str) {
        Some("redis") => Profile::Redis,
        Some("etcd") => Profile::Etcd,
        _ => Profile::Sql,
    };
    let defects = args
        .get(5)
        .and_then(|name| Planted::all().into_iter().find(|d| d.name() == name))
        .into_iter()
        .collect();
    let exploration = Exploration {
        nodes: u32::try_from(number(0, 2)).unwrap_or(2),
        budget: usize::try_from(number(1, 2)).unwrap_or(2),
        profile,
        depth: usize::try_from(number(3, 40)).unwrap_or(40),
        leases: number(4, 6),
        defects,
    };
    println!("{exploration:?}");
    let started = std::time::Instant::now();
    let explored = explore(&exploration);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} runs ({} distinct histories, at most {} choice points a run) in {secs:.1} s: {:.0} runs/s",
        explored.runs,
        explored.distinct_histories,
        explored.most_points,
        explored.runs as f64 / secs.max(1e-9)
    );
    match explored.failure {
        None => println!("every run passed"),
        Some(failure) => {
            println!("failed: {}", failure.outcome.report);
            println!("{:#?}", failure.outcome.report.violations);
            println!("stuck: {:?}", failure.outcome.stuck);
            println!("faults: {:#?}", failure.faults);
            println!("choices: {:?}", failure.choices);
        }
    }
}
