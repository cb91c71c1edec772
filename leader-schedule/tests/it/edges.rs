//! The edges of a firing: a run never starts on a lost lease or after shutdown, an
//! at-least-once tick whose run lost its lease runs again, a node that starts long after a
//! missed tick still applies its policy, a tick is busy only while a run really goes on
//! (not by another node's clock), and both shells plan the tick after a firing alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{RunLog, millis, wait_for};
use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::{
    Clock, InMemoryBackend, LeaderElectionOptions, LockBackend, LockName, RecordWrite, Shutdown,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_schedule::{
    AsyncScheduler, Delivery, JobConfig, JobContext, MissedTicks, RunKind, RunState, Schedule,
    Scheduler, read_run_record,
};

const HOUR: Duration = Duration::from_secs(3600);

/// A node's wall clock that reads `start` when made and goes on at the host's pace.
#[derive(Debug, Clone, Copy)]
struct StartedAt {
    start: SystemTime,
    made: Instant,
}

impl StartedAt {
    fn new(start: SystemTime) -> Self {
        StartedAt {
            start,
            made: Instant::now(),
        }
    }
}

impl Clock for StartedAt {
    fn now(&self) -> SystemTime {
        self.start + self.made.elapsed()
    }

    fn monotonic(&self) -> Instant {
        Instant::now()
    }
}

fn elector<B: LockBackend + 'static>(backend: B, node: &str) -> LeaderElector<B> {
    let options = LeaderElectionOptions::default().with_node_id(node);
    LeaderElector::new(backend, options).unwrap()
}

fn hourly() -> JobConfig {
    JobConfig::new(Schedule::every(HOUR).unwrap())
}

/// The job's record as a runner on `node` with `token` left it.
fn record_json(
    tick: SystemTime,
    state: &str,
    node: &str,
    token: u64,
    finished: Option<SystemTime>,
) -> String {
    let finished = finished.map_or(String::new(), |f| {
        format!(r#","finished_ms":{}"#, millis(f))
    });
    format!(
        r#"{{"tick_ms":{t},"state":"{state}","node":"{node}","fencing_token":{token},"started_ms":{t}{finished},"schedule":"every 1h"}}"#,
        t = millis(tick)
    )
}

fn write_record(backend: &impl LockBackend, name: &str, value: &str) {
    let key = LockName::new(name).unwrap();
    backend
        .write_record(RecordWrite::new(&key, None, value).unwrap())
        .unwrap();
}

fn logging(
    log: &RunLog,
    node: &'static str,
) -> impl Fn(&JobContext) -> Result<(), leader_core::BoxError> + Send + Sync + 'static {
    let log = log.clone();
    move |run| {
        log.record(node, run, Instant::now());
        Ok(())
    }
}

/// A catch-up of six missed hourly ticks whose job lease is lost during the first run:
/// no further run starts on the lost lease, and the ticks it did not claim are left for
/// the next holder (the record's last claim is the one that ran).
#[test]
fn no_run_starts_after_the_jobs_lease_is_lost() {
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let schedule = Schedule::every(HOUR).unwrap();
    let last = schedule.next_after(SystemTime::now()).unwrap() - HOUR;
    write_record(
        faulty.inner(),
        "catch-up",
        &record_json(last - 7 * HOUR, "succeeded", "x", 1, Some(last - 7 * HOUR)),
    );
    let log = RunLog::default();
    let lost_seen = Arc::new(AtomicBool::new(false));
    let mut scheduler = Scheduler::new(elector(faulty.clone(), "n"));
    let config = hourly()
        .with_missed_ticks(MissedTicks::CatchUp { max: 6 })
        .with_lease_time(Duration::from_millis(600));
    let (store, seen, runs) = (faulty.clone(), Arc::clone(&lost_seen), log.clone());
    scheduler
        .add("catch-up", config, move |run| {
            runs.record("n", run, Instant::now());
            if run.lease().is_lost() {
                seen.store(true, Ordering::SeqCst);
            }
            // The first run's renewals fail: its lease is lost while it runs.
            store.set(Op::Extend, Fault::Fail);
            assert!(
                run.lease().wait_lost_timeout(Duration::from_secs(5)),
                "lost"
            );
            Ok(())
        })
        .unwrap();
    let ran = scheduler.fire("catch-up", last).unwrap();
    faulty.heal();
    assert!(ran);
    assert!(
        !lost_seen.load(Ordering::SeqCst),
        "a run started on a lost lease"
    );
    let runs = log.runs();
    assert_eq!(
        runs.len(),
        1,
        "runs started after the lease was lost: {runs:?}"
    );
    let record = read_run_record(faulty.inner(), &LockName::new("catch-up").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        record.tick_ms, runs[0].tick_ms,
        "later ticks were claimed: {record:?}"
    );
    assert_eq!(record.state, RunState::LeaseLost);
}

