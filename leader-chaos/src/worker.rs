//! One worker process: contends in a loop for one of the run's locks (drawn at random
//! each time) and, while it holds it, writes to the resource fenced by its token, logging
//! every step; the first `--holders` workers run the hold loops ([`crate::hold`]) beside
//! it.
//!
//! The lease is short (`--lease-ms`, 1 s by default, 2 s for etcd) and
//! **auto-extended**: some sections deliberately work longer than the lease, and with the
//! watchdog renewing every third of it they keep the lock, so a lease is lost only to a
//! fault (a pause, a partition, a server restart), which is what the run is about. The work waits with
//! [`LeaseContext::wait_lost_timeout`], so a worker whose renewal fails or whose deadline
//! passes stops at once and logs `lost`, stamped with the moment the lease ended. It then
//! still makes its `end` write, as a stale holder that checked too early would: the fence
//! has to refuse it once a newer token has written.
//!
//! One section in `--rw-share` takes the read/write lock `chaos-rw-0` instead, as a reader
//! or a writer ([`crate::read_write`]): a reader reads the resource where a writer writes.

use std::error::Error;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use leader::{LeaderElectionOptions, LeaderElector, LeaderRunResult, LeaseContext};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cli::{Broken, WorkerArgs};
use crate::event::{Event, Phase, Role, WriteOutcome, now_us};
use crate::hold;
use crate::logfile::LogFile;
use crate::read_write;
use crate::resource::Resource;
use crate::servers;

/// The name of lock `index` of a run: `chaos-0`, `chaos-1`, …
pub fn lock_name(index: u32) -> String {
    format!("chaos-{index}")
}
/// How long a worker waits for the lock before it counts a skip and draws another: long
/// enough for a short section's release to reach it (that is a hand-over), short enough
/// that a long section does not keep it idle.
const WAIT_TIME: Duration = Duration::from_millis(150);

/// The node id of `worker`: the orchestrator maps a leader id back to a worker with
/// [`worker_of`].
pub fn node_id(worker: u32) -> String {
    format!("chaos-w{worker}")
}

/// The worker a leader id names.
pub fn worker_of(leader_id: &str) -> Option<u32> {
    leader_id.strip_prefix("chaos-w")?.parse().ok()
}

/// What a section needs: the log, the resource, the random source.
pub(crate) struct Worker {
    id: u32,
    /// One section in this many is long.
    long_every: u32,
    /// The lock of the current section.
    pub(crate) lock: u32,
    /// The side of a read/write lock the current section holds (`None`: an exclusive
    /// lock): a reader reads the resource where a writer writes.
    pub(crate) role: Option<Role>,
    lease: Duration,
    log: LogFile,
    resource: Resource,
    pub(crate) rng: StdRng,
    /// When the current section's start write returned.
    wrote_at: u64,
}

/// Runs the worker until its standard input closes (the orchestrator's stop signal): the
/// contending loop on this thread and, for workers `1..=--holders`, the hold loops
/// ([`crate::hold`]) beside it.
///
/// # Errors
///
/// When the log cannot be written, or the elector cannot be built.
pub fn run(args: &WorkerArgs) -> Result<(), Box<dyn Error>> {
    let mut log = LogFile::append(&args.log)?;
    log.record(Event::Hello {
        worker: args.worker,
        pid: std::process::id(),
    })?;
    let stop = stop_on_stdin_close();
    if args.broken == Some(Broken::NoLock) {
        return Worker::new(args, log, 0).without_lock(&stop);
    }
    let holds = hold::start(args, &stop)?;
    let mut worker = Worker::new(args, log, 0);
    let options = LeaderElectionOptions::new()
        .with_lease_time(args.lease)
        .with_wait_time(WAIT_TIME)
        .with_auto_extend(extends(args))
        .with_node_id(node_id(args.worker));
    let elector = LeaderElector::new(servers::connect(&args.lock_url)?, options)?;
    let shared = leader::ReadWriteLocks::new(&elector);
    let locks = args.locks.max(1);
    while !stop.load(Ordering::SeqCst) {
        if let Some(role) = read_write::draw(&mut worker, args.rw_share) {
            worker.lock = read_write::lock(locks, read_write::CONTENDED);
            read_write::section(&mut worker, &shared, read_write::lease_mode(args), role)?;
            continue;
        }
        worker.role = None;
        worker.lock = worker.rng.random_range(0..locks);
        let name = lock_name(worker.lock);
        let requested = now_us();
        let ran = elector.run_if_leader_with(&name, |lease: &LeaseContext| {
            let token = lease.fencing_token();
            worker.section(token, requested, Some(lease_left(lease)), |work| {
                lease.wait_lost_timeout(work).then(|| lease_end(lease))
            })
        });
        worker.after(ran, requested)?;
    }
    holds.join()
}

