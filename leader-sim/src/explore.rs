//! Exhaustive exploration of small campaigns: stateless model checking by replay.
//!
//! A random run ([`crate::run`]) draws every message's fate from its seed; here a small
//! campaign (2 or 3 nodes, one profile, a few leases, no clock error) is played once for
//! every choice vector within the bounds, by a depth-first search over the choice points
//! of [`Scripted`]: play with a prefix of choices (the default, nothing goes wrong, after
//! it), note how many options each choice point had, and go back to the deepest point
//! that has an option not yet tried. Every run is judged ([`Outcome::passed`]); the first
//! that fails is returned with its choice vector, which replays it exactly ([`replay`]).
//!
//! The bounds make it finish: at most `budget` choices other than the default in one run
//! (a fault budget), and only the first `depth` choice points of a run have options.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::choices::{ChoicePoint, Scripted};
use crate::plan::{Network, Plan, Planted, Profile};
use crate::world::{Outcome, run_with};

/// One exhaustive exploration: the campaign, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exploration {
    /// How many nodes campaign.
    pub nodes: u32,
    /// The store's semantics.
    pub profile: Profile,
    /// How many leases each run lasts.
    pub leases: u64,
    /// At most this many choices other than the default in one run.
    pub budget: usize,
    /// Only the first `depth` choice points of a run have options.
    pub depth: usize,
    /// Defects planted for every run.
    pub defects: Vec<Planted>,
}

/// The lease of an explored campaign, ms.
pub const LEASE_MS: u64 = 1_000;

impl Exploration {
    /// The plan every run plays (its choices aside): the nodes campaign, with no clock
    /// error and no fault but the choices'; the seed fixes only the nodes' rests before
    /// their first round, owner tokens and backoff jitter.
    pub fn plan(&self) -> Plan {
        Plan {
            seed: 0,
            nodes: self.nodes,
            profile: self.profile,
            lease_ms: LEASE_MS,
            run_ms: LEASE_MS * self.leases,
            node_drift_ppm: Vec::new(),
            node_skew_ms: Vec::new(),
            store_drift_ppm: 0,
            network: Network {
                min_us: 500,
                max_us: 500,
                held_back_one_in: 0,
                lost_one_in: 0,
                duplicated_one_in: 0,
            },
            faults: Vec::new(),
            campaign: true,
            slots: 1,
            slots_apart: false,
            op_timeout_ms: LEASE_MS,
            defects: self.defects.clone(),
            tenants: 0,
            schedule: None,
            ranks: Vec::new(),
        }
    }
}

/// What an exploration found.
#[derive(Debug)]
pub struct Explored {
    /// How many runs were played (every one a different choice vector).
    pub runs: u64,
    /// How many of them played a history no other run played.
    pub distinct_histories: usize,
    /// The most choice points one run met.
    pub most_points: usize,
    /// The first run that failed, if one did.
    pub failure: Option<Failure>,
}

/// A run that failed.
#[derive(Debug)]
pub struct Failure {
    /// Its choice vector (cut after its last choice other than the default):
    /// [`replay`] plays it again.
    pub choices: Vec<u32>,
    /// Its choice points other than the default: where the faults were.
    pub faults: Vec<ChoicePoint>,
    /// What it gave.
    pub outcome: Outcome,
}

/// Explores every choice vector within the bounds of `exploration`, depth first, until a
/// run fails.
pub fn explore(exploration: &Exploration) -> Explored {
    let plan = exploration.plan();
    let mut prefix: Vec<u32> = Vec::new();
    let mut runs = 0;
    let mut histories = HashSet::new();
    let mut most_points = 0;
    loop {
        let mut choices = Scripted::new(prefix, exploration.depth);
        let outcome = run_with(&plan, &mut choices);
        runs += 1;
        most_points = most_points.max(choices.points().len());
        if !outcome.passed() {
            return Explored {
                runs,
                distinct_histories: histories.len(),
                most_points,
                failure: Some(failure(&choices, outcome)),
            };
        }
        histories.insert(fingerprint(&outcome));
        match next_prefix(choices.points(), exploration.budget) {
            Some(next) => prefix = next,
            None => {
                return Explored {
                    runs,
                    distinct_histories: histories.len(),
                    most_points,
                    failure: None,
                };
            }
        }
    }
}

/// Plays the run of `choices` (a [`Failure`]'s, say) within `exploration`.
pub fn replay(exploration: &Exploration, choices: &[u32]) -> Outcome {
    let mut scripted = Scripted::new(choices.to_vec(), usize::MAX);
    run_with(&exploration.plan(), &mut scripted)
}

/// The prefix of the next run after the run that met `points`: the deepest point with an
/// option not yet tried, whose taking keeps the run within `budget`; `None` when every
/// run was played.
fn next_prefix(points: &[ChoicePoint], budget: usize) -> Option<Vec<u32>> {
    let mut faults_before = Vec::with_capacity(points.len());
    let mut faults = 0;
    for point in points {
        faults_before.push(faults);
        faults += usize::from(point.chosen != 0);
    }
    let i = (0..points.len()).rev().find(|&i| {
        let point = points[i];
        point.chosen + 1 < point.options && faults_before[i] < budget
    })?;
    let mut next: Vec<u32> = points[..i].iter().map(|p| p.chosen).collect();
    next.push(points[i].chosen + 1);
    Some(next)
}

fn failure(choices: &Scripted, outcome: Outcome) -> Failure {
    let mut vector = choices.taken();
    let last = vector.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    vector.truncate(last);
    Failure {
        choices: vector,
        faults: choices
            .points()
            .iter()
            .filter(|p| p.chosen != 0)
            .copied()
            .collect(),
        outcome,
    }
}

/// A hash of a run's history.
fn fingerprint(outcome: &Outcome) -> u64 {
    let mut hasher = DefaultHasher::new();
    for event in &outcome.events {
        format!("{event:?}").hash(&mut hasher);
    }
    hasher.finish()
}
