//! One cycle, shared by both pollers: read the tenants, try their locks in batches, run each
//! won tenant's job with bounded concurrency, collect the report. The pollers only supply
//! how a batch is tried and how one tenant is run.

use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant, SystemTime};

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use leader_core::{Clock, Error, LeaderRunResult};
use tracing::Instrument;

use crate::error::TenantError;
use crate::poller::config::ShutdownMode;
use crate::report::{CycleReport, TenantOutcome, TenantReport};
use crate::source::TenantSource;
use leader_core::Shutdown;
use leader_core::TenantId;

/// The tenants of one cycle, in the source's order, each validated.
#[derive(Debug)]
pub(crate) struct Plan {
    entries: Vec<(String, Result<TenantId, TenantError>)>,
    source_error: Option<TenantError>,
}

impl Plan {
    /// Reads `source` once; repeated ids are kept once.
    pub(crate) fn read(source: &impl TenantSource) -> Self {
        match source.tenants() {
            Ok(ids) => {
                // Marked by borrowing, so no id is copied to find the repeated ones.
                let mut seen = HashSet::with_capacity(ids.len());
                let first: Vec<bool> = ids.iter().map(|id| seen.insert(id.as_str())).collect();
                drop(seen);
                let entries = ids
                    .into_iter()
                    .zip(first)
                    .filter_map(|(id, first)| first.then_some(id))
                    .map(|id| {
                        let valid = TenantId::new(&id).map_err(TenantError::from);
                        (id, valid)
                    })
                    .collect();
                Plan {
                    entries,
                    source_error: None,
                }
            }
            Err(err) => Plan {
                entries: Vec::new(),
                source_error: Some(TenantError::Source(err)),
            },
        }
    }
}

/// What trying one tenant's lock in a batch came to.
#[derive(Debug)]
pub(crate) enum Tried<A> {
    /// This instance took the lock (`A`): run the job under it.
    Won(A),
    /// Another instance holds it: the tenant is skipped.
    Held,
    /// The batch could not try it: the tenant is run on its own (acquire, then job).
    Alone,
    /// Trying its lock failed.
    Failed(TenantError),
    /// This instance took the lock, but its answer came after the cycle's locks are freed
    /// (a slow store): another instance may have run this cycle's job and freed the lock
    /// in between, so the job is not run, and the lock (`A`, dropped) is released.
    Late(A),
}

impl<A> From<Result<Option<A>, Error>> for Tried<A> {
    fn from(answer: Result<Option<A>, Error>) -> Self {
        match answer {
            Ok(Some(won)) => Tried::Won(won),
            Ok(None) => Tried::Held,
            Err(error) => Tried::Failed(error.into()),
        }
    }
}

impl<A> Tried<A> {
    /// Every tenant of a batch that could not be tried together, run on its own.
    pub(crate) fn each_alone(tenants: &[TenantId], error: &Error) -> Vec<Self> {
        tracing::warn!(%error, tenants = tenants.len(), "a batch of tenants could not be tried together; trying each on its own");
        tenants.iter().map(|_| Tried::Alone).collect()
    }
}

/// How one cycle runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CycleRun<'a> {
    pub(crate) started_at: SystemTime,
    pub(crate) cycle: u64,
    /// When the cycle's locks are freed (`None` with a fixed minimum lease): a lock won
    /// after then does not run its job.
    pub(crate) free_at: Option<SystemTime>,
    /// The clock `free_at` is on.
    pub(crate) clock: &'a dyn Clock,
    pub(crate) job_name: &'a str,
    pub(crate) concurrency: usize,
    pub(crate) acquire_batch: usize,
    pub(crate) mode: ShutdownMode,
    pub(crate) shutdown: Option<&'a Shutdown>,
}

impl CycleRun<'_> {
    fn stopped(&self) -> bool {
        self.shutdown.is_some_and(Shutdown::is_triggered)
    }

    /// Whether a lock won now came too late to run this cycle's job.
    fn past_free_at(&self) -> bool {
        self.free_at
            .is_some_and(|free_at| self.clock.now() >= free_at)
    }
}

/// Tries the locks of the valid tenants of `plan`, `run.acquire_batch` at a time, with
/// `try_batch(tenants, cycle)` (one answer per tenant), and runs `run_one(tenant, won,
/// cycle)` for each tenant won (`Some`) or to be run on its own (`None`), at most
/// `concurrency` at a time, each isolated (its error or panic is its own outcome).
///
/// A batch is tried only when every tenant of the one before has started, so won tenants
/// wait for a worker at most one batch deep. On shutdown no tenant starts: won ones not yet
/// started are dropped (which releases them) and reported as not started.
pub(crate) async fn drive<T, E, A, FB, FutB, F, Fut>(
    run: CycleRun<'_>,
    plan: Plan,
    try_batch: FB,
    run_one: F,
) -> CycleReport<T, E>
where
    FB: FnMut(Vec<TenantId>, u64) -> FutB,
    FutB: Future<Output = Vec<Tried<A>>>,
    F: FnMut(TenantId, Option<A>, u64) -> Fut,
    Fut: Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
    E: Debug,
{
    let span = tracing::info_span!("tenant_cycle", job = run.job_name, cycle = run.cycle);
    drive_in_span(run, plan, try_batch, run_one)
        .instrument(span)
        .await
}

