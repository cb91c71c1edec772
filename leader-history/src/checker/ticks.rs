//! Scheduled ticks: each tick of a job runs at most once, fleet-wide (definitions in the
//! crate README, "Tick ran twice").

use std::collections::BTreeMap;

use super::{Report, ViolationKind};
use crate::event::{Event, What};
use crate::history::{FaultSpan, Log};

/// How long after a data-losing fault, in leases, a write made with a record version read
/// before it may still land: a store that lost its records numbers their versions from 1
/// again, so a firing under way across the loss (its run, its outcome's write, a pause)
/// can write its outcome over a newer claim that has the version it expects.
pub const STALE_RECORD_WRITE_LEASES: u64 = 10;

/// Finds every tick that ran more than once: each `tick-ran` of a (lock, tick) after the
/// first is judged against each earlier one. A rerun (`rerun`: at-least-once delivery of
/// an unfinished tick) is allowed; so is a run after a data-losing fault that began before
/// the later run did and ended after the earlier run's claim was sent (or, without its
/// time, the earlier run began) — the store may have lost the claim — or at most
/// [`STALE_RECORD_WRITE_LEASES`] leases before it — a stale write may have overwritten
/// it. The README of `leader-schedule` says such a tick may run again. Nothing else
/// explains one.
pub(super) fn ticks(logs: &[Log], faults: &[FaultSpan], lease_us: u64, report: &mut Report) {
    let mut runs: BTreeMap<(u32, u64), Vec<&Event>> = BTreeMap::new();
    for event in logs.iter().flat_map(|log| &log.events) {
        if let What::TickRan { lock, tick, .. } = event.what {
            runs.entry((lock, tick)).or_default().push(event);
        }
    }
    for ((lock, tick), mut ran) in runs {
        report.ticks_run += 1;
        ran.sort_by_key(|e| e.at);
        for (i, later) in ran.iter().enumerate().skip(1) {
            if matches!(later.what, What::TickRan { rerun: true, .. }) {
                continue;
            }
            let Some(earlier) = ran[..i]
                .iter()
                .find(|earlier| !claim_lost_between(earlier, later, faults, lease_us))
            else {
                report.ticks_rerun_after_data_loss += 1;
                continue;
            };
            report.ticks_run_twice += 1;
            report.violation(
                ViolationKind::TickRanTwice,
                format!("tick ran twice: tick {tick} ms of lock {lock}: {earlier:?} and {later:?}"),
                vec![(*earlier).clone(), (*later).clone()],
            );
        }
    }
}

/// Whether a data-losing fault may have lost `earlier`'s claim (or let a stale write
/// overwrite it) before `later` began.
fn claim_lost_between(earlier: &Event, later: &Event, faults: &[FaultSpan], lease_us: u64) -> bool {
    let stale = STALE_RECORD_WRITE_LEASES.saturating_mul(lease_us);
    let claimed = match earlier.what {
        What::TickRan { claimed, .. } => claimed.unwrap_or(earlier.at).min(earlier.at),
        _ => earlier.at,
    };
    faults.iter().any(|f| {
        f.kind.loses_data() && f.end.saturating_add(stale) >= claimed && f.start <= later.at
    })
}

#[cfg(test)]
mod tests;
