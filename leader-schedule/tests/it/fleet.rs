//! Three schedulers whose clocks are 500 ms apart share one in-memory backend and run a
//! per-second job: every tick runs exactly once, blocking and on each async runtime; a job
//! longer than its interval never overlaps itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{OffsetClock, RunLog, assert_each_tick_once, wait_for};
use leader_async::AsyncLeaderElector;
use leader_blocking::LeaderElector;
use leader_core::{InMemoryBackend, LeaderElectionOptions, Shutdown};
use leader_schedule::{AsyncScheduler, JobConfig, Schedule, Scheduler};

const OFFSETS: [i64; 3] = [-500, 0, 500];
const TICKS: usize = 5;

fn every_second() -> JobConfig {
    JobConfig::new(Schedule::every(Duration::from_secs(1)).unwrap())
        .with_lease_time(Duration::from_secs(5))
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default().with_node_id(node)
}

fn blocking_fleet(config: JobConfig, work: Duration, ticks: usize) -> RunLog {
    let backend = Arc::new(InMemoryBackend::new());
    let log = RunLog::default();
    let shutdown = Shutdown::new();
    let threads: Vec<_> = OFFSETS
        .iter()
        .map(|&offset| {
            let node = format!("node{offset:+}");
            let elector =
                LeaderElector::with_shared_backend(Arc::clone(&backend), options(&node)).unwrap();
            let mut scheduler = Scheduler::new(elector).with_clock(OffsetClock(offset));
            let log = log.clone();
            scheduler
                .add("tick", config.clone(), move |run| {
                    let start = Instant::now();
                    std::thread::sleep(work);
                    log.record(&node, run, start);
                    Ok(())
                })
                .unwrap();
            let shutdown = shutdown.clone();
            std::thread::spawn(move || scheduler.run(&shutdown))
        })
        .collect();
    wait_for("the runs", Duration::from_secs(60), || log.len() >= ticks);
    shutdown.trigger();
    for thread in threads {
        thread.join().unwrap();
    }
    log
}

#[test]
fn blocking_nodes_with_skewed_clocks_run_each_tick_once() {
    let log = blocking_fleet(every_second(), Duration::from_millis(1), TICKS);
    let ticks: Vec<_> = log.runs().iter().map(|r| r.tick_ms).collect();
    assert!(ticks.len() >= TICKS);
    assert_each_tick_once(ticks, 1000);
    let tokens: Vec<_> = log.runs().iter().map(|r| r.token).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens go forward: {tokens:?}"
    );
}

#[test]
fn a_job_longer_than_its_interval_never_overlaps_itself() {
    let log = blocking_fleet(every_second(), Duration::from_millis(2500), 3);
    let runs = log.runs();
    for pair in runs.windows(2) {
        assert!(pair[0].end <= pair[1].start, "runs overlapped: {pair:?}");
        assert!(
            pair[0].tick_ms < pair[1].tick_ms,
            "a tick ran twice: {pair:?}"
        );
        // The ticks that came while a run went on were skipped, not queued.
        assert!(pair[1].tick_ms - pair[0].tick_ms >= 2000, "{pair:?}");
    }
}

async fn async_fleet(log: RunLog, shutdown: Shutdown) {
    let backend = Arc::new(InMemoryBackend::new());
    let mut schedulers = Vec::new();
    for offset in OFFSETS {
        let node = format!("node{offset:+}");
        let elector =
            AsyncLeaderElector::with_shared_backend(Arc::clone(&backend), options(&node)).unwrap();
        let mut scheduler = AsyncScheduler::new(elector).with_clock(OffsetClock(offset));
        let log = log.clone();
        scheduler
            .add("tick", every_second(), move |run| {
                let log = log.clone();
                let node = node.clone();
                async move {
                    let start = Instant::now();
                    async_io::Timer::after(Duration::from_millis(1)).await;
                    log.record(&node, &run, start);
                    Ok(())
                }
            })
            .unwrap();
        schedulers.push(scheduler);
    }
    let runs = schedulers.iter().map(|s| s.run(&shutdown));
    futures_util::future::join_all(runs).await;
}

fn check_async(log: &RunLog) {
    let ticks: Vec<_> = log.runs().iter().map(|r| r.tick_ms).collect();
    assert!(ticks.len() >= TICKS);
    assert_each_tick_once(ticks, 1000);
}

