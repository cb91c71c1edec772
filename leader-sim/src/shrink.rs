//! Shrinking a failing plan to a short one that still fails the same way.

use leader_history::ViolationKind;

use crate::plan::Plan;
use crate::world::run;

/// One way a run fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// A violation the checker found.
    Violation(ViolationKind),
    /// A lock kept for a given-up owner.
    Stuck,
    /// A ranked campaign's leadership that ignored the ranks.
    RankIgnored,
}

/// The ways a plan's run fails, in order of first appearance.
fn kinds(plan: &Plan) -> Vec<Failure> {
    let outcome = run(plan);
    let mut kinds = Vec::new();
    for v in outcome.report.violations {
        if !kinds.contains(&Failure::Violation(v.kind)) {
            kinds.push(Failure::Violation(v.kind));
        }
    }
    if !outcome.stuck.is_empty() {
        kinds.push(Failure::Stuck);
    }
    if !outcome.rank_ignored.is_empty() {
        kinds.push(Failure::RankIgnored);
    }
    kinds
}

/// A smaller plan whose run still fails the way `plan`'s first fails (or `plan` itself
/// if its run passes): each fault is dropped if the failure survives without it,
/// then the run is cut short while it survives, then nodes are removed from the end, then
/// a poller's tenants.
/// Every step replays whole runs, so a plan of a few dozen faults shrinks in a few
/// hundred runs.
pub fn shrink(plan: &Plan) -> Plan {
    let Some(&target) = kinds(plan).first() else {
        return plan.clone();
    };
    let fails = |p: &Plan| kinds(p).contains(&target);
    let mut best = plan.clone();
    // Faults, one at a time, last first (later faults matter less often).
    let mut i = best.faults.len();
    while i > 0 {
        i -= 1;
        let mut candidate = best.clone();
        candidate.faults.remove(i);
        if fails(&candidate) {
            best = candidate;
        }
    }
    // The run's length, by halves then by tenths.
    for divisor in [2, 10] {
        loop {
            let step = best.run_ms / divisor;
            if step == 0 {
                break;
            }
            let mut candidate = best.clone();
            candidate.run_ms -= step;
            candidate.faults.retain(|f| f.at_ms < candidate.run_ms);
            if fails(&candidate) {
                best = candidate;
            } else {
                break;
            }
        }
    }
    // Nodes, from the last (faults on a removed node go too).
    while best.nodes > 2 {
        let mut candidate = best.clone();
        candidate.nodes -= 1;
        candidate.node_drift_ppm.truncate(candidate.nodes as usize);
        candidate.node_skew_ms.truncate(candidate.nodes as usize);
        candidate.ranks.truncate(candidate.nodes as usize);
        let nodes = candidate.nodes;
        candidate
            .faults
            .retain(|f| f.kind.node().is_none_or(|n| n < nodes));
        if fails(&candidate) {
            best = candidate;
        } else {
            break;
        }
    }
    // A poller's tenants, from the last (at least 2: still a poller).
    while best.polls_tenants() && best.tenants > 2 {
        let mut candidate = best.clone();
        candidate.tenants -= 1;
        if fails(&candidate) {
            best = candidate;
        } else {
            break;
        }
    }
    best
}
