//! The command line, parsed by hand: a run (the orchestrator), or one worker process (a
//! hidden subcommand the orchestrator spawns).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::backend::Backend;
use crate::faults::Class;

/// The usage text.
pub const USAGE: &str = "\
usage: leader-chaos [--backend redis|mongodb|etcd|sqlite|postgres|redis-sentinel|
                               postgres-standby]
                    [--workers N] [--locks N] [--seconds N] [--seed N] [--lease-ms N]
                    [--long-every N] [--holders N] [--rw-share N] [--faults LIST|all|none]
                    [--broken no-lock|no-fence|no-extend] [--dir PATH]

Runs N worker processes contending for a few locks behind a fault proxy, injects faults
on a schedule drawn from --seed, then checks the logs and the fenced resource. Prints one
`chaos: ...` line and exits 1 when a safety figure is not zero.
Faults: kill,pause everywhere; restart,blackhole,reset with a proxied server (not sqlite,
redis-sentinel, postgres-standby); etcd also member-kill,member-pause,member-cut; sqlite
wipe,busy; postgres server-kill,terminate,wipe; redis-sentinel and postgres-standby
failover.
Defaults: --backend redis --seconds 60 --seed 1, every fault of the backend,
--lease-ms 1000 (etcd: 2000, and it must be whole seconds); --workers 5 (postgres and
postgres-standby: 7, mongodb: 10, etcd: 20), --locks one fewer than the workers,
--long-every 50 (one section in N works 1-1.5 leases), --holders 3 (workers 1..N also
hold two more locks, one through the blocking elector and one through the async one, for
2-4 leases at a time, auto-extended, while the others contend; 0: none), --rw-share 3
(one section in N, and one hold in N of the async hold loop, takes a read/write lock,
chaos-rw-0 and chaos-rw-1, three reads to one write; 0: none).";

/// A deliberately wrong worker, to show that the checker catches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// Acts without the lock, with tokens it counts itself.
    NoLock,
    /// Takes the lock but writes to the resource without the fence.
    NoFence,
    /// Takes the lock without auto-extension: every section longer than the lease loses
    /// it at its deadline, with no fault to explain the loss.
    NoExtend,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print the usage.
    Help,
    /// Run the orchestrator.
    Run(RunArgs),
    /// Be one worker.
    Worker(WorkerArgs),
}

/// The orchestrator's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunArgs {
    /// The lock backend.
    pub backend: Backend,
    /// How many worker processes.
    pub workers: u32,
    /// How many lock names they contend for (`chaos-0` …).
    pub locks: u32,
    /// How long the fault schedule runs.
    pub seconds: u64,
    /// Seeds the fault schedule (and the workers' random choices).
    pub seed: u64,
    /// The workers' lease time.
    pub lease: Duration,
    /// The faults to draw from.
    pub faults: Vec<Class>,
    /// One section in this many works 1–1.5 leases (the rest 2–30 ms).
    pub long_every: u32,
    /// How many workers (the first ones) also run the hold loops (see [`crate::hold`]).
    pub holders: u32,
    /// One section in this many takes a read/write lock (see [`crate::read_write`]); 0:
    /// none.
    pub rw_share: u32,
    /// A broken worker mode.
    pub broken: Option<Broken>,
    /// Where the logs go (default: a new directory under the temp dir).
    pub dir: Option<PathBuf>,
}

/// One worker's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerArgs {
    /// The lock server's URL (through the proxy), for `leader::connect`.
    pub lock_url: String,
    /// The resource Redis URL.
    pub resource_url: String,
    /// The worker id.
    pub worker: u32,
    /// How many lock names (`chaos-0` …); each section takes one drawn at random.
    pub locks: u32,
    /// Which life of this worker (0, then one more per restart).
    pub incarnation: u32,
    /// Its log file.
    pub log: PathBuf,
    /// The run's seed.
    pub seed: u64,
    /// The lease time.
    pub lease: Duration,
    /// One section in this many works 1–1.5 leases.
    pub long_every: u32,
    /// How many workers (ids 1..=holders) run the hold loops.
    pub holders: u32,
    /// One section in this many takes a read/write lock; 0: none.
    pub rw_share: u32,
    /// A broken mode.
    pub broken: Option<Broken>,
}

/// A command line that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}\n\n{USAGE}")]
pub struct UsageError(String);

