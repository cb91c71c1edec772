//! The hold loops: auto-extended leases held for several renewal intervals while other
//! workers contend for the same lock the whole time, through the blocking elector and
//! through the async one.
//!
//! The contending loop ([`crate::worker`]) mostly holds a lock for a few milliseconds, so
//! its leases are seldom renewed, and a long section rarely meets a contender. The hold
//! loops make renewal under contention the normal case: workers `1..=--holders` (3 by
//! default) each run two more loops beside their contending one, on two locks of their
//! own after the contended ones ([`Hold::lock`]):
//!
//! - [`Hold::Blocking`], lock `--locks` (`chaos-<locks>`), through [`LeaderElector`]: its
//!   renewals go through leader-blocking's renewal driver, which sends the due renewals
//!   of a backend together ([`leader::backend::LockBackend::extend_batch`]);
//! - [`Hold::Async`], lock `--locks + 1`, through [`AsyncLeaderElector`] on a tokio
//!   runtime: each renewal one `extend` call.
//!
//! Each loop calls `run_if_leader_with` with the contending loop's 150 ms wait, again as
//! soon as it skips; when it wins, it holds the lock for 2–4 leases (6–12 renewals at a
//! third of the lease each), auto-extended, then releases it and contends again. With
//! three holders, one holds each lock and the other two try to take it every few
//! milliseconds (a waiting elector's backoff starts at 2 ms), all the time: on PostgreSQL
//! each refused acquire locks the holder's row until it commits, on SQLite it takes the
//! file's write lock. A section here is a section like any other (`start`, fenced writes,
//! `lost`, `end`), logged to a file of its own ([`Hold::log`]); the checker holds every
//! `lost` line to account (see the crate README, "Unexplained loss").
//!
//! One hold in `--rw-share` of the async loop takes the read/write lock `chaos-rw-1`
//! instead, through [`leader::AsyncReadWriteLocks`] ([`crate::read_write`]).

use std::error::Error;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use leader::{
    AnyBackend, AsyncLeaderElector, AsyncReadWriteLocks, LeaderElectionOptions, LeaderElector,
    LeaseContext, LeaseMode,
};
use rand::Rng;

use crate::cli::WorkerArgs;
use crate::event::Role;
use crate::event::now_us;
use crate::logfile::LogFile;
use crate::read_write::{self, AsyncHeld};
use crate::servers;
use crate::worker::{Worker, extends, lease_end, lease_left, lock_name, node_id};

/// How long a hold loop waits for its lock in one call, in leases. A waiting elector
/// tries again with a backoff that starts at 2 ms and reaches 125–250 ms, and at once
/// on a release notification: a long wait keeps trying all the time at a few attempts a
/// second, where the contending loop's 150 ms waits would try some fifty times a second
/// (which cost MongoDB runs four in ten of their acquisitions).
const HOLD_WAIT_LEASES: u32 = 2;

/// How often a holder looks whether the worker was asked to stop: it then ends its hold
/// at once, so that the run's grace period covers it.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// One of the two hold loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Through the blocking elector (renewals batched by its renewal driver).
    Blocking,
    /// Through the async elector, on tokio.
    Async,
}

impl Hold {
    /// Both loops.
    pub const ALL: [Hold; 2] = [Hold::Blocking, Hold::Async];

    /// Its name, in its log file's name.
    pub fn name(self) -> &'static str {
        match self {
            Hold::Blocking => "hold-blocking",
            Hold::Async => "hold-async",
        }
    }

    /// Its lock's index in a run of `locks` contended locks: the first and the second
    /// after them.
    pub fn lock(self, locks: u32) -> u32 {
        match self {
            Hold::Blocking => locks,
            Hold::Async => locks.saturating_add(1),
        }
    }

    /// Its log file, beside the worker life's own `log` (`w3.0.log` →
    /// `w3.0.hold-blocking.log`).
    pub fn log(self, log: &Path) -> PathBuf {
        log.with_extension(format!("{}.log", self.name()))
    }

    /// Its stream of the worker's random source (the contending loop's is 0).
    fn stream(self) -> u64 {
        match self {
            Hold::Blocking => 1,
            Hold::Async => 2,
        }
    }
}

/// The hold loops of a worker process, running.
#[derive(Debug)]
pub struct Holds {
    threads: Vec<JoinHandle<()>>,
}

impl Holds {
    /// Waits for the loops to end (they end within a tenth of a second and a release
    /// once the worker is asked to stop).
    pub fn join(self) -> Result<(), Box<dyn Error>> {
        for thread in self.threads {
            thread
                .join()
                .map_err(|_| io::Error::other("a hold loop panicked"))?;
        }
        Ok(())
    }
}

