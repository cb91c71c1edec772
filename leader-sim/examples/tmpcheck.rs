//! tmp
use leader_sim::{Defect, Plan, Planted, run};
fn main() {
    let mut found = Vec::new();
    let mut clean_fail = Vec::new();
    for seed in 0..3000 {
        let mut plan = Plan::random(seed, 0);
        plan.campaign = true;
        plan.slots = 3;
        plan.slots_apart = true;
        if !run(&plan).passed() {
            clean_fail.push(seed);
        }
        plan.defects = vec![Planted::Engine(Defect::ForgetStraySlot)];
        if !run(&plan).passed() {
            found.push(seed);
        }
    }
    println!(
        "defect caught {:?}\nclean fails {:?}",
        &found[..found.len().min(10)],
        &clean_fail[..clean_fail.len().min(10)]
    );
}
