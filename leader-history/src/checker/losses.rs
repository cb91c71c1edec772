//! Leases lost: the faults that explain a loss, and the losses none explains (definitions
//! in the crate README, "Unexplained loss").

use super::{Report, Section, ViolationKind};
use crate::event::FaultKind;
use crate::history::FaultSpan;

/// How long after a fault is over it may still end a lease, beyond the lease itself (see
/// "Unexplained loss" in the crate README): a margin for a worker slow to run on a loaded
/// machine. Every loss a
/// fault caused in the runs measured came within a third of a lease of its end (the
/// next renewal), 330 ms at the most.
pub const LOSS_AFTERMATH_US: u64 = 500_000;

/// The name a late start is counted under in `losses_explained_by`.
pub const LATE_START: &str = "late-start";

/// Whether `lost` is a late start's loss: its action began with less than two thirds of
/// the lease left (its acquiring call was answered slowly: a worker's first calls open
/// its connections, which on a loaded machine took 0.8 s once), so its first renewal,
/// due at once, had less time to be answered than any renewal of a lease taken in time;
/// and the lease ended within a third of a lease after that time ran out (the `lost`
/// line is never stamped before the start write returned, which may come later).
fn late_start(lost: &Section, lease_us: u64) -> bool {
    lost.left.is_some_and(|left| {
        left.saturating_mul(3) < lease_us.saturating_mul(2)
            && lost.end <= lost.start.saturating_add(left).saturating_add(lease_us / 3)
    })
}

/// What decides whether a fault can end a lease.
#[derive(Debug, Clone, Copy)]
pub struct LossRules {
    /// The workers' lease, in µs.
    pub lease_us: u64,
    /// Whether a paused worker can keep every other worker from its renewals (SQLite: a
    /// worker stopped inside a write transaction keeps the database file locked).
    pub paused_client_blocks_store: bool,
}

/// Counts the sections that a `lease-lost` event ended (`all`: one lock's), each as explained
/// by a fault or not.
pub(super) fn losses(all: &[Section], faults: &[FaultSpan], rules: LossRules, report: &mut Report) {
    for section in all.iter().filter(|s| s.lost) {
        let why = explanation(section, faults, rules)
            .map(FaultKind::name)
            .or_else(|| late_start(section, rules.lease_us).then_some(LATE_START));
        if let Some(why) = why {
            report.explained_losses += 1;
            *report.losses_explained_by.entry(why).or_insert(0) += 1;
        } else {
            report.unexplained_losses += 1;
            let detail = format!(
                "unexplained loss: {section:?} lost at {}; {}",
                section.end,
                last_fault_before(section.end, faults)
            );
            report.violation(
                ViolationKind::UnexplainedLoss,
                detail,
                section.events.clone(),
            );
        }
    }
}

/// The fault that explains the loss of `lost`'s lease at `lost.end` (when its lease
/// ended), if one does: a fault that reached its worker while it could still end that
/// lease, that is one that began no later than the loss and was over no earlier than a
/// lease and [`LOSS_AFTERMATH_US`] before it (a renewal is sent a third of a lease after
/// the last one and may run until the deadline, so a renewal that failed was in flight at
/// most a lease before the loss). A fault reaches a worker when it is
///
/// - a pause of that worker (stopped, it renews nothing; its lease runs out);
/// - a pause of another worker where a paused client blocks the store (SQLite);
/// - a fault of the lock store: a restart or kill -9 of the server, a partition or reset
///   at its proxy, ended sessions, a busy file, rows deleted by hand, a failover, any
///   fault of an etcd member (the worker's calls may go to that member).
///
/// A kill of a worker reaches no other worker (a killed worker logs no loss).
fn explanation(lost: &Section, faults: &[FaultSpan], rules: LossRules) -> Option<FaultKind> {
    let from = lost
        .end
        .saturating_sub(rules.lease_us.saturating_add(LOSS_AFTERMATH_US));
    faults
        .iter()
        .filter(|fault| fault.start <= lost.end && fault.end >= from)
        .find(|fault| match fault.kind {
            FaultKind::Pause { worker } => {
                worker == lost.worker || rules.paused_client_blocks_store
            }
            FaultKind::Kill { .. } | FaultKind::RowLock { .. } => false,
            FaultKind::Restart { .. }
            | FaultKind::Blackhole
            | FaultKind::Reset
            | FaultKind::MemberKill { .. }
            | FaultKind::MemberPause { .. }
            | FaultKind::MemberCut { .. }
            | FaultKind::Wipe { .. }
            | FaultKind::Busy
            | FaultKind::ServerKill
            | FaultKind::Terminate { .. }
            | FaultKind::Failover { .. } => true,
        })
        .map(|fault| fault.kind)
}

/// The last fault begun before `at`, for an example: its kind and how long before `at` it
/// was over.
fn last_fault_before(at: u64, faults: &[FaultSpan]) -> String {
    faults
        .iter()
        .filter(|f| f.start <= at)
        .max_by_key(|f| f.end)
        .map_or_else(
            || "no fault before it".to_owned(),
            |f| {
                format!(
                    "the last fault before it, {:?}, was over {} ms before",
                    f.kind,
                    i128::from(at).saturating_sub(i128::from(f.end)) / 1000
                )
            },
        )
}
