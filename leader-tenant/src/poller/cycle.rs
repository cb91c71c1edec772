//! One cycle, shared by both pollers: read the tenants, try their locks in batches, run each
//! won tenant's job in lanes (at most the poller's concurrency at once), collect the report.
//! The pollers only supply how a batch is tried and where a lane runs: on a pool worker, or
//! as a future inside the cycle's own.

use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use leader_core::{Clock, Error, LeaderRunResult};
use tracing::Instrument;

use crate::error::TenantError;
use crate::poller::config::ShutdownMode;
use crate::poller::lanes::{Done, Lanes, News, Start};
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
    /// in between, so the job is not run, and the lock (`A`) is abandoned.
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
    /// The lock this instance took, if it took one.
    fn into_won(self) -> Option<A> {
        match self {
            Tried::Won(won) | Tried::Late(won) => Some(won),
            Tried::Held | Tried::Alone | Tried::Failed(_) => None,
        }
    }

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
/// `try_batch(tenants, cycle)` (one answer per tenant), and runs the job of each tenant won
/// or to be run on its own in lanes (see [`Lanes`]): `start_lane(lanes)` starts one, which
/// runs jobs until none waits. At most `concurrency` lanes run at once, so at most that many
/// jobs; each job is isolated (its error or panic is its own outcome).
///
/// A batch is tried only when every tenant of the one before has started, so won tenants
/// wait for a worker at most one batch deep. On shutdown no tenant starts: won ones not yet
/// started are reported as not started, and their locks go to `abandon`, as do the locks
/// won too late to run (see [`Tried::Late`]). `abandon` frees them without waiting for the
/// store: the cycle of a poller shutting down in [`ShutdownMode::Abandon`] returns at
/// once even while the store is slow or gone.
pub(crate) async fn drive<T, E, A, FB, FutB, L, LaneFut>(
    run: CycleRun<'_>,
    plan: Plan,
    try_batch: FB,
    start_lane: L,
    abandon: fn(Vec<A>),
) -> CycleReport<T, E>
where
    FB: FnMut(Vec<TenantId>, u64) -> FutB,
    FutB: Future<Output = Vec<Tried<A>>>,
    L: FnMut(Arc<Lanes<A, T, E>>) -> LaneFut,
    LaneFut: Future<Output = ()>,
    E: Debug,
{
    let span = tracing::info_span!("tenant_cycle", job = run.job_name, cycle = run.cycle);
    drive_in_span(run, plan, try_batch, start_lane, abandon)
        .instrument(span)
        .await
}

/// [`drive`]'s cycle, phase by phase: the ledger of the plan's tenants, their locks tried
/// in batches and each won (or lone) tenant's job run in the lanes, its line collected
/// (until shutdown, in [`ShutdownMode::Abandon`]), the report closed.
async fn drive_in_span<T, E, A, FB, FutB, L, LaneFut>(
    run: CycleRun<'_>,
    plan: Plan,
    try_batch: FB,
    start_lane: L,
    abandon: fn(Vec<A>),
) -> CycleReport<T, E>
where
    FB: FnMut(Vec<TenantId>, u64) -> FutB,
    FutB: Future<Output = Vec<Tried<A>>>,
    L: FnMut(Arc<Lanes<A, T, E>>) -> LaneFut,
    LaneFut: Future<Output = ()>,
    E: Debug,
{
    let clock = Instant::now();
    let lanes = Arc::new(Lanes::new(
        run.concurrency,
        clock,
        run.shutdown.cloned(),
        abandon,
    ));
    let (mut ledger, runnable) = Ledger::open(plan.entries, clock);
    {
        let work = run_in_batches(run, &lanes, runnable, &mut ledger, try_batch, start_lane);
        match (run.mode, run.shutdown) {
            (ShutdownMode::Abandon, Some(shutdown)) => {
                futures_lite::future::or(work, shutdown.triggered()).await;
            }
            _ => work.await,
        }
    }
    // Abandoned while every lane was busy, won tenants may still wait in the queue: their
    // locks are abandoned now, not when a lane ends its job and looks for the next one.
    lanes.drop_waiting();
    // What the lanes did since the cycle last looked (all of it, unless abandoned).
    ledger.absorb(lanes.news());
    ledger.close(run, plan.source_error)
}