/// At least once: a tick whose run ended on a lost lease (its result not trusted) runs
/// again, as a tick whose runner died does.
#[test]
fn at_least_once_reruns_a_tick_whose_run_lost_its_lease() {
    let backend = InMemoryBackend::new();
    let schedule = Schedule::every(HOUR).unwrap();
    let last = schedule.next_after(SystemTime::now()).unwrap() - HOUR;
    let before = last - HOUR;
    write_record(
        &backend,
        "billing",
        &record_json(
            before,
            "lease_lost",
            "a",
            3,
            Some(before + Duration::from_secs(60)),
        ),
    );
    let log = RunLog::default();
    let mut scheduler = Scheduler::new(elector(backend, "n"))
        .with_clock(StartedAt::new(last + Duration::from_millis(300)));
    let config = hourly().with_delivery(Delivery::AtLeastOnce);
    scheduler
        .add("billing", config, logging(&log, "n"))
        .unwrap();
    assert!(scheduler.fire("billing", last).unwrap());
    let runs: Vec<_> = log.runs().iter().map(|r| (r.tick_ms, r.kind)).collect();
    assert_eq!(
        runs,
        vec![
            (millis(before), RunKind::Rerun),
            (millis(last), RunKind::OnTime)
        ]
    );
}

/// A weekly job whose Monday tick every node missed, and a node that starts two days
/// later: with `RunOnce` it runs that tick at start (the record says the week before ran),
/// not a week later.
#[test]
fn a_node_starting_days_after_a_missed_tick_applies_the_policy_at_start() {
    let week = Duration::from_secs(7 * 24 * 3600);
    let schedule = Schedule::every(week).unwrap();
    let missed = schedule.next_after(SystemTime::now()).unwrap() - week;
    let backend = InMemoryBackend::new();
    write_record(
        &backend,
        "weekly",
        &format!(
            r#"{{"tick_ms":{t},"state":"succeeded","node":"x","fencing_token":1,"started_ms":{t},"finished_ms":{t},"schedule":"every 7d"}}"#,
            t = millis(missed - week)
        ),
    );
    let log = RunLog::default();
    let clock = StartedAt::new(missed + Duration::from_secs(2 * 24 * 3600));
    let mut scheduler = Scheduler::new(elector(backend, "n")).with_clock(clock);
    let config = JobConfig::new(schedule).with_missed_ticks(MissedTicks::RunOnce);
    scheduler.add("weekly", config, logging(&log, "n")).unwrap();
    let shutdown = Shutdown::new();
    std::thread::scope(|scope| {
        scope.spawn(|| scheduler.run(&shutdown));
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_for(
                "the missed tick to run at start",
                Duration::from_secs(10),
                || log.len() > 0,
            );
        }));
        shutdown.trigger();
        ran.unwrap();
    });
    let runs: Vec<_> = log.runs().iter().map(|r| (r.tick_ms, r.kind)).collect();
    assert_eq!(runs, vec![(millis(missed), RunKind::Missed)]);
}