/// How many workers run the hold loops when `--holders` is not given: one holds each
/// hold lock, the other two contend for it the whole time.
pub const DEFAULT_HOLDERS: u32 = 3;

/// One section in this many takes a read/write lock when `--rw-share` is not given.
pub const DEFAULT_RW_SHARE: u32 = 3;

/// The hidden subcommand that makes the process a worker.
const WORKER: &str = "__worker";

/// Parses the arguments after the program name.
///
/// # Errors
///
/// An unknown flag, a missing or bad value.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, UsageError> {
    let mut args = args.into_iter().peekable();
    let worker = args.next_if(|first| first == WORKER).is_some();
    let mut flags = Vec::new();
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(Command::Help);
        }
        let value = args
            .next()
            .ok_or_else(|| UsageError(format!("{flag} needs a value")))?;
        flags.push((flag, value));
    }
    let get = |name: &str| {
        flags
            .iter()
            .rev()
            .find(|(flag, _)| flag == name)
            .map(|(_, v)| v.as_str())
    };
    let known: &[&str] = if worker {
        &[
            "--lock-url",
            "--resource-url",
            "--worker",
            "--locks",
            "--incarnation",
            "--log",
            "--seed",
            "--lease-ms",
            "--long-every",
            "--holders",
            "--rw-share",
            "--broken",
        ]
    } else {
        &[
            "--backend",
            "--workers",
            "--locks",
            "--seconds",
            "--seed",
            "--lease-ms",
            "--long-every",
            "--holders",
            "--rw-share",
            "--faults",
            "--broken",
            "--dir",
        ]
    };
    if let Some((flag, _)) = flags.iter().find(|(f, _)| !known.contains(&f.as_str())) {
        return Err(UsageError(format!("unknown option {flag}")));
    }
    let broken = get("--broken").map(broken).transpose()?;
    let long_every = number(get("--long-every"), "--long-every", 50)?;
    if long_every == 0 {
        return Err(UsageError("--long-every must be at least 1".into()));
    }
    let seed = number(get("--seed"), "--seed", 1)?;
    let holders = number(get("--holders"), "--holders", DEFAULT_HOLDERS)?;
    let rw_share = number(get("--rw-share"), "--rw-share", DEFAULT_RW_SHARE)?;
    let name = get("--backend").unwrap_or("redis");
    let backend =
        Backend::from_name(name).ok_or_else(|| UsageError(format!("unknown backend {name}")))?;
    let workers = number(get("--workers"), "--workers", backend.default_workers())?;
    // One name fewer than workers: every name is contended for.
    let locks = number(get("--locks"), "--locks", workers.saturating_sub(1).max(1))?;
    if locks == 0 {
        return Err(UsageError("--locks must be at least 1".into()));
    }
    let lease = match get("--lease-ms") {
        Some(ms) => Duration::from_millis(ms.parse().map_err(|_| bad("--lease-ms"))?),
        None => backend.default_lease(),
    };
    if lease < Duration::from_millis(100) {
        return Err(UsageError("--lease-ms must be at least 100".into()));
    }
    // etcd grants whole seconds: a rounded-up lease would make the orchestrator's pauses
    // and the grace period too short for what the cluster holds.
    if backend.whole_second_leases() && lease.subsec_nanos() != 0 {
        return Err(UsageError(
            "--lease-ms must be whole seconds for etcd (a multiple of 1000)".into(),
        ));
    }
    if worker {
        let need = |name: &str| {
            get(name)
                .map(str::to_owned)
                .ok_or_else(|| UsageError(format!("{name} is required")))
        };
        return Ok(Command::Worker(WorkerArgs {
            lock_url: need("--lock-url")?,
            resource_url: need("--resource-url")?,
            worker: need("--worker")?.parse().map_err(|_| bad("--worker"))?,
            locks,
            incarnation: number(get("--incarnation"), "--incarnation", 0)?,
            log: PathBuf::from(need("--log")?),
            seed,
            lease,
            long_every,
            holders,
            rw_share,
            broken,
        }));
    }
    if workers == 0 {
        return Err(UsageError("--workers must be at least 1".into()));
    }
    Ok(Command::Run(RunArgs {
        backend,
        workers,
        locks,
        seconds: number(get("--seconds"), "--seconds", 60)?,
        seed,
        lease,
        long_every,
        holders: holders.min(workers),
        rw_share,
        faults: get("--faults").map_or(Ok(Class::of(backend)), |list| classes(list, backend))?,
        broken,
        dir: get("--dir").map(PathBuf::from),
    }))
}