/// [`drive`]'s cycle, phase by phase: the ledger of the plan's tenants, their locks tried
/// in batches and each won (or lone) tenant's job started and timed, its line collected
/// (until shutdown, in [`ShutdownMode::Abandon`]), the report closed.
async fn drive_in_span<T, E, A, FB, FutB, F, Fut>(
    run: CycleRun<'_>,
    plan: Plan,
    try_batch: FB,
    run_one: F,
) -> CycleReport<T, E>
where
    FB: FnMut(Vec<TenantId>, u64) -> FutB,
    FutB: Future<Output = Vec<Tried<A>>>,
    F: FnMut(TenantId, Option<A>, u64) -> Fut,
    Fut: Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
    E: Debug,
{
    let clock = Instant::now();
    let (mut ledger, runnable) = Ledger::open(plan.entries);
    {
        let work = run_in_batches(run, clock, runnable, &mut ledger, try_batch, run_one);
        match (run.mode, run.shutdown) {
            (ShutdownMode::Abandon, Some(shutdown)) => {
                futures_lite::future::or(work, shutdown.triggered()).await;
            }
            _ => work.await,
        }
    }
    ledger.close(run, clock, plan.source_error)
}

/// What one cycle knows of each tenant of its plan, by the plan's index.
struct Ledger<T, E> {
    /// Each tenant's report line, once it has one.
    lines: Vec<Option<TenantReport<T, E>>>,
    /// Whether its job began.
    began: Vec<bool>,
    /// Its id as the source gave it.
    names: Vec<String>,
}

/// A job that ran: its tenant's index, its outcome, when it started (after the cycle
/// began) and how long it took.
type Done<T, E> = (usize, TenantOutcome<T, E>, Duration, Duration);

impl<T, E: Debug> Ledger<T, E> {
    /// The first phase: a line for each invalid tenant of `entries` (traced at once), and
    /// the valid ones with their index.
    fn open(
        entries: Vec<(String, Result<TenantId, TenantError>)>,
    ) -> (Self, Vec<(usize, TenantId)>) {
        let mut ledger = Ledger {
            lines: Vec::with_capacity(entries.len()),
            began: vec![false; entries.len()],
            names: Vec::with_capacity(entries.len()),
        };
        let mut runnable = Vec::with_capacity(entries.len());
        for (index, (name, id)) in entries.into_iter().enumerate() {
            ledger.lines.push(match id {
                Ok(id) => {
                    runnable.push((index, id));
                    None
                }
                Err(error) => {
                    let line = report(
                        name.clone(),
                        TenantOutcome::Error(error),
                        Duration::ZERO,
                        Duration::ZERO,
                    );
                    line.trace();
                    Some(line)
                }
            });
            ledger.names.push(name);
        }
        (ledger, runnable)
    }

    /// The fourth phase, for one tenant: its line (traced), from the job that ran.
    fn record(&mut self, (index, outcome, started_after, elapsed): Done<T, E>) {
        // Each tenant gets one line, so its name moves into it.
        let name = std::mem::take(&mut self.names[index]);
        let line = report(name, outcome, started_after, elapsed);
        line.trace();
        self.lines[index] = Some(line);
    }

    /// The last phase: the cycle's report (traced), with every tenant that has no line yet
    /// reported as abandoned (its job began) or not started.
    fn close(
        self,
        run: CycleRun<'_>,
        clock: Instant,
        source_error: Option<TenantError>,
    ) -> CycleReport<T, E> {
        let tenants: Vec<_> = self
            .lines
            .into_iter()
            .zip(self.began)
            .zip(self.names)
            .map(|((slot, began), name)| {
                slot.unwrap_or_else(|| {
                    let outcome = if began {
                        TenantOutcome::Abandoned
                    } else {
                        TenantOutcome::NotStarted
                    };
                    report(name, outcome, Duration::ZERO, Duration::ZERO)
                })
            })
            .collect();
        let interrupted = tenants.iter().any(|t| {
            matches!(
                t.outcome,
                TenantOutcome::Abandoned | TenantOutcome::NotStarted
            )
        });
        let report = CycleReport {
            cycle: run.cycle,
            started_at: run.started_at,
            elapsed: clock.elapsed(),
            tenants,
            source_error,
            interrupted,
        };
        report.trace();
        report
    }
}

