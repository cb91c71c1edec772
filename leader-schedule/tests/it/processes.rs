//! Real processes: three nodes whose wall clocks libfaketime sets 500 ms apart run a
//! per-second job for 30 s on SQLite, Redis and PostgreSQL, and every tick runs exactly
//! once; on SQLite, a node killed mid-run and then every node killed and restarted never
//! make a tick run twice.
//!
//! Each node is this test binary run again as a child (its settings in the environment):
//! it schedules the job and appends a line per run start and end to a file of its own,
//! with the tick, the fencing token and the host's real time (its faked clock corrected
//! by its known offset).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{assert_each_tick_once, millis, wait_for};
use leader_blocking::LeaderElector;
use leader_core::{LeaderElectionOptions, LockBackend, Shutdown};
use leader_rig::fixtures;
use leader_schedule::{JobConfig, Schedule, Scheduler};

const CHILD_URL: &str = "LEADER_SCHEDULE_TEST_URL";
const CHILD_OUT: &str = "LEADER_SCHEDULE_TEST_OUT";
const CHILD_STOP: &str = "LEADER_SCHEDULE_TEST_STOP";
const CHILD_OFFSET: &str = "LEADER_SCHEDULE_TEST_OFFSET_MS";
const CHILD_WORK: &str = "LEADER_SCHEDULE_TEST_WORK_MS";
/// A child stops after this long whatever happens.
const CHILD_MAX: Duration = Duration::from_secs(120);

/// The host's real time in ms, from a clock that is `offset_ms` off.
fn real_ms(offset_ms: i64) -> i64 {
    millis(SystemTime::now()) as i64 - offset_ms
}

/// The child's side: schedule the job until the stop file appears.
fn child() -> bool {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return false;
    };
    let out = PathBuf::from(std::env::var_os(CHILD_OUT).unwrap());
    let stop = PathBuf::from(std::env::var_os(CHILD_STOP).unwrap());
    let offset: i64 = std::env::var(CHILD_OFFSET).unwrap().parse().unwrap();
    let work: u64 = std::env::var(CHILD_WORK).unwrap().parse().unwrap();
    if let Some(path) = url.strip_prefix("sqlite://") {
        run_child(
            leader_sqlite::SqliteBackend::open(path).unwrap(),
            &out,
            &stop,
            offset,
            work,
        );
    } else if url.starts_with("redis://") {
        run_child(
            leader_redis::RedisBackend::connect(&url).unwrap(),
            &out,
            &stop,
            offset,
            work,
        );
    } else {
        run_child(
            leader_postgres::PostgresBackend::connect(&url).unwrap(),
            &out,
            &stop,
            offset,
            work,
        );
    }
    true
}

fn run_child<B: LockBackend + 'static>(
    backend: B,
    out: &Path,
    stop: &Path,
    offset: i64,
    work: u64,
) {
    let node = format!("node{offset:+}-{}", std::process::id());
    let options = LeaderElectionOptions::default().with_node_id(&node);
    let mut scheduler = Scheduler::new(LeaderElector::new(backend, options).unwrap());
    let out = out.to_owned();
    let config = JobConfig::new(Schedule::every(Duration::from_secs(1)).unwrap())
        .with_lease_time(Duration::from_secs(2));
    scheduler
        .add("per-second", config, move |run| {
            let tick = millis(run.tick());
            let token = run.fencing_token();
            let line = |what: &str| format!("{what} {tick} {token} {}\n", real_ms(offset));
            file_again(&out).write_all(line("start").as_bytes())?;
            std::thread::sleep(Duration::from_millis(work));
            file_again(&out).write_all(line("end").as_bytes())?;
            Ok(())
        })
        .unwrap();
    let shutdown = Shutdown::new();
    let watcher = shutdown.clone();
    let stop = stop.to_owned();
    std::thread::spawn(move || {
        let started = Instant::now();
        while !stop.exists() && started.elapsed() < CHILD_MAX {
            std::thread::sleep(Duration::from_millis(20));
        }
        watcher.trigger();
    });
    scheduler.run(&shutdown);
}

/// The child's output file, opened to append one line (each line is one `write`, so a
/// kill never leaves half a line).
fn file_again(out: &Path) -> File {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .unwrap()
}

/// One line a child wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    start: bool,
    tick: u64,
    token: u64,
    at_ms: i64,
}

struct Nodes {
    dir: PathBuf,
    stop: PathBuf,
    children: Vec<(Child, PathBuf)>,
    spawned: usize,
}

