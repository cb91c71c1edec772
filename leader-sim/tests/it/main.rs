//! The one test binary of leader-sim: seeds pass, runs replay exactly, planted defects are
//! caught, failures shrink, the runs the simulator once failed pass, and small campaigns
//! pass exhaustively.
//! `cargo test -p leader-sim --test it -- <module>::` runs one module.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod defects;
mod explore;
mod found;
mod ranked;
mod schedule;
mod seeds;
mod tenants;

use leader_sim::{Outcome, Plan, Planted, run};

/// The first of `plans` whose run with `defect` planted `fails` (a predicate on its
/// outcome), with that outcome; panics naming the defect when none of them does.
fn first_failing(
    plans: impl IntoIterator<Item = Plan>,
    defect: Planted,
    fails: impl Fn(&Outcome) -> bool,
) -> (Plan, Outcome) {
    let mut tried = 0;
    for mut plan in plans {
        tried += 1;
        plan.defects = vec![defect];
        let outcome = run(&plan);
        if fails(&outcome) {
            return (plan, outcome);
        }
    }
    panic!("{} was not caught in {tried} plans", defect.name());
}

/// Whether `plan` passes once its planted defects are taken out.
fn passes_without_defects(mut plan: Plan) -> bool {
    plan.defects.clear();
    run(&plan).passed()
}