/// Starts the hold loops when `args.worker` is one of the first `--holders` workers
/// (none otherwise); they stop once `stop` is set. A loop that fails (its log cannot be
/// written, its backend cannot be built) ends the whole process with status 2, as the
/// contending loop's failure does, so that the orchestrator starts it again.
///
/// # Errors
///
/// When a log file cannot be opened or a thread cannot start.
pub fn start(args: &WorkerArgs, stop: &Arc<AtomicBool>) -> io::Result<Holds> {
    let mut threads = Vec::new();
    if args.worker == 0 || args.worker > args.holders {
        return Ok(Holds { threads });
    }
    for hold in Hold::ALL {
        let log = LogFile::append(&hold.log(&args.log))?;
        let mut worker = Worker::new(args, log, hold.stream());
        worker.lock = hold.lock(args.locks.max(1));
        let args = args.clone();
        let stop = Arc::clone(stop);
        let thread = thread::Builder::new()
            .name(hold.name().to_owned())
            .spawn(move || {
                let held = match hold {
                    Hold::Blocking => blocking(&args, worker, &stop),
                    Hold::Async => nonblocking(&args, worker, stop),
                };
                if let Err(err) = held {
                    eprintln!("leader-chaos worker {} {}: {err}", args.worker, hold.name());
                    std::process::exit(2);
                }
            })?;
        threads.push(thread);
    }
    Ok(Holds { threads })
}

/// The options of both loops: the contending loop's, but waiting [`HOLD_WAIT_LEASES`]
/// leases for the lock.
fn options(args: &WorkerArgs) -> LeaderElectionOptions {
    LeaderElectionOptions::new()
        .with_lease_time(args.lease)
        .with_wait_time(args.lease * HOLD_WAIT_LEASES)
        .with_auto_extend(extends(args))
        .with_node_id(node_id(args.worker))
}

/// How long a holder keeps the lock: 2–4 leases, so 6–12 renewals.
fn hold_time(worker: &mut Worker, lease: Duration) -> Duration {
    lease.mul_f64(worker.rng.random_range(2.0..4.0))
}

/// The blocking loop.
fn blocking(
    args: &WorkerArgs,
    mut worker: Worker,
    stop: &AtomicBool,
) -> Result<(), Box<dyn Error>> {
    let elector = LeaderElector::new(servers::connect(&args.lock_url)?, options(args))?;
    let name = lock_name(worker.lock);
    while !stop.load(Ordering::SeqCst) {
        let requested = now_us();
        let ran = elector.run_if_leader_with(&name, |lease: &LeaseContext| {
            let token = lease.fencing_token();
            let hold_for = hold_time(&mut worker, args.lease);
            let lost = match worker.begin(token, requested, Some(lease_left(lease)))? {
                Some(refused) => Some(refused),
                None => hold(lease, hold_for, stop),
            };
            worker.finish(token, lost)
        });
        worker.after(ran, requested)?;
    }
    Ok(())
}

/// Holds until `hold_for` has passed or the worker is asked to stop (`None`), or the
/// lease is lost (when it ended).
fn hold(lease: &LeaseContext, hold_for: Duration, stop: &AtomicBool) -> Option<u64> {
    let until = Instant::now() + hold_for;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::SeqCst) {
            return None;
        }
        if lease.wait_lost_timeout(left.min(STOP_CHECK)) {
            return Some(lease_end(lease));
        }
    }
}

/// The async loop, on a tokio runtime of its own. The section's log lines and resource
/// writes are blocking calls: they run on tokio's blocking pool, so that the elector's
/// watchdog, which runs beside the action in the same task, is never held up by them.
fn nonblocking(
    args: &WorkerArgs,
    worker: Worker,
    stop: Arc<AtomicBool>,
) -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let elector = AsyncLeaderElector::new(servers::connect(&args.lock_url)?, options(args))?;
    let name = lock_name(worker.lock);
    let shared = SharedHolds {
        locks: AsyncReadWriteLocks::new(&elector),
        share: args.rw_share,
        mode: read_write::lease_mode(args),
        lock: read_write::lock(args.locks.max(1), read_write::HELD),
    };
    let lease = args.lease;
    let worker = Arc::new(Mutex::new(worker));
    runtime.block_on(hold_async(elector, shared, worker, name, lease, stop))?;
    Ok(())
}

/// The async loop's read/write holds (one hold in `share` is one, on `chaos-rw-1`).
struct SharedHolds {
    locks: AsyncReadWriteLocks<AnyBackend>,
    share: u32,
    mode: LeaseMode,
    /// Its index in the log.
    lock: u32,
}

