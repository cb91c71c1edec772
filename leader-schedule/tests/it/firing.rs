//! One firing at a time, on the in-memory backend: which ticks run, what the record keeps,
//! and how failures end (fail closed, nothing run unclaimed).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{OffsetClock, RunLog, millis};
use leader_blocking::LeaderElector;
use leader_core::{
    InMemoryBackend, LeaderElectionOptions, LockBackend, LockName, RecordWrite, StoredRecord,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_schedule::{
    Delivery, JobConfig, MissedTicks, RunKind, RunState, Schedule, ScheduleError, Scheduler,
    read_run_record,
};

fn elector<B: LockBackend + 'static>(backend: B, node: &str) -> LeaderElector<B> {
    let options = LeaderElectionOptions::default().with_node_id(node);
    LeaderElector::new(backend, options).unwrap()
}

fn hourly() -> JobConfig {
    JobConfig::new(Schedule::every(Duration::from_secs(3600)).unwrap())
}

/// The last hourly tick, and the one `hours` before it.
fn hour_ticks(hours: u32) -> (SystemTime, SystemTime) {
    let schedule = Schedule::every(Duration::from_secs(3600)).unwrap();
    let last = schedule.last_at_or_before(SystemTime::now()).unwrap();
    (last, last - Duration::from_secs(3600 * u64::from(hours)))
}

/// The next hourly tick: a firing of it now is early, never late.
fn next_hour() -> SystemTime {
    Schedule::every(Duration::from_secs(3600))
        .unwrap()
        .next_after(SystemTime::now())
        .unwrap()
}

fn logging(
    log: &RunLog,
    node: &'static str,
) -> impl Fn(&leader_schedule::JobContext) -> Result<(), leader_core::BoxError> + Send + Sync + 'static
{
    let log = log.clone();
    move |run| {
        log.record(node, run, Instant::now());
        Ok(())
    }
}

#[test]
fn a_tick_runs_once_across_nodes_and_restarts() {
    let backend = Arc::new(InMemoryBackend::new());
    let log = RunLog::default();
    let tick = next_hour();
    let mut a = Scheduler::new(
        LeaderElector::with_shared_backend(
            Arc::clone(&backend),
            LeaderElectionOptions::default().with_node_id("a"),
        )
        .unwrap(),
    );
    a.add("report", hourly(), logging(&log, "a")).unwrap();
    assert!(
        a.fire("report", tick).unwrap(),
        "the first firing runs the tick"
    );
    // Node b fires the same tick later (its clock is behind), and a restarted a again.
    let mut b = Scheduler::new(
        LeaderElector::with_shared_backend(
            Arc::clone(&backend),
            LeaderElectionOptions::default().with_node_id("b"),
        )
        .unwrap(),
    );
    b.add("report", hourly(), logging(&log, "b")).unwrap();
    assert!(!b.fire("report", tick).unwrap());
    let mut restarted = Scheduler::new(
        LeaderElector::with_shared_backend(
            Arc::clone(&backend),
            LeaderElectionOptions::default().with_node_id("a"),
        )
        .unwrap(),
    );
    restarted
        .add("report", hourly(), logging(&log, "a"))
        .unwrap();
    assert!(!restarted.fire("report", tick).unwrap());
    assert_eq!(log.len(), 1);

    let record = read_run_record(&*backend, &LockName::new("report").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        (record.tick(), record.state, record.node.as_str()),
        (tick, RunState::Succeeded, "a")
    );
    assert_eq!(record.schedule, "every 1h");
    assert!(record.finished_at().is_some());
    assert_eq!(record.fencing_token, log.runs()[0].token);
}

#[test]
fn ticks_missed_while_down_follow_the_policy_at_start() {
    let (last, before) = hour_ticks(3);
    for (missed, runs, kinds) in [
        (MissedTicks::Skip, 0, vec![]),
        (MissedTicks::RunOnce, 1, vec![RunKind::Missed]),
        (
            MissedTicks::CatchUp { max: 2 },
            3,
            vec![RunKind::Missed, RunKind::Missed, RunKind::Missed],
        ),
    ] {
        let backend = InMemoryBackend::new();
        let key = LockName::new("nightly").unwrap();
        // The job last ran three hours ago: two ticks in between were missed.
        let earlier = format!(
            r#"{{"tick_ms":{t},"state":"succeeded","node":"x","fencing_token":1,"started_ms":{t},"finished_ms":{t},"schedule":"every 1h"}}"#,
            t = millis(before)
        );
        backend
            .write_record(RecordWrite::new(&key, None, &earlier).unwrap())
            .unwrap();
        let log = RunLog::default();
        // This node's clock reads at least 10 s after the last tick: that tick fires late.
        let mut scheduler = Scheduler::new(elector(backend, "n")).with_clock(OffsetClock(10_000));
        scheduler
            .add(
                "nightly",
                hourly().with_missed_ticks(missed),
                logging(&log, "n"),
            )
            .unwrap();
        let ran = scheduler.fire("nightly", last).unwrap();
        assert_eq!(ran, runs > 0, "{missed:?}");
        let got: Vec<_> = log.runs().iter().map(|r| r.kind).collect();
        assert_eq!(got, kinds, "{missed:?}");
        let ticks: Vec<_> = log.runs().iter().map(|r| r.tick_ms).collect();
        if runs == 3 {
            let hour = 3_600_000;
            assert_eq!(
                ticks,
                vec![millis(last) - 2 * hour, millis(last) - hour, millis(last)]
            );
        }
    }
}