impl Nodes {
    fn new(test: &str) -> Nodes {
        let dir =
            std::env::temp_dir().join(format!("leader-schedule-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stop = dir.join("stop");
        Nodes {
            dir,
            stop,
            children: Vec::new(),
            spawned: 0,
        }
    }

    fn spawn(&mut self, test: &str, url: &str, offsets: &[i64], work_ms: u64) {
        let _ = std::fs::remove_file(&self.stop);
        let faketime = fixtures::faketime_library();
        for &offset in offsets {
            let out = self.dir.join(format!("node-{}", self.spawned));
            self.spawned += 1;
            File::create(&out).unwrap();
            let mut command = Command::new(std::env::current_exe().unwrap());
            command
                .args(["--exact", test, "--nocapture"])
                .env(CHILD_URL, url)
                .env(CHILD_OUT, &out)
                .env(CHILD_STOP, &self.stop)
                .env(CHILD_OFFSET, offset.to_string())
                .env(CHILD_WORK, work_ms.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if offset != 0 {
                let faketime = faketime
                    .clone()
                    .expect("libfaketime (scripts/services.sh install)");
                command
                    .env("LD_PRELOAD", faketime)
                    .env("FAKETIME", format!("{:+}", offset as f64 / 1000.0))
                    .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            }
            self.children.push((command.spawn().unwrap(), out));
        }
    }

    fn lines(&self) -> Vec<Line> {
        let mut all = Vec::new();
        for i in 0..self.spawned {
            let text =
                std::fs::read_to_string(self.dir.join(format!("node-{i}"))).unwrap_or_default();
            for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
                let parts: Vec<&str> = line.split_whitespace().collect();
                all.push(Line {
                    start: parts[0] == "start",
                    tick: parts[1].parse().unwrap(),
                    token: parts[2].parse().unwrap(),
                    at_ms: parts[3].parse().unwrap(),
                });
            }
        }
        all
    }

    fn ends(&self) -> usize {
        self.lines().iter().filter(|l| !l.start).count()
    }

    /// Stops every child by the stop file and checks each exited well.
    fn stop_all(&mut self) {
        std::fs::write(&self.stop, b"").unwrap();
        for (child, _) in self.children.drain(..) {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "a node failed:\n{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }

    /// Kills (SIGKILL) the child whose file is `out`, or every child.
    fn kill(&mut self, only: Option<&Path>) {
        let (killed, kept): (Vec<_>, Vec<_>) = self
            .children
            .drain(..)
            .partition(|(_, out)| only.is_none_or(|o| o == out));
        for (mut child, _) in killed {
            child.kill().unwrap();
            child.wait().unwrap();
        }
        self.children = kept;
    }

    /// The child that started a run it has not ended, if one has.
    fn mid_run(&self) -> Option<PathBuf> {
        self.children
            .iter()
            .map(|(_, out)| out)
            .find(|out| {
                let text = std::fs::read_to_string(out).unwrap_or_default();
                text.lines().last().is_some_and(|l| l.starts_with("start"))
            })
            .cloned()
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.kill(None);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Every tick started once, and the runs never overlapped in real time.
fn check_once(lines: &[Line]) {
    let starts: Vec<u64> = lines.iter().filter(|l| l.start).map(|l| l.tick).collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        starts.len(),
        "a tick started twice: {starts:?}"
    );
    let mut tokens: Vec<(u64, u64)> = lines
        .iter()
        .filter(|l| l.start)
        .map(|l| (l.tick, l.token))
        .collect();
    tokens.sort_unstable();
    assert!(
        tokens.windows(2).all(|w| w[0].1 < w[1].1),
        "tokens went back: {tokens:?}"
    );
}

fn skewed_nodes_run_each_tick_once(test: &str, url: Option<String>) {
    if child() {
        return;
    }
    let Some(url) = url else { return };
    let mut nodes = Nodes::new(test);
    nodes.spawn(test, &url, &[-500, 0, 500], 1);
    // 30 s of a per-second job.
    wait_for("30 runs", Duration::from_secs(90), || nodes.ends() >= 30);
    nodes.stop_all();
    let lines = nodes.lines();
    check_once(&lines);
    let ends: Vec<u64> = lines.iter().filter(|l| !l.start).map(|l| l.tick).collect();
    assert!(ends.len() >= 30);
    assert_each_tick_once(ends, 1000);
}

fn sqlite_url(test: &str) -> Option<String> {
    let dir =
        std::env::temp_dir().join(format!("leader-schedule-db-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Some(format!("sqlite://{}", dir.join("locks.db").display()))
}

#[test]
fn skewed_processes_run_each_tick_once_on_sqlite() {
    let test = "processes::skewed_processes_run_each_tick_once_on_sqlite";
    let url = if child() { None } else { sqlite_url(test) };
    skewed_nodes_run_each_tick_once(test, url);
}

#[test]
fn skewed_processes_run_each_tick_once_on_redis() {
    let url = if std::env::var(CHILD_URL).is_ok() {
        None
    } else {
        fixtures::shared_redis().map(|s| s.url())
    };
    skewed_nodes_run_each_tick_once(
        "processes::skewed_processes_run_each_tick_once_on_redis",
        url,
    );
}

#[test]
fn skewed_processes_run_each_tick_once_on_postgres() {
    let url = if std::env::var(CHILD_URL).is_ok() {
        None
    } else {
        fixtures::shared_postgres().map(|s| s.url())
    };
    skewed_nodes_run_each_tick_once(
        "processes::skewed_processes_run_each_tick_once_on_postgres",
        url,
    );
}

#[test]
fn a_node_killed_mid_run_and_a_restart_of_all_never_run_a_tick_twice() {
    let test = "processes::a_node_killed_mid_run_and_a_restart_of_all_never_run_a_tick_twice";
    if child() {
        return;
    }
    let url = sqlite_url(test).unwrap();
    let mut nodes = Nodes::new(test);
    // Runs of 400 ms: a kill lands mid-run often.
    nodes.spawn(test, &url, &[-500, 0, 500], 400);
    wait_for("three runs", Duration::from_secs(60), || nodes.ends() >= 3);
    let mut victim = None;
    wait_for("a node mid-run", Duration::from_secs(60), || {
        victim = nodes.mid_run();
        victim.is_some()
    });
    let victim = victim.unwrap();
    let killed_at = nodes.lines().len();
    nodes.kill(Some(&victim));
    let killed_tick = nodes.lines()[..killed_at]
        .iter()
        .filter(|l| l.start)
        .map(|l| l.tick)
        .max()
        .unwrap();
    // The others go on once the dead runner's 2 s lease runs out.
    let ends = nodes.ends();
    wait_for("runs after the kill", Duration::from_secs(60), || {
        nodes.ends() >= ends + 3
    });
    // Every node crashes at once, and three new ones start.
    nodes.kill(None);
    let before_restart = nodes.ends();
    nodes.spawn(test, &url, &[-500, 0, 500], 400);
    wait_for("runs after the restart", Duration::from_secs(60), || {
        nodes.ends() >= before_restart + 3
    });
    nodes.stop_all();

    let lines = nodes.lines();
    check_once(&lines);
    let killed_runs = lines
        .iter()
        .filter(|l| l.start && l.tick == killed_tick)
        .count();
    assert_eq!(
        killed_runs, 1,
        "the killed run's tick {killed_tick} was not run again"
    );
    let first_at = lines.iter().map(|l| l.at_ms).min().unwrap();
    println!(
        "ran {} ticks over {} ms",
        lines.iter().filter(|l| l.start).count(),
        lines.iter().map(|l| l.at_ms).max().unwrap() - first_at
    );
}

#[test]
fn a_job_longer_than_its_interval_never_overlaps_across_processes() {
    let test = "processes::a_job_longer_than_its_interval_never_overlaps_across_processes";
    if child() {
        return;
    }
    let url = sqlite_url(test).unwrap();
    let mut nodes = Nodes::new(test);
    // Runs of 2.5 s at a 1 s rate.
    nodes.spawn(test, &url, &[-500, 0, 500], 2500);
    wait_for("three runs", Duration::from_secs(90), || nodes.ends() >= 3);
    nodes.stop_all();
    let lines = nodes.lines();
    check_once(&lines);
    let mut runs: Vec<(i64, i64, u64)> = lines
        .iter()
        .filter(|l| l.start)
        .filter_map(|s| {
            let end = lines.iter().find(|e| !e.start && e.tick == s.tick)?;
            Some((s.at_ms, end.at_ms, s.tick))
        })
        .collect();
    runs.sort_unstable();
    assert!(runs.len() >= 3, "{runs:?}");
    for pair in runs.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two runs overlapped: {pair:?}");
        assert!(
            pair[1].2 >= pair[0].2 + 2000,
            "a tick that came during a run was run: {pair:?}"
        );
    }
}
