//! The orchestrator: starts the servers, the proxies and the workers, runs the fault
//! schedule, stops everything, and hands the logs and the resource to the checker.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use leader::{AnyBackend, LeaderElectionOptions, LeaderElector};
use leader_history::{History, Log, Report, check};
use leader_rig::FaultProxy;
use leader_rig::fixtures::RedisServer;

use crate::cli::{Broken, RunArgs, WorkerArgs, broken_name};
use crate::event::{now_us, parse_log};
use crate::faults::Schedule;
use crate::history::{resource_writes, to_history};
use crate::hold::Hold;
use crate::journal::Journal;
use crate::resource;
use crate::servers::{self, LockServer};
use crate::workers::{Life, Workers};

/// What faults act on.
#[derive(Debug)]
pub struct Lab {
    pub(crate) server: LockServer,
    /// One proxy per address of the lock server (one per etcd member), in its order.
    pub(crate) proxies: Vec<FaultProxy>,
    /// Reads the lock's state from the server directly, to find the holder.
    pub(crate) observer: LeaderElector<AnyBackend>,
    pub(crate) workers: Workers,
    pub(crate) journal: Journal,
    pub(crate) lease: Duration,
    /// How many lock names the workers use: the contended ones and the hold loops' (a
    /// pause may hit the holder of any).
    pub(crate) locks: u32,
    pub(crate) restart_loses_data: bool,
    /// Whether a failover may lose acknowledged writes (an asynchronous replica).
    pub(crate) failover_loses_data: bool,
}

impl Lab {
    /// Every proxy drops all traffic (a partition from the whole lock server).
    pub(crate) fn blackhole(&self) {
        self.proxies.iter().for_each(FaultProxy::blackhole);
    }

    /// Every proxy forwards again.
    pub(crate) fn heal(&self) {
        self.proxies.iter().for_each(FaultProxy::heal);
    }

    /// Every proxy resets its open connections.
    pub(crate) fn reset(&self) {
        self.proxies.iter().for_each(FaultProxy::reset);
    }
}

/// Runs the whole thing and returns the checker's report (also written to
/// `report.txt` in the run's directory).
///
/// # Errors
///
/// When a server, the proxy or a worker cannot start, a fault cannot be injected, or the
/// logs or the resource cannot be read.
pub fn run(args: &RunArgs) -> Result<Report, Box<dyn Error>> {
    let dir = run_dir(args)?;
    let mut journal = Journal::create(&dir.join("orchestrator.log"))?;
    journal.say(&describe_run(args, &dir));
    let server = LockServer::start(args.backend, &dir)?;
    let resource = RedisServer::start()?;
    let addrs = server.addrs();
    let proxies = addrs
        .iter()
        .map(|addr| FaultProxy::start(*addr))
        .collect::<std::io::Result<Vec<_>>>()?;
    let proxied: Vec<_> = proxies.iter().map(FaultProxy::addr).collect();
    let direct = servers::connect(&server.url_at(&addrs))?;
    let observer = LeaderElector::new(
        direct,
        LeaderElectionOptions::new().with_wait_time(Duration::ZERO),
    )?;
    let template = WorkerArgs {
        lock_url: server.url_at(&proxied),
        resource_url: resource.url(),
        worker: 0,
        locks: args.locks,
        incarnation: 0,
        log: PathBuf::new(),
        seed: args.seed,
        lease: args.lease,
        long_every: args.long_every,
        holders: args.holders,
        rw_share: args.rw_share,
        broken: args.broken,
    };
    let workers = Workers::start(args.workers, template, &dir, &mut journal)?;
    let mut lab = Lab {
        server,
        proxies,
        observer,
        workers,
        journal,
        lease: args.lease,
        locks: args.locks + hold_locks(args),
        restart_loses_data: args.backend.restart_loses_data(),
        failover_loses_data: args.backend.failover_loses_data(),
    };
    let outcome = run_schedule(args, &mut lab);
    // Long sections last up to two leases; then a kill ends the stragglers.
    let grace = args.lease * 2 + Duration::from_secs(3);
    lab.heal();
    let stopped_at = now_us();
    lab.workers.stop_all(grace, &mut lab.journal);
    outcome?;
    let run_end = now_us();
    let (writes, unreadable_resource_entries) =
        resource_writes(&resource::entries(&resource.url())?);
    let record = History {
        backend: args.backend.name().to_owned(),
        logs: read_logs(lab.workers.lives())?,
        faults: lab.journal.faults().to_vec(),
        resource: writes,
        unreadable_resource_entries,
        run_end,
        stopped_at,
        lease_us: u64::try_from(args.lease.as_micros()).unwrap_or(u64::MAX),
        paused_client_blocks_store: args.backend.paused_client_blocks_store(),
        exact_times: false,
    };
    let report = check(&record);
    let text = format!(
        "{}\n{}\nchaos: {report}\n",
        report.examples.join("\n"),
        report.details()
    );
    std::fs::write(dir.join("report.txt"), text.trim_start())?;
    Ok(report)
}