impl Worker {
    /// The worker of `args` writing to `log`, its random source drawn from the run's
    /// seed, the worker, its life and `stream` (one per loop of the process).
    pub(crate) fn new(args: &WorkerArgs, log: LogFile, stream: u64) -> Self {
        let seed = args.seed
            ^ (u64::from(args.worker) << 32)
            ^ u64::from(args.incarnation)
            ^ (stream << 56);
        Worker {
            id: args.worker,
            long_every: args.long_every.max(1),
            lock: 0,
            role: None,
            lease: args.lease,
            log,
            resource: Resource::new(&args.resource_url, args.broken != Some(Broken::NoFence)),
            rng: StdRng::seed_from_u64(seed),
            wrote_at: 0,
        }
    }

    /// Logs what a call of `run_if_leader_with` begun at `requested` answered (a skip, an
    /// error, after which it waits a moment), then pauses briefly before the next.
    ///
    /// # Errors
    ///
    /// When the log cannot be written, or the section's own error (writing its log).
    pub(crate) fn after(
        &mut self,
        ran: Result<LeaderRunResult<(), io::Error>, leader::Error>,
        requested: u64,
    ) -> io::Result<()> {
        match ran {
            Ok(outcome) if outcome.is_skipped() => {
                self.log.record(Event::Skip { requested })?;
            }
            Ok(outcome) => {
                outcome.into_result()?;
            }
            Err(err) => self.failed(&err, requested)?,
        }
        self.pause_between();
        Ok(())
    }