/// What one cycle knows of each tenant of its plan, by the plan's index.
struct Ledger<T, E> {
    /// Each tenant's report line, once it has one.
    lines: Vec<Option<TenantReport<T, E>>>,
    /// Whether its job began.
    began: Vec<bool>,
    /// Its id as the source gave it.
    names: Vec<String>,
    /// When the cycle began.
    clock: Instant,
}

impl<T, E: Debug> Ledger<T, E> {
    /// The first phase: a line for each invalid tenant of `entries` (traced at once), and
    /// the valid ones with their index.
    fn open(
        entries: Vec<(String, Result<TenantId, TenantError>)>,
        clock: Instant,
    ) -> (Self, Vec<(usize, TenantId)>) {
        let mut ledger = Ledger {
            lines: Vec::with_capacity(entries.len()),
            began: vec![false; entries.len()],
            names: Vec::with_capacity(entries.len()),
            clock,
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

    /// How long since the cycle began.
    fn since(&self) -> Duration {
        self.clock.elapsed()
    }

    /// The fourth phase, for one tenant decided without a job: its line, traced.
    fn record(&mut self, done: Done<T, E>) {
        if let Some(line) = self.store(done) {
            line.trace();
        }
    }

    /// The fourth phase, from the lanes: the jobs that began, and the lines of those that
    /// ended (each traced by its lane).
    fn absorb(&mut self, news: News<T, E>) {
        for index in news.began {
            self.began[index] = true;
        }
        for done in news.done {
            self.store(done);
        }
    }

    /// Stores one tenant's line.
    fn store(
        &mut self,
        (index, outcome, started_after, elapsed): Done<T, E>,
    ) -> Option<&TenantReport<T, E>> {
        // Each tenant gets one line, so its name moves into it.
        let name = std::mem::take(self.names.get_mut(index)?);
        let line = self.lines.get_mut(index)?;
        debug_assert!(line.is_none(), "a tenant's second line");
        Some(line.insert(report(name, outcome, started_after, elapsed)))
    }

    /// The last phase: the cycle's report (traced), with every tenant that has no line yet
    /// reported as abandoned (its job began) or not started.
    fn close(self, run: CycleRun<'_>, source_error: Option<TenantError>) -> CycleReport<T, E> {
        let elapsed = self.since();
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
            elapsed,
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
/// then each tenant's job as its answer says, in the lanes.
///
/// A batch is tried only when every tenant of the one before has started, so won tenants
/// wait for a worker at most one batch deep. A tenant whose answer decides it at once
/// (held elsewhere, won too late, failed) gets its line there, without a job. Once shutdown
/// is triggered no tenant starts and no batch is tried: a won lock not started is dropped,
/// which releases it, and the tenant has no line (it is reported as not started).
async fn run_in_batches<T, E, A, FB, FutB, L, LaneFut>(
    run: CycleRun<'_>,
    lanes: &Arc<Lanes<A, T, E>>,
    runnable: Vec<(usize, TenantId)>,
    ledger: &mut Ledger<T, E>,
    mut try_batch: FB,
    mut start_lane: L,
) where
    FB: FnMut(Vec<TenantId>, u64) -> FutB,
    FutB: Future<Output = Vec<Tried<A>>>,
    L: FnMut(Arc<Lanes<A, T, E>>) -> LaneFut,
    LaneFut: Future<Output = ()>,
    E: Debug,
{
    let mut running = FuturesUnordered::new();
    let mut runnable = runnable.into_iter();
    let mut batch = Vec::with_capacity(run.acquire_batch.min(runnable.len()));
    let mut jobs = Vec::new();
    'batches: while !run.stopped() {
        batch.extend(runnable.by_ref().take(run.acquire_batch));
        if batch.is_empty() {
            break;
        }
        let ids = batch.iter().map(|(_, id)| id.clone()).collect();
        let tried = driving(try_batch(ids, run.cycle), &mut running).await;
        // The answers are in: a lock won after the cycle's locks are freed may follow
        // another instance's run of this cycle (see `Tried::Late`).
        let late = run.past_free_at();
        // The tenants the answers decide at once get their lines now, all at one time.
        let answered_after = ledger.since();
        let mut tried = tried.into_iter();
        let mut too_late = Vec::new();
        for (index, tenant) in batch.drain(..) {
            if run.stopped() {
                // Not started: the won locks of `jobs` and `tried` are abandoned.
                let won = jobs.drain(..).filter_map(|start: Start<A>| start.won);
                lanes.abandon(won.chain(too_late).chain(tried.filter_map(Tried::into_won)));
                break 'batches;
            }
            let tried = match tried.next().unwrap_or(Tried::Alone) {
                Tried::Won(won) if late => Tried::Late(won),
                other => other,
            };
            match decide(&tenant, tried, run.cycle) {
                Decided::Run(won) => jobs.push(Start { index, tenant, won }),
                Decided::Now(outcome, unused) => {
                    too_late.extend(unused);
                    let outcome = TenantOutcome::from_run(Ok(outcome));
                    ledger.record((index, outcome, answered_after, Duration::ZERO));
                }
            }
        }
        lanes.abandon(too_late);
        for _ in 0..lanes.queue(jobs.drain(..)) {
            running.push(start_lane(Arc::clone(lanes)));
        }
        all_started(lanes, &mut running).await;
        ledger.absorb(lanes.news());
    }
    while running.next().await.is_some() {}
}

/// Awaits `work` (a batch's round trip) while driving the `running` lanes: an async lane
/// moves only when the cycle polls it, so its job would stand still until the answer came.
async fn driving<W: Future, LaneFut: Future<Output = ()>>(
    work: W,
    running: &mut FuturesUnordered<LaneFut>,
) -> W::Output {
    let mut work = std::pin::pin!(work);
    loop {
        if running.is_empty() {
            return work.await;
        }
        let done = async { Some(work.as_mut().await) };
        let lane_ended = async {
            running.next().await;
            None
        };
        if let Some(output) = futures_lite::future::or(done, lane_ended).await {
            return output;
        }
    }
}

/// Waits until every job queued in `lanes` has started (or, at shutdown, was dropped),
/// driving the `running` lanes meanwhile.
async fn all_started<A, T, E: Debug, LaneFut: Future<Output = ()>>(
    lanes: &Lanes<A, T, E>,
    running: &mut FuturesUnordered<LaneFut>,
) {
    loop {
        let changed = lanes.listen();
        if lanes.all_started() || running.is_empty() {
            return;
        }
        let lane_ended = async {
            running.next().await;
        };
        futures_lite::future::or(lane_ended, changed).await;
    }
}

/// What one tenant's answer came to: its job to run (under the lock won for it, or
/// acquiring on its own), or its outcome at once (with the lock won too late to run it,
/// to abandon).
enum Decided<A, T, E> {
    Run(Option<A>),
    Now(Result<LeaderRunResult<T, E>, TenantError>, Option<A>),
}

/// The third phase, for one tenant: its job as the answer for its lock says (run under
/// the won lock, run on its own), or its outcome without one (skipped, failed).
fn decide<A, T, E>(tenant: &TenantId, tried: Tried<A>, cycle: u64) -> Decided<A, T, E> {
    match tried {
        Tried::Won(won) => Decided::Run(Some(won)),
        Tried::Alone => Decided::Run(None),
        Tried::Held => Decided::Now(Ok(LeaderRunResult::Skipped), None),
        Tried::Late(won) => {
            tracing::warn!(
                %tenant,
                cycle,
                "the tenant's lock was won after the cycle's locks are freed: its job is not run this cycle"
            );
            Decided::Now(Ok(LeaderRunResult::Skipped), Some(won))
        }
        Tried::Failed(error) => Decided::Now(Err(error), None),
    }
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