/// Node a, whose clock is 400 ms fast, ran the last tick and recorded its end by its own
/// clock: 400 ms past the next tick, though the run really ended before node b fired it.
/// The job was not busy when b fired (no run was in progress in the store): b runs it.
#[test]
fn a_tick_after_a_run_that_a_fast_node_recorded_late_is_not_busy() {
    let backend = InMemoryBackend::new();
    let schedule = Schedule::every(HOUR).unwrap();
    let next = schedule.next_after(SystemTime::now()).unwrap();
    let previous = next - HOUR;
    let ended_by_as_clock = next + Duration::from_millis(400);
    write_record(
        &backend,
        "report",
        &record_json(previous, "succeeded", "a", 7, Some(ended_by_as_clock)),
    );
    let log = RunLog::default();
    let b = StartedAt::new(next + Duration::from_millis(50));
    let mut scheduler = Scheduler::new(elector(backend, "b")).with_clock(b);
    scheduler
        .add("report", hourly(), logging(&log, "b"))
        .unwrap();
    assert!(
        scheduler.fire("report", next).unwrap(),
        "the tick was skipped as busy"
    );
    let runs: Vec<_> = log.runs().iter().map(|r| (r.tick_ms, r.kind)).collect();
    assert_eq!(runs, vec![(millis(next), RunKind::OnTime)]);
}

/// A tick fired while another node's run of the previous tick really goes on (its claim
/// is `running` in the store when this node fires, and the node waits for the lock until
/// it ends) is busy: skipped, not queued behind that run, whatever the clocks say.
#[test]
fn a_tick_fired_while_a_run_goes_on_is_busy() {
    let backend = Arc::new(InMemoryBackend::new());
    let schedule = Schedule::every(HOUR).unwrap();
    let next = schedule.next_after(SystemTime::now()).unwrap();
    let previous = next - HOUR;
    let log = RunLog::default();
    let (started, finish) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let mut a = Scheduler::new(
        LeaderElector::with_shared_backend(
            Arc::clone(&backend),
            LeaderElectionOptions::default().with_node_id("a"),
        )
        .unwrap(),
    )
    .with_clock(StartedAt::new(previous));
    let (running, done, runs) = (Arc::clone(&started), Arc::clone(&finish), log.clone());
    a.add("report", hourly(), move |run| {
        runs.record("a", run, Instant::now());
        running.store(true, Ordering::SeqCst);
        while !done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    })
    .unwrap();
    // b's clock reads a few ms behind a's run's end when it fires.
    let mut b = Scheduler::new(
        LeaderElector::with_shared_backend(
            Arc::clone(&backend),
            LeaderElectionOptions::default().with_node_id("b"),
        )
        .unwrap(),
    )
    .with_clock(StartedAt::new(next));
    b.add("report", hourly(), logging(&log, "b")).unwrap();
    std::thread::scope(|scope| {
        let first = scope.spawn(|| a.fire("report", previous).unwrap());
        wait_for("a's run to start", Duration::from_secs(5), || {
            started.load(Ordering::SeqCst)
        });
        let second = scope.spawn(|| b.fire("report", next).unwrap());
        // b waits for the lock (up to the clock-skew bound); a's run ends meanwhile.
        std::thread::sleep(Duration::from_millis(200));
        finish.store(true, Ordering::SeqCst);
        assert!(first.join().unwrap());
        assert!(
            !second.join().unwrap(),
            "a tick fired during a run was queued behind it"
        );
    });
    assert_eq!(log.len(), 1);
}

/// Shutdown during a catch-up of twenty ticks: the run in progress finishes, and no
/// run starts after the shutdown.
#[test]
fn no_run_starts_after_shutdown() {
    let backend = InMemoryBackend::new();
    let schedule = Schedule::every(HOUR).unwrap();
    let now = SystemTime::now();
    let last = schedule.next_after(now).unwrap() - HOUR;
    write_record(
        &backend,
        "catch-up",
        &record_json(
            last - 21 * HOUR,
            "succeeded",
            "x",
            1,
            Some(last - 21 * HOUR),
        ),
    );
    let log = RunLog::default();
    let shutdown = Shutdown::new();
    let mut scheduler = Scheduler::new(elector(backend, "n"));
    let config = hourly().with_missed_ticks(MissedTicks::CatchUp { max: 20 });
    let (runs, stop) = (log.clone(), shutdown.clone());
    let first = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&first);
    scheduler
        .add("catch-up", config, move |run| {
            runs.record("n", run, Instant::now());
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                stop.trigger();
            }
            std::thread::sleep(Duration::from_millis(20));
            Ok(())
        })
        .unwrap();
    let started = Instant::now();
    scheduler.run(&shutdown);
    let runs = log.runs();
    assert_eq!(runs.len(), 1, "runs started after shutdown: {runs:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "run() returned {:?} after",
        started.elapsed()
    );
}

