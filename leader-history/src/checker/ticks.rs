//! Scheduled ticks: each tick of a job runs at most once, fleet-wide (definitions in the
//! crate README, "Tick ran twice").

use std::collections::BTreeMap;

use super::{Report, ViolationKind};
use crate::event::{Event, What};
use crate::history::{FaultSpan, Log};

/// Finds every tick that ran more than once: each `tick-ran` of a (lock, tick) after the
/// first is judged against each earlier one. A rerun (`rerun`: at-least-once delivery of
/// an unfinished tick) is allowed; so is a run after a data-losing fault that ended after
/// the earlier run's claim was sent (or, without its time, the earlier run began) and
/// began before the later run did: the store may have lost the claim, and the README of
/// `leader-schedule` says such a tick may run again. Nothing else explains one.
pub(super) fn ticks(logs: &[Log], faults: &[FaultSpan], report: &mut Report) {
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
                .find(|earlier| !claim_lost_between(earlier, later, faults))
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

/// Whether a data-losing fault may have lost `earlier`'s claim before `later` began.
fn claim_lost_between(earlier: &Event, later: &Event, faults: &[FaultSpan]) -> bool {
    let claimed = match earlier.what {
        What::TickRan { claimed, .. } => claimed.unwrap_or(earlier.at).min(earlier.at),
        _ => earlier.at,
    };
    faults
        .iter()
        .any(|f| f.kind.loses_data() && f.end >= claimed && f.start <= later.at)
}