/// Injects faults until `--seconds` have passed, restarting workers that died meanwhile.
fn run_schedule(args: &RunArgs, lab: &mut Lab) -> Result<(), Box<dyn Error>> {
    let mut schedule = Schedule::new(args.seed, args.faults.clone());
    let end = Instant::now() + Duration::from_secs(args.seconds);
    loop {
        let next = Instant::now() + schedule.gap();
        while Instant::now() < next.min(end) {
            lab.workers.reap(&mut lab.journal)?;
            thread::sleep(Duration::from_millis(100));
        }
        if Instant::now() >= end {
            return Ok(());
        }
        if let Some(class) = schedule.next_class() {
            schedule.inject(class, lab)?;
        }
    }
}

/// How many locks the hold loops add: one per [`Hold`] when any worker runs them.
fn hold_locks(args: &RunArgs) -> u32 {
    if args.holders == 0 || args.broken == Some(Broken::NoLock) {
        0
    } else {
        u32::try_from(Hold::ALL.len()).unwrap_or(u32::MAX)
    }
}

/// Reads every worker life's logs (its contending loop's, and its hold loops' where it
/// ran them); a partial last line is dropped and counted.
fn read_logs(lives: &[Life]) -> Result<Vec<Log>, Box<dyn Error>> {
    let mut incarnations = Vec::with_capacity(lives.len());
    for life in lives {
        let holds = Hold::ALL.map(|hold| hold.log(&life.log));
        for log in std::iter::once(&life.log).chain(&holds) {
            // A worker killed before its first line leaves no file; a worker that runs no
            // hold loop has none of theirs.
            let bytes = std::fs::read(log).unwrap_or_default();
            if bytes.is_empty() && log != &life.log {
                continue;
            }
            let parsed = parse_log(&String::from_utf8_lossy(&bytes))
                .map_err(|err| format!("{}: {err}", log.display()))?;
            incarnations.push(Log {
                node: life.worker,
                events: to_history(life.worker, &parsed.events),
                died_at: life.died_at,
                torn: parsed.torn,
            });
        }
    }
    Ok(incarnations)
}

/// The run's directory, created if needed. One that holds a previous run's logs is
/// refused: the logs are appended to, so the checker would read both runs as one.
fn run_dir(args: &RunArgs) -> std::io::Result<PathBuf> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!(
            "leader-chaos-{}-{}-{}",
            args.backend.name(),
            args.seed,
            std::process::id()
        )),
    };
    if dir.join("orchestrator.log").exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} holds the logs of an earlier run: give another --dir, or remove it",
                dir.display()
            ),
        ));
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn describe_run(args: &RunArgs, dir: &Path) -> String {
    let faults: Vec<&str> = args.faults.iter().map(|c| c.name()).collect();
    format!(
        "run: backend={} workers={} locks={} holders={} rw_share={} seconds={} seed={} lease_ms={} faults={} broken={} dir={}",
        args.backend.name(),
        args.workers,
        args.locks,
        args.holders,
        args.rw_share,
        args.seconds,
        args.seed,
        args.lease.as_millis(),
        if faults.is_empty() {
            "none".to_owned()
        } else {
            faults.join(",")
        },
        args.broken.map_or("none", broken_name),
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Command, parse};

    #[test]
    fn a_directory_with_an_earlier_run_is_refused() {
        let dir = std::env::temp_dir().join(format!("leader-chaos-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let line = format!("--dir {}", dir.display());
        let Ok(Command::Run(args)) = parse(line.split_whitespace().map(str::to_owned)) else {
            panic!("not a run")
        };
        assert_eq!(run_dir(&args).unwrap(), dir);
        // Empty, or with files of its own: taken.
        assert!(run_dir(&args).is_ok());
        std::fs::write(dir.join("orchestrator.log"), "").unwrap();
        let err = run_dir(&args).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains("earlier run"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