#[test]
fn an_unfinished_tick_runs_again_only_at_least_once() {
    for (delivery, expected) in [
        (Delivery::AtMostOnce, vec![RunKind::Missed]),
        (Delivery::AtLeastOnce, vec![RunKind::Rerun, RunKind::Missed]),
    ] {
        let backend = InMemoryBackend::new();
        let key = LockName::new("billing").unwrap();
        let (last, before) = hour_ticks(1);
        // A runner claimed the tick before and died: `running`, its lock long gone.
        let died = format!(
            r#"{{"tick_ms":{t},"state":"running","node":"dead","fencing_token":1,"started_ms":{t},"schedule":"every 1h"}}"#,
            t = millis(before)
        );
        backend
            .write_record(RecordWrite::new(&key, None, &died).unwrap())
            .unwrap();
        let log = RunLog::default();
        let mut scheduler = Scheduler::new(elector(backend, "n")).with_clock(OffsetClock(10_000));
        let config = hourly()
            .with_delivery(delivery)
            .with_missed_ticks(MissedTicks::RunOnce);
        scheduler
            .add("billing", config, logging(&log, "n"))
            .unwrap();
        assert!(scheduler.fire("billing", last).unwrap());
        let kinds: Vec<_> = log.runs().iter().map(|r| r.kind).collect();
        assert_eq!(kinds, expected, "{delivery:?}");
        if delivery == Delivery::AtLeastOnce {
            assert_eq!(
                log.runs()[0].tick_ms,
                millis(before),
                "the unfinished tick first"
            );
        }
    }
}

#[test]
fn a_failed_store_runs_nothing_and_a_corrupt_record_is_left_alone() {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let mut scheduler = Scheduler::new(elector(faulty.clone(), "n"));
    scheduler
        .add("job", hourly(), move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
    let tick = next_hour();
    faulty.set(Op::Record, Fault::Fail);
    let err = scheduler.fire("job", tick).unwrap_err();
    assert!(
        matches!(&err, ScheduleError::Leader(e) if e.is_transient()),
        "{err}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no run without a claim");
    assert!(
        faulty
            .inner()
            .state(&LockName::new("job").unwrap())
            .unwrap()
            .leader()
            .is_none(),
        "the lock was released"
    );

    faulty.clear(Op::Record);
    let key = LockName::new("job").unwrap();
    faulty
        .inner()
        .write_record(RecordWrite::new(&key, None, "not json").unwrap())
        .unwrap();
    let err = scheduler.fire("job", tick).unwrap_err();
    assert!(err.to_string().contains("not a job record"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        faulty.inner().read_record(&key).unwrap(),
        Some(StoredRecord::new(1, "not json"))
    );
}

#[test]
fn a_panicking_or_failing_job_is_recorded_and_the_next_tick_runs() {
    let backend = Arc::new(InMemoryBackend::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let mut scheduler = Scheduler::new(
        LeaderElector::with_shared_backend(Arc::clone(&backend), LeaderElectionOptions::default())
            .unwrap(),
    );
    scheduler
        .add("flaky", hourly(), move |_| {
            match counter.fetch_add(1, Ordering::SeqCst) {
                0 => panic!("the job's own bug"),
                1 => Err("the job's own failure".into()),
                _ => Ok(()),
            }
        })
        .unwrap();
    let key = LockName::new("flaky").unwrap();
    let tick = next_hour();
    for (i, state) in [RunState::Panicked, RunState::Failed, RunState::Succeeded]
        .into_iter()
        .enumerate()
    {
        let this = tick + Duration::from_secs(3600 * i as u64);
        assert!(scheduler.fire("flaky", this).unwrap());
        let record = read_run_record(&*backend, &key).unwrap().unwrap();
        assert_eq!(
            (record.tick(), record.state, record.runs),
            (this, state, i as u64 + 1)
        );
        assert!(
            backend.state(&key).unwrap().leader().is_none(),
            "released after {state:?}"
        );
    }
}

#[test]
fn jobs_are_scoped_by_tenant_and_names_are_checked() {
    let backend = Arc::new(InMemoryBackend::new());
    let base =
        LeaderElector::with_shared_backend(Arc::clone(&backend), LeaderElectionOptions::default())
            .unwrap();
    let log = RunLog::default();
    let tick = next_hour();
    for tenant in ["acme", "globex"] {
        let mut scheduler = Scheduler::new(base.for_tenant(tenant).unwrap());
        scheduler.add("sync", hourly(), logging(&log, "n")).unwrap();
        assert!(
            scheduler.fire("sync", tick).unwrap(),
            "{tenant}'s tick is its own"
        );
        let key = LockName::new(format!("tenant:{tenant}:sync")).unwrap();
        assert!(read_run_record(&*backend, &key).unwrap().is_some());
    }
    let mut scheduler = Scheduler::new(base);
    assert!(matches!(
        scheduler.add("bad{name}", hourly(), |_| Ok(())),
        Err(ScheduleError::Leader(_))
    ));
    scheduler.add("once", hourly(), |_| Ok(())).unwrap();
    assert!(matches!(
        scheduler.add("once", hourly(), |_| Ok(())),
        Err(ScheduleError::DuplicateJob { .. })
    ));
    assert!(matches!(
        scheduler.add(
            "x",
            hourly().with_lease_time(Duration::from_millis(1)),
            |_| Ok(())
        ),
        Err(ScheduleError::InvalidJob { .. })
    ));
    assert!(matches!(
        scheduler.fire("missing", tick),
        Err(ScheduleError::InvalidJob { .. })
    ));
}
