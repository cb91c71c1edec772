//! One cycle, shared by both pollers: read the tenants, run each one's job with bounded
//! concurrency, collect the report. The pollers only supply how one tenant is run.

use std::collections::HashSet;
use std::fmt::Debug;
use std::future::{Future, ready};
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant, SystemTime};

use futures_util::{FutureExt, StreamExt, stream};
use leader_core::LeaderRunResult;
use tracing::Instrument;

use crate::error::TenantError;
use crate::poller::config::ShutdownMode;
use crate::report::{CycleReport, TenantOutcome, TenantReport};
use crate::shutdown::Shutdown;
use crate::source::TenantSource;
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
                let mut seen = HashSet::with_capacity(ids.len());
                let entries = ids
                    .into_iter()
                    .filter(|id| seen.insert(id.clone()))
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

/// How one cycle runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CycleRun<'a> {
    pub(crate) started_at: SystemTime,
    pub(crate) cycle: u64,
    pub(crate) job_name: &'a str,
    pub(crate) concurrency: usize,
    pub(crate) mode: ShutdownMode,
    pub(crate) shutdown: Option<&'a Shutdown>,
}

impl CycleRun<'_> {
    fn stopped(&self) -> bool {
        self.shutdown.is_some_and(Shutdown::is_triggered)
    }
}

/// Runs `run_one(tenant, cycle)` for every valid tenant of `plan`, at most `concurrency` at a time, each
/// isolated (its error or panic is its own outcome); stops starting tenants on shutdown.
pub(crate) async fn drive<T, E, F, Fut>(
    run: CycleRun<'_>,
    plan: Plan,
    run_one: F,
) -> CycleReport<T, E>
where
    F: FnMut(TenantId, u64) -> Fut,
    Fut: Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
    E: Debug,
{
    let span = tracing::info_span!("tenant_cycle", job = run.job_name, cycle = run.cycle);
    drive_in_span(run, plan, run_one).instrument(span).await
}

async fn drive_in_span<T, E, F, Fut>(
    run: CycleRun<'_>,
    plan: Plan,
    mut run_one: F,
) -> CycleReport<T, E>
where
    F: FnMut(TenantId, u64) -> Fut,
    Fut: Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
    E: Debug,
{
    let clock = Instant::now();
    let mut slots: Vec<Option<TenantReport<T, E>>> = Vec::with_capacity(plan.entries.len());
    let mut began = vec![false; plan.entries.len()];
    let mut names = Vec::with_capacity(plan.entries.len());
    let mut runnable = Vec::with_capacity(plan.entries.len());
    for (index, (name, id)) in plan.entries.into_iter().enumerate() {
        slots.push(match id {
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
        names.push(name);
    }

    {
        let began = &mut began;
        let tasks = stream::iter(runnable)
            .take_while(|_| ready(!run.stopped()))
            .map(|(index, id)| {
                began[index] = true;
                let job = run_one(id, run.cycle);
                async move {
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
            })
            .buffer_unordered(run.concurrency);
        let collect = async {
            let mut tasks = std::pin::pin!(tasks);
            while let Some((index, outcome, started_after, elapsed)) = tasks.next().await {
                let line = report(names[index].clone(), outcome, started_after, elapsed);
                line.trace();
                slots[index] = Some(line);
            }
        };
        match (run.mode, run.shutdown) {
            (ShutdownMode::Abandon, Some(shutdown)) => {
                futures_lite::future::or(collect, shutdown.triggered()).await;
            }
            _ => collect.await,
        }
    }

    let tenants: Vec<_> = slots
        .into_iter()
        .zip(began)
        .zip(names)
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
        source_error: plan.source_error,
        interrupted,
    };
    report.trace();
    report
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
