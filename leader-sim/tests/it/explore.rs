//! Exhaustive exploration of small campaigns: every run within a fault budget passes, the
//! explorer plays exactly the runs it should, a planted defect is found, and a failing
//! run's choice vector replays it.

use leader_history::ViolationKind;
use leader_sim::choices::{ChoicePoint, Scripted};
use leader_sim::explore::{Exploration, Explored, explore, replay};
use leader_sim::{Defect, Planted, Profile, run_with};

fn campaign(nodes: u32, profile: Profile, budget: usize, depth: usize) -> Exploration {
    Exploration {
        nodes,
        profile,
        leases: 6,
        budget,
        depth,
        defects: Vec::new(),
    }
}

/// The choice points of the run of `vector` (the default after it).
fn points(exploration: &Exploration, vector: Vec<u32>) -> Vec<ChoicePoint> {
    let mut choices = Scripted::new(vector, exploration.depth);
    let outcome = run_with(&exploration.plan(), &mut choices);
    assert!(outcome.passed(), "{}", outcome.report);
    choices.points().to_vec()
}

/// Options other than the default at the points of `points` from `from` on.
fn other_options(points: &[ChoicePoint], from: usize) -> u64 {
    points
        .iter()
        .skip(from)
        .map(|p| u64::from(p.options - 1))
        .sum()
}

/// How many runs a budget of 1 or 2 makes, counted without the explorer's search (the
/// figures today, in the README, change whenever the engine's messages do): the
/// run with no fault; for each point of it and each option other than the default, the
/// run with that one fault; with a budget of 2, for each of those, one run per later
/// point of it and option other than the default.
fn expected_runs(exploration: &Exploration) -> u64 {
    assert!((1..=2).contains(&exploration.budget));
    let default = points(exploration, Vec::new());
    let mut runs = 1;
    for (i, point) in default.iter().enumerate() {
        for option in 1..point.options {
            runs += 1;
            if exploration.budget == 2 {
                let mut vector = vec![0; i];
                vector.push(option);
                runs += other_options(&points(exploration, vector), i + 1);
            }
        }
    }
    runs
}

fn passes(exploration: &Exploration) -> Explored {
    let started = std::time::Instant::now();
    let explored = explore(exploration);
    println!(
        "{exploration:?}: {} runs, {} distinct histories, at most {} choice points a run, in {:.1} s",
        explored.runs,
        explored.distinct_histories,
        explored.most_points,
        started.elapsed().as_secs_f64()
    );
    if let Some(failure) = &explored.failure {
        panic!(
            "{}\n{:#?}\nstuck: {:?}\nfaults: {:#?}\nchoices: {:?}",
            failure.outcome.report,
            failure.outcome.report.violations,
            failure.outcome.stuck,
            failure.faults,
            failure.choices
        );
    }
    // Every run played a history of its own: no choice was a no-op the bound counts twice.
    assert_eq!(explored.distinct_histories as u64, explored.runs);
    explored
}

#[test]
fn two_nodes_every_run_within_two_faults_at_the_first_40_points_passes() {
    for profile in [Profile::Sql, Profile::Redis, Profile::Etcd] {
        let exploration = campaign(2, profile, 2, 40);
        let explored = passes(&exploration);
        assert_eq!(explored.runs, expected_runs(&exploration), "{profile:?}");
    }
}

#[test]
fn two_nodes_every_run_within_two_faults_anywhere_passes() {
    // Every point of a 3-lease run has options (a 6-lease one, 130 to 135 points and
    // 51,035 runs, is for `--example explore`: it costs CI a minute on a busy core).
    let exploration = Exploration {
        leases: 3,
        ..campaign(2, Profile::Sql, 2, usize::MAX)
    };
    let explored = passes(&exploration);
    assert!(explored.most_points > 50, "{}", explored.most_points);
    assert_eq!(explored.runs, expected_runs(&exploration));
}

#[test]
fn three_nodes_every_run_within_one_fault_anywhere_and_two_at_the_first_40_points_passes() {
    let anywhere = campaign(3, Profile::Sql, 1, usize::MAX);
    let explored = passes(&anywhere);
    assert_eq!(explored.runs, expected_runs(&anywhere));
    let early = campaign(3, Profile::Sql, 2, 40);
    let explored = passes(&early);
    assert_eq!(explored.runs, expected_runs(&early));
}