/// One hold of `chaos-rw-1` in `role`, through the async read/write locks: logged,
/// fenced (a writer) or read (a reader) and lost as any hold, then released.
async fn hold_shared(
    shared: &SharedHolds,
    role: Role,
    worker: &Arc<Mutex<Worker>>,
    lease: Duration,
    stop: &Arc<AtomicBool>,
) -> io::Result<()> {
    let requested = now_us();
    let held = match AsyncHeld::acquire(&shared.locks, role, shared.mode).await {
        Ok(held) => held,
        Err(err) => return off_thread(worker, move |w| w.failed(&err, requested)).await,
    };
    let context = held.context();
    let token = context.fencing_token();
    let deadline = context.deadline();
    let lock = shared.lock;
    let (hold_for, refused) = off_thread(worker, move |w| {
        w.lock = lock;
        w.role = Some(role);
        let left = deadline.saturating_duration_since(Instant::now());
        Ok((hold_time(w, lease), w.begin(token, requested, Some(left))?))
    })
    .await?;
    let lost = match refused {
        Some(refused) => Some(refused),
        None => hold_async_for(context, hold_for, stop).await,
    };
    let finished = off_thread(worker, move |w| w.finish(token, lost)).await;
    held.release().await;
    finished
}

/// The async loop itself.
async fn hold_async(
    elector: AsyncLeaderElector<AnyBackend>,
    shared: SharedHolds,
    worker: Arc<Mutex<Worker>>,
    name: String,
    lease: Duration,
    stop: Arc<AtomicBool>,
) -> io::Result<()> {
    let own_lock = worker.lock().unwrap_or_else(PoisonError::into_inner).lock;
    while !stop.load(Ordering::SeqCst) {
        let role = {
            let mut w = worker.lock().unwrap_or_else(PoisonError::into_inner);
            w.lock = own_lock;
            w.role = None;
            read_write::draw(&mut w, shared.share)
        };
        if let Some(role) = role {
            hold_shared(&shared, role, &worker, lease, &stop).await?;
            off_thread(&worker, |w| {
                w.pause_between();
                Ok(())
            })
            .await?;
            continue;
        }
        let requested = now_us();
        let ran = elector
            .run_if_leader_with(&name, |context: LeaseContext| {
                let worker = Arc::clone(&worker);
                let stop = Arc::clone(&stop);
                async move {
                    let token = context.fencing_token();
                    let deadline = context.deadline();
                    let (hold_for, refused) = off_thread(&worker, move |w| {
                        let left = deadline.saturating_duration_since(Instant::now());
                        Ok((hold_time(w, lease), w.begin(token, requested, Some(left))?))
                    })
                    .await?;
                    let lost = match refused {
                        Some(refused) => Some(refused),
                        None => hold_async_for(&context, hold_for, &stop).await,
                    };
                    off_thread(&worker, move |w| w.finish(token, lost)).await
                }
            })
            .await;
        off_thread(&worker, move |w| w.after(ran, requested)).await?;
    }
    Ok(())
}

/// [`hold`], awaiting [`LeaseContext::lost`] (which the async elector resolves when a
/// renewal fails or the deadline passes).
async fn hold_async_for(
    lease: &LeaseContext,
    hold_for: Duration,
    stop: &AtomicBool,
) -> Option<u64> {
    let until = Instant::now() + hold_for;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::SeqCst) {
            return None;
        }
        let lost = tokio::time::timeout(left.min(STOP_CHECK), lease.lost()).await;
        if lost.is_ok() || lease.is_lost() {
            return Some(lease_end(lease));
        }
    }
}

/// Runs `f` on the worker on tokio's blocking pool.
async fn off_thread<T: Send + 'static>(
    worker: &Arc<Mutex<Worker>>,
    f: impl FnOnce(&mut Worker) -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let worker = Arc::clone(worker);
    tokio::task::spawn_blocking(move || {
        f(&mut worker.lock().unwrap_or_else(PoisonError::into_inner))
    })
    .await
    .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_locks_follow_the_contended_ones_and_log_beside_the_worker() {
        assert_eq!(Hold::Blocking.lock(4), 4);
        assert_eq!(Hold::Async.lock(4), 5);
        let log = Path::new("/tmp/run/w3.0.log");
        assert_eq!(
            Hold::Blocking.log(log),
            Path::new("/tmp/run/w3.0.hold-blocking.log")
        );
        assert_eq!(
            Hold::Async.log(log),
            Path::new("/tmp/run/w3.0.hold-async.log")
        );
    }
}