/// What a job saw at each run: the lock attempts made so far, the tick, why it ran, and
/// the lock attempts when its run ended.
type Marks = Arc<parking_lot::Mutex<Vec<(usize, SystemTime, RunKind, usize)>>>;

/// Both shells, after a start-up run longer than two periods: the firing that follows is
/// for the next tick after the run (on time, one lock attempt between the two runs), not
/// a stale tick fired at once.
#[test]
fn both_shells_plan_the_tick_after_a_long_run_alike() {
    let period = Duration::from_millis(500);
    let config = JobConfig::new(Schedule::every(period).unwrap())
        .with_missed_ticks(MissedTicks::RunOnce)
        .with_clock_skew(Duration::from_millis(200));
    let long = period * 5 / 2;
    for shell in ["blocking", "async"] {
        let faulty = FaultyBackend::new(InMemoryBackend::new());
        let shutdown = Shutdown::new();
        let marks: Marks = Arc::default();
        // Record a run's start, sleep through the first one, stop after the second.
        let mark = {
            let (faulty, marks, shutdown) = (faulty.clone(), Arc::clone(&marks), shutdown.clone());
            move |run: &JobContext| -> Option<Duration> {
                let mut marks = marks.lock();
                marks.push((faulty.calls(Op::Acquire), run.tick(), run.kind(), 0));
                if marks.len() == 1 {
                    return Some(long);
                }
                shutdown.trigger();
                None
            }
        };
        let ended = {
            let (faulty, marks) = (faulty.clone(), Arc::clone(&marks));
            move || {
                if let Some(first) = marks.lock().first_mut() {
                    first.3 = faulty.calls(Op::Acquire);
                }
            }
        };
        let watchdog = shutdown.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(15));
            watchdog.trigger();
        });
        if shell == "blocking" {
            let mut scheduler = Scheduler::new(elector(faulty.clone(), "n"));
            scheduler
                .add("job", config.clone(), move |run| {
                    if let Some(sleep) = mark(run) {
                        std::thread::sleep(sleep);
                        ended();
                    }
                    Ok(())
                })
                .unwrap();
            scheduler.run(&shutdown);
        } else {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let options = LeaderElectionOptions::default().with_node_id("n");
                let elector = AsyncLeaderElector::new(faulty.clone(), options).unwrap();
                let mut scheduler = AsyncScheduler::new(elector);
                let (mark, ended) = (Arc::new(mark), Arc::new(ended));
                scheduler
                    .add("job", config.clone(), move |run| {
                        let (mark, ended) = (Arc::clone(&mark), Arc::clone(&ended));
                        async move {
                            if let Some(sleep) = mark(&run) {
                                tokio::time::sleep(sleep).await;
                                ended();
                            }
                            Ok(())
                        }
                    })
                    .unwrap();
                scheduler.run(&shutdown).await;
            });
        }
        let marks = marks.lock().clone();
        assert_eq!(marks.len(), 2, "{shell}: two runs: {marks:?}");
        let (first_tick, second) = (marks[0].1, &marks[1]);
        let attempts = second.0 - marks[0].3;
        assert_eq!(
            attempts, 1,
            "{shell}: lock attempts between the runs: {marks:?}"
        );
        assert_eq!(second.2, RunKind::OnTime, "{shell}: {marks:?}");
        assert!(
            second.1 >= first_tick + long,
            "{shell}: a stale tick ran after the long run: {marks:?}"
        );
    }
}