#[test]
fn a_term_started_on_a_late_answer_is_found_and_its_choices_replay_it() {
    // A standby's attempt answered after the renew deadline must start no term
    // (`CampaignRun::after_attempt`); with the defect, one slow reply is enough.
    let exploration = Exploration {
        defects: vec![Planted::Engine(Defect::ActionOnLateLease)],
        ..campaign(2, Profile::Sql, 1, usize::MAX)
    };
    let explored = explore(&exploration);
    println!("found after {} runs", explored.runs);
    let failure = explored.failure.expect("the defect was not found");
    let kinds: Vec<ViolationKind> = failure
        .outcome
        .report
        .violations
        .iter()
        .map(|v| v.kind)
        .collect();
    assert!(kinds.contains(&ViolationKind::LateAction), "{kinds:?}");
    assert_eq!(failure.faults.len(), 1, "{:?}", failure.faults);
    let again = replay(&exploration, &failure.choices);
    assert!(!again.passed());
    assert_eq!(again.events, failure.outcome.events);
    assert_eq!(again.steps, failure.outcome.steps);
    // Without the defect, the same choices pass.
    let fixed = Exploration {
        defects: Vec::new(),
        ..exploration
    };
    assert!(replay(&fixed, &failure.choices).passed());
}

#[test]
fn a_term_renewed_from_its_answer_is_found_within_two_faults_and_replays() {
    // A renewal whose reply is delayed counts the term from its answer: the term outlives
    // the store's lease, and with its next renewal lost, the standby takes the lock
    // while the leader still leads.
    let exploration = Exploration {
        defects: vec![Planted::Engine(Defect::TermRenewedFromAnswer)],
        ..campaign(2, Profile::Sql, 2, usize::MAX)
    };
    let explored = explore(&exploration);
    println!("found after {} runs", explored.runs);
    let failure = explored.failure.expect("the defect was not found");
    println!("{:?}", failure.faults);
    let kinds: Vec<ViolationKind> = failure
        .outcome
        .report
        .violations
        .iter()
        .map(|v| v.kind)
        .collect();
    assert!(
        kinds.contains(&ViolationKind::UnexplainedOverlap),
        "{kinds:?}"
    );
    // One fault does not show it.
    assert_eq!(failure.faults.len(), 2, "{:?}", failure.faults);
    let again = replay(&exploration, &failure.choices);
    assert_eq!(again.events, failure.outcome.events);
    assert_eq!(
        again.report.violations.len(),
        failure.outcome.report.violations.len()
    );
    let fixed = Exploration {
        defects: Vec::new(),
        ..exploration
    };
    assert!(replay(&fixed, &failure.choices).passed());
}

#[test]
fn a_dropped_orphan_release_is_found_within_two_faults() {
    let exploration = Exploration {
        defects: vec![Planted::Engine(Defect::DropOrphanRelease)],
        ..campaign(2, Profile::Sql, 2, usize::MAX)
    };
    let explored = explore(&exploration);
    println!("found after {} runs", explored.runs);
    let failure = explored.failure.expect("the defect was not found");
    assert!(!failure.outcome.stuck.is_empty());
    let again = replay(&exploration, &failure.choices);
    assert_eq!(again.stuck, failure.outcome.stuck);
    assert_eq!(again.events, failure.outcome.events);
}

#[test]
fn one_choice_vector_always_plays_the_same_run() {
    let exploration = campaign(3, Profile::Redis, 3, usize::MAX);
    // Three faults at points 4, 17 and 30 (a message slow or lost, a leader paused,
    // whichever those points are): twice the same run.
    let mut vector = vec![0; 31];
    vector[4] = 1;
    vector[17] = 2;
    vector[30] = 1;
    let first = replay(&exploration, &vector);
    let again = replay(&exploration, &vector);
    assert_eq!(first.events, again.events);
    assert_eq!(first.steps, again.steps);
    // And differs from the run with no fault.
    assert_ne!(first.events, replay(&exploration, &[]).events);
}