fn stop_after_ticks(log: &RunLog, shutdown: &Shutdown) -> std::thread::JoinHandle<()> {
    let (log, shutdown) = (log.clone(), shutdown.clone());
    std::thread::spawn(move || {
        wait_for("the runs", Duration::from_secs(60), || log.len() >= TICKS);
        shutdown.trigger();
    })
}

#[test]
fn async_nodes_on_tokio_run_each_tick_once() {
    let (log, shutdown) = (RunLog::default(), Shutdown::new());
    let stopper = stop_after_ticks(&log, &shutdown);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async_fleet(log.clone(), shutdown));
    stopper.join().unwrap();
    check_async(&log);
}

#[test]
fn async_nodes_on_smol_run_each_tick_once() {
    let (log, shutdown) = (RunLog::default(), Shutdown::new());
    let stopper = stop_after_ticks(&log, &shutdown);
    smol::block_on(async_fleet(log.clone(), shutdown));
    stopper.join().unwrap();
    check_async(&log);
}

#[test]
fn an_async_job_past_its_timeout_is_dropped_and_recorded() {
    let backend = Arc::new(InMemoryBackend::new());
    let shutdown = Shutdown::new();
    let elector =
        AsyncLeaderElector::with_shared_backend(Arc::clone(&backend), options("n")).unwrap();
    let mut scheduler = AsyncScheduler::new(elector);
    let config = JobConfig::new(Schedule::every(Duration::from_secs(3600)).unwrap())
        .with_timeout(Duration::from_millis(100));
    scheduler
        .add("slow", config, |_| async {
            async_io::Timer::after(Duration::from_secs(30)).await;
            Ok(())
        })
        .unwrap();
    let tick = Schedule::every(Duration::from_secs(3600))
        .unwrap()
        .next_after(std::time::SystemTime::now())
        .unwrap();
    let started = Instant::now();
    let ran = smol::block_on(scheduler.fire("slow", tick)).unwrap();
    assert!(ran);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the run was cut at its timeout"
    );
    let key = leader_core::LockName::new("slow").unwrap();
    let record = leader_schedule::read_run_record(&*backend, &key)
        .unwrap()
        .unwrap();
    assert_eq!(record.state, leader_schedule::RunState::TimedOut);
    assert!(
        leader_core::LockBackend::state(&*backend, &key)
            .unwrap()
            .leader()
            .is_none()
    );
    drop(shutdown);
}

/// A scheduler with one job that takes `work`, started at the next tick of a per-second
/// schedule; triggers shutdown once the job runs and returns how long `run` took to return
/// after that, and the job's record then.
fn shutdown_during_a_run(
    on_shutdown: leader_schedule::OnShutdown,
) -> (Duration, leader_schedule::RunRecord) {
    let backend = Arc::new(InMemoryBackend::new());
    let elector = LeaderElector::with_shared_backend(Arc::clone(&backend), options("n")).unwrap();
    let mut scheduler = Scheduler::new(elector);
    let log = RunLog::default();
    let started = log.clone();
    scheduler
        .add(
            "long",
            every_second().with_on_shutdown(on_shutdown),
            move |run| {
                started.record("n", run, Instant::now());
                std::thread::sleep(Duration::from_millis(1500));
                Ok(())
            },
        )
        .unwrap();
    let shutdown = Shutdown::new();
    let stopper = {
        let (log, shutdown) = (log.clone(), shutdown.clone());
        std::thread::spawn(move || {
            wait_for("the run to start", Duration::from_secs(30), || {
                log.len() >= 1
            });
            shutdown.trigger();
            Instant::now()
        })
    };
    scheduler.run(&shutdown);
    let returned = Instant::now();
    let triggered = stopper.join().unwrap();
    let key = leader_core::LockName::new("long").unwrap();
    let record = leader_schedule::read_run_record(&*backend, &key)
        .unwrap()
        .unwrap();
    (returned.duration_since(triggered), record)
}

#[test]
fn shutdown_finishes_a_running_job_or_abandons_it() {
    let (took, record) = shutdown_during_a_run(leader_schedule::OnShutdown::Finish);
    assert_eq!(
        record.state,
        leader_schedule::RunState::Succeeded,
        "finished before returning"
    );
    assert!(
        took > Duration::from_millis(500),
        "run waited for the job: {took:?}"
    );

    let (took, record) = shutdown_during_a_run(leader_schedule::OnShutdown::Abandon);
    assert_eq!(
        record.state,
        leader_schedule::RunState::Running,
        "returned mid-run"
    );
    assert!(
        took < Duration::from_millis(1400),
        "run did not wait for the job: {took:?}"
    );
}
