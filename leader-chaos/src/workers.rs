//! The worker processes: copies of this binary, each started with the hidden worker
//! subcommand, killed and started again by faults, stopped at the end of the run.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::cli::WorkerArgs;
use crate::event::{Event, now_us};
use crate::journal::Journal;

/// One life of a worker process, for the checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Life {
    /// The worker id.
    pub worker: u32,
    /// Its log file.
    pub log: PathBuf,
    /// When it was known gone; `None` while it runs.
    pub died_at: Option<u64>,
}

/// A worker's current process.
#[derive(Debug)]
struct Running {
    child: Child,
    /// Closed to ask the worker to stop.
    stdin: Option<ChildStdin>,
    /// Index into `lives`.
    life: usize,
}

/// The worker processes of a run.
#[derive(Debug)]
pub struct Workers {
    exe: PathBuf,
    dir: PathBuf,
    template: WorkerArgs,
    running: Vec<Option<Running>>,
    incarnations: Vec<u32>,
    lives: Vec<Life>,
}

impl Workers {
    /// Starts `count` workers (ids 1..=count) from `template`, logging into `dir`.
    ///
    /// # Errors
    ///
    /// When this binary cannot be found or a process cannot start.
    pub fn start(
        count: u32,
        template: WorkerArgs,
        dir: &Path,
        journal: &mut Journal,
    ) -> io::Result<Self> {
        let mut workers = Workers {
            exe: std::env::current_exe()?,
            dir: dir.to_owned(),
            template,
            running: (0..count).map(|_| None).collect(),
            incarnations: vec![0; usize::try_from(count).unwrap_or(0)],
            lives: Vec::new(),
        };
        for worker in 1..=count {
            workers.spawn(worker, journal)?;
        }
        Ok(workers)
    }

    /// Every life so far.
    pub fn lives(&self) -> &[Life] {
        &self.lives
    }

    /// How many workers.
    pub fn count(&self) -> u32 {
        u32::try_from(self.running.len()).unwrap_or(u32::MAX)
    }

    /// The process id of `worker`, while it runs.
    pub fn pid(&self, worker: u32) -> Option<u32> {
        self.slot(worker)?.as_ref().map(|r| r.child.id())
    }

    /// Kills `worker` with SIGKILL and waits for it; returns when it was gone.
    pub fn kill(&mut self, worker: u32, journal: &mut Journal) -> u64 {
        let Some(running) = self.slot_mut(worker).and_then(Option::take) else {
            return now_us();
        };
        let mut child = running.child;
        let _ = child.kill();
        let _ = child.wait();
        self.gone(worker, running.life, journal)
    }

    /// Starts a new life of `worker` (which must not be running).
    ///
    /// # Errors
    ///
    /// When the process cannot start.
    pub fn spawn(&mut self, worker: u32, journal: &mut Journal) -> io::Result<()> {
        let index = usize::try_from(worker.saturating_sub(1)).unwrap_or(usize::MAX);
        let incarnation = self.incarnations.get(index).copied().unwrap_or(0);
        let log = self.dir.join(format!("w{worker}.{incarnation}.log"));
        let args = WorkerArgs {
            worker,
            incarnation,
            log: log.clone(),
            ..self.template.clone()
        };
        let stderr = File::create(self.dir.join(format!("w{worker}.{incarnation}.stderr")))?;
        let mut child = Command::new(&self.exe)
            .args(args.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()?;
        let stdin = child.stdin.take();
        journal.record(Event::Spawn {
            worker,
            incarnation,
            pid: child.id(),
        })?;
        self.lives.push(Life {
            worker,
            log,
            died_at: None,
        });
        if let Some(next) = self.incarnations.get_mut(index) {
            *next += 1;
        }
        let life = self.lives.len() - 1;
        if let Some(slot) = self.slot_mut(worker) {
            *slot = Some(Running { child, stdin, life });
        }
        Ok(())
    }

    /// Records workers that exited on their own and starts them again.
    ///
    /// # Errors
    ///
    /// When a process cannot start.
    pub fn reap(&mut self, journal: &mut Journal) -> io::Result<()> {
        for worker in 1..=self.count() {
            let exited = self.slot_mut(worker).is_some_and(|slot| {
                slot.as_mut()
                    .is_some_and(|r| !matches!(r.child.try_wait(), Ok(None)))
            });
            if exited {
                if let Some(running) = self.slot_mut(worker).and_then(Option::take) {
                    self.gone(worker, running.life, journal);
                }
                self.spawn(worker, journal)?;
            }
        }
        Ok(())
    }

    /// Asks every worker to stop (closes its standard input), waits up to `grace` for them
    /// to finish their section, then kills the rest.
    pub fn stop_all(&mut self, grace: Duration, journal: &mut Journal) {
        for running in self.running.iter_mut().flatten() {
            drop(running.stdin.take());
        }
        let give_up = Instant::now() + grace;
        for worker in 1..=self.count() {
            let Some(mut running) = self.slot_mut(worker).and_then(Option::take) else {
                continue;
            };
            while matches!(running.child.try_wait(), Ok(None)) && Instant::now() < give_up {
                thread::sleep(Duration::from_millis(20));
            }
            let _ = running.child.kill();
            let _ = running.child.wait();
            self.gone(worker, running.life, journal);
        }
    }

    fn gone(&mut self, worker: u32, life: usize, journal: &mut Journal) -> u64 {
        let at = now_us();
        let incarnation = self
            .lives
            .iter()
            .take(life)
            .filter(|l| l.worker == worker)
            .count();
        if let Some(life) = self.lives.get_mut(life) {
            life.died_at = Some(at);
        }
        let incarnation = u32::try_from(incarnation).unwrap_or(u32::MAX);
        let _ = journal.record_at(
            at,
            Event::Exit {
                worker,
                incarnation,
            },
        );
        at
    }

    fn slot(&self, worker: u32) -> Option<&Option<Running>> {
        self.running
            .get(usize::try_from(worker.checked_sub(1)?).ok()?)
    }

    fn slot_mut(&mut self, worker: u32) -> Option<&mut Option<Running>> {
        self.running
            .get_mut(usize::try_from(worker.checked_sub(1)?).ok()?)
    }
}

impl Drop for Workers {
    /// A run that failed half-way leaves no worker behind.
    fn drop(&mut self) {
        for running in self.running.iter_mut().filter_map(Option::take) {
            let mut child = running.child;
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `signal` (`STOP`, `CONT`) to `pid` with `kill(1)`.
///
/// # Errors
///
/// When `kill` cannot run or fails.
pub fn signal(pid: u32, signal: &str) -> io::Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("kill -{signal} {pid}: {status}")))
    }
}
