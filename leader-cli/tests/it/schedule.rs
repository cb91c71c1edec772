//! `leader schedule JOB`: a job's last run as its record keeps it, and its next tick.

use std::time::{Duration, SystemTime};

use crate::common::{fresh, leader, run};
use leader::schedule::{JobConfig, Schedule, Scheduler};
use leader::{LeaderElectionOptions, LeaderElector};

#[test]
fn shows_a_jobs_last_run_and_next_tick() {
    let dir = std::env::temp_dir().join(format!("leader-cli-{}-schedule", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("locks.db").display());
    let job = fresh("job");

    let never = run(leader(&url, &["--json", "schedule", &job]))
        .expect_code(0)
        .json();
    assert_eq!(never["last_run"], serde_json::Value::Null, "{never}");

    let backend = leader::connect(&url).unwrap();
    let options = LeaderElectionOptions::default().with_node_id("node-a");
    let mut scheduler = Scheduler::new(LeaderElector::new(backend, options).unwrap());
    let every = Schedule::every(Duration::from_secs(3600)).unwrap();
    scheduler
        .add(&job, JobConfig::new(every.clone()), |_| Ok(()))
        .unwrap();
    let tick = every.next_after(SystemTime::now()).unwrap();
    assert!(scheduler.fire(&job, tick).unwrap());

    let shown = run(leader(&url, &["--json", "schedule", &job]))
        .expect_code(0)
        .json();
    let last = &shown["last_run"];
    assert_eq!(last["outcome"], "succeeded", "{shown}");
    assert_eq!(last["node"], "node-a");
    assert_eq!(last["schedule"], "every 1h");
    assert_eq!(last["runs"], 1);
    assert!(last["fencing_token"].as_u64().unwrap() > 0);
    assert_eq!(shown["lock_holder"], serde_json::Value::Null);
    assert!(
        shown["next_tick"]
            .as_str()
            .unwrap()
            .ends_with(":00:00.000Z"),
        "{shown}"
    );

    let text = run(leader(&url, &["schedule", &job])).expect_code(0).stdout;
    assert!(
        text.contains("outcome    succeeded") && text.contains("next tick"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
