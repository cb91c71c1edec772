//! The span of each firing and the `leader_schedule_*` metrics.

use std::time::{Duration, SystemTime};

use crate::firing::FiringReport;
use crate::record::{RunState, to_millis};

/// The span around one firing of a job's tick: `leader.schedule.tick` with the job, the
/// tick (ms since the epoch) and, once over, what it did.
pub(crate) fn firing_span(job: &str, tick: SystemTime) -> tracing::Span {
    tracing::info_span!(
        "leader.schedule.tick",
        job,
        tick_ms = to_millis(tick),
        outcome = tracing::field::Empty,
        runs = tracing::field::Empty,
        missed = tracing::field::Empty,
    )
}

/// What a firing ended as, for the span and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending<'a> {
    /// The firing ran what its plan said (maybe nothing).
    Done(&'a FiringReport),
    /// The job's lock was held elsewhere for the whole wait: the job is running elsewhere.
    Busy,
    /// The store failed; nothing ran that was not claimed.
    Failed,
}

/// Records `ending` on the current span and in the metrics.
pub(crate) fn record(job: &str, span: &tracing::Span, ending: Ending<'_>) {
    match ending {
        Ending::Done(report) if report.busy => record(job, span, Ending::Busy),
        Ending::Done(report) => {
            let outcome = if report.claimed_elsewhere {
                "claimed_elsewhere"
            } else if report.runs.is_empty() {
                "missed"
            } else {
                "ran"
            };
            span.record("outcome", outcome);
            span.record("runs", report.runs.len());
            span.record("missed", report.missed);
            if report.unstarted > 0 {
                tracing::warn!(
                    job,
                    unstarted = report.unstarted,
                    "runs of this firing did not start: the job's lease was lost or the scheduler is shutting down; ticks not claimed are left to the next holder"
                );
            }
            #[cfg(feature = "metrics")]
            {
                let job = job.to_owned();
                if report.claimed_elsewhere {
                    metrics::counter!("leader_schedule_skipped_total", "job" => job.clone(), "reason" => "claimed").increment(1);
                }
                if report.missed > 0 {
                    metrics::counter!("leader_schedule_missed_total", "job" => job.clone())
                        .increment(report.missed);
                }
                for (_, kind, state) in &report.runs {
                    metrics::counter!(
                        "leader_schedule_runs_total",
                        "job" => job.clone(),
                        "kind" => kind.as_str(),
                        "outcome" => state.as_str()
                    )
                    .increment(1);
                }
            }
        }
        Ending::Busy => {
            span.record("outcome", "busy");
            #[cfg(feature = "metrics")]
            metrics::counter!("leader_schedule_skipped_total", "job" => job.to_owned(), "reason" => "busy").increment(1);
        }
        Ending::Failed => {
            span.record("outcome", "error");
            #[cfg(feature = "metrics")]
            metrics::counter!("leader_schedule_errors_total", "job" => job.to_owned()).increment(1);
        }
    }
    let _ = job;
}

/// Records one run's duration and its lateness (start minus tick).
pub(crate) fn run_timing(job: &str, state: RunState, lateness: Duration, took: Duration) {
    tracing::debug!(
        job,
        outcome = state.as_str(),
        lateness_ms = lateness.as_millis() as u64,
        took_ms = took.as_millis() as u64,
        "scheduled run ended"
    );
    #[cfg(feature = "metrics")]
    {
        metrics::histogram!("leader_schedule_run_seconds", "job" => job.to_owned())
            .record(took.as_secs_f64());
        metrics::histogram!("leader_schedule_lateness_seconds", "job" => job.to_owned())
            .record(lateness.as_secs_f64());
    }
}