    /// Logs an acquire begun at `requested` that failed: a skip when the lock stayed held
    /// (a guard's `NotAcquired`), else an error, after which it waits a moment.
    ///
    /// # Errors
    ///
    /// When the log cannot be written.
    pub(crate) fn failed(&mut self, err: &leader::Error, requested: u64) -> io::Result<()> {
        if matches!(err, leader::Error::NotAcquired { .. }) {
            self.log.record(Event::Skip { requested })?;
        } else {
            let message = err.to_string();
            self.log.record(Event::Error { requested, message })?;
            thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// The broken `no-lock` mode: every iteration is a section, with a token counted here.
    fn without_lock(mut self, stop: &AtomicBool) -> Result<(), Box<dyn Error>> {
        let mut token = 0;
        while !stop.load(Ordering::SeqCst) {
            token += 1;
            let requested = now_us();
            self.section(token, requested, None, |work| {
                thread::sleep(work);
                None
            })?;
            self.pause_between();
        }
        Ok(())
    }

    /// One section: `start`, fenced start write (a reader's read), work (stopping early
    /// when `wait_lost` returns when the lease ended), fenced end write (read), `end`.
    pub(crate) fn section(
        &mut self,
        token: u64,
        requested: u64,
        left: Option<Duration>,
        wait_lost: impl FnOnce(Duration) -> Option<u64>,
    ) -> Result<(), io::Error> {
        let work = self.work_time();
        let lost = match self.begin(token, requested, left)? {
            Some(refused) => Some(refused),
            None => wait_lost(work),
        };
        self.finish(token, lost)
    }

    /// A section's beginning: its `start` line (with `left`, how much of the lease is
    /// left, read before the line's time, and the role) and its fenced start write, or a
    /// reader's read. Returns when the lease ended if the fence refused the write (a newer
    /// holder exists, so the lease is gone too), else `None`: the holder works.
    pub(crate) fn begin(
        &mut self,
        token: u64,
        requested: u64,
        left: Option<Duration>,
    ) -> Result<Option<u64>, io::Error> {
        self.log.record(Event::Start {
            lock: self.lock,
            token,
            requested,
            left: left.map(|left| u64::try_from(left.as_micros()).unwrap_or(u64::MAX)),
            role: self.role,
        })?;
        if self.role == Some(Role::Read) {
            self.wrote_at = self.read(token, Phase::Start)?;
            return Ok(None);
        }
        let (first, wrote_at) = self.write(token, Phase::Start)?;
        self.wrote_at = wrote_at;
        Ok(matches!(first, WriteOutcome::Rejected { .. }).then_some(wrote_at))
    }

    /// A section's end: `lost` if the lease ended (at `lost`), the fenced end write, `end`.
    ///
    /// The `lost` line is stamped with the moment the lease ended, not when the worker woke
    /// to see it (a worker descheduled or stopped past its deadline did nothing meanwhile),
    /// but never before its start write returned: the section covers every write it made
    /// believing it held the lock.
    pub(crate) fn finish(&mut self, token: u64, lost: Option<u64>) -> Result<(), io::Error> {
        if let Some(ended) = lost {
            self.log.record_at(
                ended.max(self.wrote_at).min(now_us()),
                Event::Lost { token },
            )?;
        }
        if self.role == Some(Role::Read) {
            self.read(token, Phase::End)?;
        } else {
            self.write(token, Phase::End)?;
        }
        self.log.record(Event::End { token })?;
        Ok(())
    }

    /// A reader's read of the resource, logged; when it returned.
    fn read(&mut self, token: u64, phase: Phase) -> Result<u64, io::Error> {
        let outcome = self.resource.read(self.lock);
        let line = self.log.record(Event::Read {
            token,
            phase,
            outcome,
        })?;
        Ok(line.at)
    }

    /// A resource write, logged; its outcome and when it returned.
    fn write(&mut self, token: u64, phase: Phase) -> Result<(WriteOutcome, u64), io::Error> {
        let outcome = self.resource.write(self.lock, self.id, token, phase);
        let line = self.log.record(Event::Write {
            token,
            phase,
            outcome,
        })?;
        Ok((outcome, line.at))
    }

    /// Mostly short work (2–30 ms: many acquisitions per run); one section in
    /// `--long-every` (50) works 1–1.5 leases, kept only by the lease's auto-extension.
    fn work_time(&mut self) -> Duration {
        if self.rng.random_ratio(1, self.long_every) {
            self.lease.mul_f64(self.rng.random_range(1.0..1.5))
        } else {
            Duration::from_millis(self.rng.random_range(2..30))
        }
    }

    pub(crate) fn pause_between(&mut self) {
        thread::sleep(Duration::from_millis(self.rng.random_range(0..10)));
    }
}

/// Whether the worker's leases are auto-extended: always, but in the broken `no-extend`
/// mode.
pub(crate) fn extends(args: &WorkerArgs) -> bool {
    args.broken != Some(Broken::NoExtend)
}

/// How much of the lease is left now.
pub(crate) fn lease_left(lease: &LeaseContext) -> Duration {
    lease.deadline().saturating_duration_since(Instant::now())
}

/// When the lease ended, wall-clock µs: its deadline if that has passed (the watchdog
/// may only have noticed later), else now (the watchdog found it gone early).
pub(crate) fn lease_end(lease: &LeaseContext) -> u64 {
    let late = Instant::now().saturating_duration_since(lease.deadline());
    now_us().saturating_sub(u64::try_from(late.as_micros()).unwrap_or(u64::MAX))
}

/// A flag set when standard input reaches its end (or fails): the orchestrator closes it
/// to ask the worker to stop after its current section.
fn stop_on_stdin_close() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    thread::spawn(move || {
        let mut sink = [0_u8; 64];
        let mut stdin = io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        flag.store(true, Ordering::SeqCst);
    });
    stop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_map_back_to_workers() {
        assert_eq!(worker_of(&node_id(7)), Some(7));
        assert_eq!(worker_of("host:123"), None);
    }
}