impl WorkerArgs {
    /// The command line that makes a process this worker (after the program name).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![WORKER.into()];
        let mut push = |flag: &str, value: OsString| args.extend([flag.into(), value]);
        push("--lock-url", self.lock_url.clone().into());
        push("--resource-url", self.resource_url.clone().into());
        push("--worker", self.worker.to_string().into());
        push("--locks", self.locks.to_string().into());
        push("--incarnation", self.incarnation.to_string().into());
        push("--log", self.log.clone().into_os_string());
        push("--seed", self.seed.to_string().into());
        push("--lease-ms", self.lease.as_millis().to_string().into());
        push("--long-every", self.long_every.to_string().into());
        push("--holders", self.holders.to_string().into());
        push("--rw-share", self.rw_share.to_string().into());
        if let Some(mode) = self.broken {
            push("--broken", broken_name(mode).into());
        }
        args
    }
}

/// The flag value of a broken mode.
pub fn broken_name(mode: Broken) -> &'static str {
    match mode {
        Broken::NoLock => "no-lock",
        Broken::NoFence => "no-fence",
        Broken::NoExtend => "no-extend",
    }
}

fn broken(value: &str) -> Result<Broken, UsageError> {
    match value {
        "no-lock" => Ok(Broken::NoLock),
        "no-fence" => Ok(Broken::NoFence),
        "no-extend" => Ok(Broken::NoExtend),
        other => Err(UsageError(format!("unknown broken mode {other}"))),
    }
}

fn classes(value: &str, backend: Backend) -> Result<Vec<Class>, UsageError> {
    match value {
        "none" => return Ok(Vec::new()),
        "all" => return Ok(Class::of(backend)),
        _ => {}
    }
    let mut chosen = Vec::new();
    for name in value.split(',').map(str::trim) {
        let class = Class::from_name(name).ok_or_else(|| bad("--faults"))?;
        if !backend.faults().contains(&class) {
            return Err(UsageError(format!(
                "fault {name} does not apply to {}: it needs --backend {}",
                backend.name(),
                class.backends().join(" or ")
            )));
        }
        if !chosen.contains(&class) {
            chosen.push(class);
        }
    }
    Ok(chosen)
}

fn number<T: std::str::FromStr>(
    value: Option<&str>,
    flag: &str,
    default: T,
) -> Result<T, UsageError> {
    value.map_or(Ok(default), |v| v.parse().map_err(|_| bad(flag)))
}