/// The second and third phases: the `runnable` tenants' locks tried `run.acquire_batch`
/// at a time with `try_batch` (one answer per tenant; `Alone` for any it did not give),
/// then each tenant's job as its answer says, at most `run.concurrency` jobs at once.
///
/// A batch is tried only when every tenant of the one before has started, so won tenants
/// wait for a worker at most one batch deep. A tenant whose answer decides it at once
/// (held elsewhere, won too late, failed) gets its line there, without a job. Once shutdown
/// is triggered no tenant starts and no batch is tried: a won lock not started is dropped,
/// which releases it, and the tenant has no line (it is reported as not started).
async fn run_in_batches<T, E, A, FB, FutB, F, Fut>(
    run: CycleRun<'_>,
    clock: Instant,
    runnable: Vec<(usize, TenantId)>,
    ledger: &mut Ledger<T, E>,
    mut try_batch: FB,
    mut run_one: F,
) where
    FB: FnMut(Vec<TenantId>, u64) -> FutB,
    FutB: Future<Output = Vec<Tried<A>>>,
    F: FnMut(TenantId, Option<A>, u64) -> Fut,
    Fut: Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
    E: Debug,
{
    let mut running = FuturesUnordered::new();
    let mut runnable = runnable.into_iter();
    let mut batch = Vec::with_capacity(run.acquire_batch.min(runnable.len()));
    'batches: while !run.stopped() {
        batch.extend(runnable.by_ref().take(run.acquire_batch));
        if batch.is_empty() {
            break;
        }
        let tried = try_batch(batch.iter().map(|(_, id)| id.clone()).collect(), run.cycle).await;
        // The answers are in: a lock won after the cycle's locks are freed may follow
        // another instance's run of this cycle (see `Tried::Late`).
        let late = run.past_free_at();
        let mut tried = tried.into_iter();
        for (index, id) in batch.drain(..) {
            let tried = match tried.next().unwrap_or(Tried::Alone) {
                Tried::Won(won) if late => Tried::Late(won),
                other => other,
            };
            let job = match job_for(id, tried, run.cycle, &mut run_one) {
                Job::Now(outcome) => {
                    if run.stopped() {
                        break 'batches;
                    }
                    let at = clock.elapsed();
                    ledger.record((
                        index,
                        TenantOutcome::from_run(Ok(outcome)),
                        at,
                        Duration::ZERO,
                    ));
                    continue;
                }
                Job::Run(job) => job,
            };
            while running.len() >= run.concurrency {
                match running.next().await {
                    Some(done) => ledger.record(done),
                    None => break,
                }
            }
            if run.stopped() {
                // Not started: a won lock is released as `job` drops it here.
                break 'batches;
            }
            ledger.began[index] = true;
            running.push(timed(index, clock, job));
        }
    }
    while let Some(done) = running.next().await {
        ledger.record(done);
    }
}

/// What one tenant's answer came to: a job to run, or its outcome at once.
enum Job<Fut, T, E> {
    Run(Fut),
    Now(Result<LeaderRunResult<T, E>, TenantError>),
}

/// The third phase, for one tenant: its job as the answer for its lock says (run under
/// the won lock, run on its own), or its outcome without one (skipped, failed).
fn job_for<T, E, A, F, Fut>(
    id: TenantId,
    tried: Tried<A>,
    cycle: u64,
    run_one: &mut F,
) -> Job<Fut, T, E>
where
    F: FnMut(TenantId, Option<A>, u64) -> Fut,
    Fut: Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
{
    match tried {
        Tried::Won(won) => Job::Run(run_one(id, Some(won), cycle)),
        Tried::Alone => Job::Run(run_one(id, None, cycle)),
        Tried::Held => Job::Now(Ok(LeaderRunResult::Skipped)),
        Tried::Late(won) => {
            tracing::warn!(
                tenant = %id,
                cycle,
                "the tenant's lock was won after the cycle's locks are freed: its job is not run this cycle"
            );
            drop(won);
            Job::Now(Ok(LeaderRunResult::Skipped))
        }
        Tried::Failed(error) => Job::Now(Err(error)),
    }
}

/// Runs `job` isolated (a panic is its outcome) and times it.
async fn timed<T, E>(
    index: usize,
    clock: Instant,
    job: impl Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
) -> Done<T, E> {
    let started_after = clock.elapsed();
    let start = Instant::now();
    let outcome = AssertUnwindSafe(job).catch_unwind().await;
    (
        index,
        TenantOutcome::from_run(outcome),
        started_after,
        start.elapsed(),
    )
}

fn report<T, E>(
    tenant: String,
    outcome: TenantOutcome<T, E>,
    started_after: Duration,
    elapsed: Duration,
) -> TenantReport<T, E> {
    TenantReport {
        tenant,
        outcome,
        started_after,
        elapsed,
    }
}