fn bad(flag: &str) -> UsageError {
    UsageError(format!("bad value for {flag}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Result<Command, UsageError> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn a_run_takes_defaults() {
        let Command::Run(run) = parsed("").unwrap() else {
            panic!("not a run")
        };
        assert_eq!(
            (run.backend, run.workers, run.seconds, run.seed),
            (Backend::Redis, 5, 60, 1)
        );
        assert_eq!(run.faults, Class::of(Backend::Redis));
        assert_eq!(run.lease, Duration::from_millis(1000));
        assert_eq!(run.locks, 4);
        assert_eq!(run.rw_share, DEFAULT_RW_SHARE);
        let Command::Run(run) = parsed("--rw-share 0").unwrap() else {
            panic!("not a run")
        };
        assert_eq!(run.rw_share, 0);
        let Command::Run(run) =
            parsed("--backend mongodb --faults pause,kill --broken no-fence --seed 7").unwrap()
        else {
            panic!("not a run")
        };
        assert_eq!(run.backend, Backend::Mongodb);
        assert_eq!(run.faults, vec![Class::Pause, Class::Kill]);
        assert_eq!((run.broken, run.seed), (Some(Broken::NoFence), 7));
    }

    #[test]
    fn etcd_runs_take_member_faults_and_whole_second_leases() {
        let Command::Run(run) = parsed("--backend etcd").unwrap() else {
            panic!("not a run")
        };
        assert_eq!(run.backend, Backend::Etcd);
        assert_eq!(run.lease, Duration::from_millis(2000));
        assert_eq!(run.faults, Backend::Etcd.faults().to_vec());
        assert!(run.faults.contains(&Class::MemberCut));
        let Command::Run(run) = parsed(
            "--backend etcd --lease-ms 3000 --faults member-kill,member-pause,member-cut,reset",
        )
        .unwrap() else {
            panic!("not a run")
        };
        assert_eq!(run.lease, Duration::from_secs(3));
        assert_eq!(
            run.faults,
            vec![
                Class::MemberKill,
                Class::MemberPause,
                Class::MemberCut,
                Class::Reset
            ]
        );
        let Command::Run(run) = parsed("--backend etcd --faults all").unwrap() else {
            panic!("not a run")
        };
        assert_eq!(run.faults, Backend::Etcd.faults().to_vec());
        let Command::Run(run) = parsed("--backend redis --faults all").unwrap() else {
            panic!("not a run")
        };
        assert!(!run.faults.contains(&Class::MemberKill), "{:?}", run.faults);
        // A repeated name counts once.
        let Command::Run(run) = parsed("--backend etcd --faults member-cut,member-cut").unwrap()
        else {
            panic!("not a run")
        };
        assert_eq!(run.faults, vec![Class::MemberCut]);
    }

    #[test]
    fn member_faults_and_part_seconds_are_refused_outside_etcd_rules() {
        for line in [
            "--faults member-kill",
            "--backend redis --faults pause,member-pause",
            "--backend mongodb --faults member-cut",
            "--backend etcd --lease-ms 1500",
            "--backend etcd --lease-ms 2500",
            "--backend etcd --lease-ms 500",
            "--backend etcd --faults member-nap",
        ] {
            assert!(parsed(line).is_err(), "{line}");
        }
        let err = parsed("--backend redis --faults member-kill").unwrap_err();
        assert!(err.to_string().contains("--backend etcd"), "{err}");
        let err = parsed("--backend sqlite --faults restart").unwrap_err();
        assert!(
            err.to_string().contains("does not apply to sqlite"),
            "{err}"
        );
        let err = parsed("--backend redis --faults wipe").unwrap_err();
        assert!(err.to_string().contains("sqlite or postgres"), "{err}");
        // Other backends keep part-second leases.
        let Command::Run(run) = parsed("--backend redis --lease-ms 1200").unwrap() else {
            panic!("not a run")
        };
        assert_eq!(run.lease, Duration::from_millis(1200));
    }

    #[test]
    fn worker_args_round_trip() {
        let args = WorkerArgs {
            lock_url: "redis://127.0.0.1:1/".into(),
            resource_url: "redis://127.0.0.1:2/".into(),
            worker: 3,
            locks: 6,
            incarnation: 2,
            log: "/tmp/w3.2.log".into(),
            seed: 9,
            lease: Duration::from_millis(1200),
            long_every: 4,
            holders: 3,
            rw_share: 5,
            broken: Some(Broken::NoLock),
        };
        let line = args.to_args().into_iter().map(|a| a.into_string().unwrap());
        assert_eq!(parse(line).unwrap(), Command::Worker(args));
    }

    #[test]
    fn sqlite_and_postgres_runs_take_their_own_faults() {
        let Command::Run(run) = parsed("--backend sqlite --locks 2").unwrap() else {
            panic!("not a run")
        };
        assert_eq!((run.backend, run.locks), (Backend::Sqlite, 2));
        assert_eq!(run.faults, Backend::Sqlite.faults().to_vec());
        assert!(run.faults.contains(&Class::Busy));
        let Command::Run(run) =
            parsed("--backend postgresql --faults server-kill,terminate,wipe").unwrap()
        else {
            panic!("not a run")
        };
        assert_eq!(run.backend, Backend::Postgres);
        assert_eq!(
            run.faults,
            vec![Class::ServerKill, Class::Terminate, Class::Wipe]
        );
    }

    #[test]
    fn mistakes_are_usage_errors() {
        for line in [
            "--backend consul",
            "--workers",
            "--workers 0",
            "--locks 0",
            "--long-every 0",
            "--bogus 1",
            "--faults pause,fire",
            "--lease-ms 5",
            "__worker --worker 1",
        ] {
            assert!(parsed(line).is_err(), "{line}");
        }
        assert_eq!(parsed("--help").unwrap(), Command::Help);
    }
}
