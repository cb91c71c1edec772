//! The checker: from the workers' logs, the faults and the resource's list, the figures of
//! a run (definitions in the crate README).

mod sections;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use crate::event::FaultKind;

pub use sections::{Incarnation, Section, Tallies, sections};

/// A fault the orchestrator injected, from `start` to `end` (wall-clock µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpan {
    /// What it did.
    pub kind: FaultKind,
    /// When it began.
    pub start: u64,
    /// When it was over.
    pub end: u64,
}

/// Everything the checker reads.
#[derive(Debug, Clone, Default)]
pub struct RunRecord {
    /// `redis`, `mongodb` or `etcd`.
    pub backend: String,
    /// Every worker process's log.
    pub incarnations: Vec<Incarnation>,
    /// The faults, in order.
    pub faults: Vec<FaultSpan>,
    /// The resource's list of accepted writes, oldest first (`worker:token:phase`).
    pub resource: Vec<String>,
    /// When the run ended (sections still open then end here).
    pub run_end: u64,
}

/// The figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The backend.
    pub backend: String,
    /// `start` lines.
    pub acquisitions: usize,
    /// Pairs of sections of different workers that intersect, with no explaining fault.
    pub unexplained_overlaps: usize,
    /// Pairs that intersect around a pause of a holder or a data-losing restart.
    pub explained_overlaps: usize,
    /// Sections whose acquire began after another section ended, with a smaller token.
    pub token_order_violations: usize,
    /// Acquisitions whose token an earlier acquisition already had.
    pub duplicate_tokens: usize,
    /// Resource entries with a token below the highest accepted before them.
    pub stale_writes_accepted: usize,
    /// Resource entries without a readable token.
    pub unreadable_entries: usize,
    /// Faults injected.
    pub faults: usize,
    /// Sections cut short by a worker's death or the run's end.
    pub unfinished: usize,
    /// Skips, errors, losses, refused and failed writes, torn lines.
    pub tallies: Tallies,
    /// A few of the violations, for a human.
    pub examples: Vec<String>,
}

/// How many violations of each kind [`Report::examples`] keeps.
const EXAMPLES: usize = 5;

impl Report {
    /// `true` when the safety figures are all zero: unexplained overlaps; token order
    /// (violations and duplicates); stale writes accepted (and no unreadable entry).
    pub fn passed(&self) -> bool {
        self.unexplained_overlaps == 0
            && self.token_order_violations == 0
            && self.duplicate_tokens == 0
            && self.stale_writes_accepted == 0
            && self.unreadable_entries == 0
    }

    /// The second line: the figures that are not about safety.
    pub fn details(&self) -> String {
        let t = &self.tallies;
        format!(
            "details: explained_overlaps={} unfinished_sections={} skips={} errors={} lost={} \
             writes_rejected={} writes_failed={} torn_lines={} unreadable_entries={}",
            self.explained_overlaps,
            self.unfinished,
            t.skips,
            t.errors,
            t.lost,
            t.writes_rejected,
            t.writes_failed,
            t.torn_lines,
            self.unreadable_entries
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chaos: backend={} acquisitions={} unexplained_overlaps={} token_order_violations={} \
             duplicate_tokens={} stale_writes_accepted={} faults={}",
            self.backend,
            self.acquisitions,
            self.unexplained_overlaps,
            self.token_order_violations,
            self.duplicate_tokens,
            self.stale_writes_accepted,
            self.faults
        )
    }
}

/// Computes the figures of a run.
pub fn check(run: &RunRecord) -> Report {
    let (mut all, tallies) = sections(&run.incarnations, run.run_end);
    all.sort_by_key(|s| (s.start, s.worker));
    let mut report = Report {
        backend: run.backend.clone(),
        acquisitions: all.len(),
        faults: run.faults.len(),
        unfinished: all.iter().filter(|s| s.unfinished).count(),
        tallies,
        ..Report::default()
    };
    overlaps(&all, &run.faults, &mut report);
    token_order(&all, &mut report);
    duplicates(&all, &mut report);
    stale_writes(&run.resource, &mut report);
    report
}

/// Counts intersecting pairs of sections of different workers (`all` sorted by start).
fn overlaps(all: &[Section], faults: &[FaultSpan], report: &mut Report) {
    for (i, a) in all.iter().enumerate() {
        for b in all[i + 1..].iter().take_while(|b| b.start < a.end) {
            if a.worker == b.worker {
                continue;
            }
            if explained(a, b, faults) {
                report.explained_overlaps += 1;
            } else {
                report.unexplained_overlaps += 1;
                if report.examples.len() < EXAMPLES {
                    report
                        .examples
                        .push(format!("unexplained overlap: {a:?} and {b:?}"));
                }
            }
        }
    }
}

/// Whether a fault explains the overlap of `a` and `b`: a pause of either holder between
/// the start of its acquire call and the end of the overlap, or a data-losing restart of
/// the lock server between the earlier acquire call and the end of the overlap.
///
/// Nothing else does: not a partition, a reset, a worker kill, a data-keeping restart
/// (MongoDB, a whole etcd cluster), nor a fault of one etcd member (killed, paused, cut
/// off), which a cluster must ride out without two holders.
fn explained(a: &Section, b: &Section, faults: &[FaultSpan]) -> bool {
    let window_end = a.end.min(b.end);
    let during = |fault: &FaultSpan, from: u64| fault.start <= window_end && fault.end >= from;
    faults.iter().any(|fault| match fault.kind {
        FaultKind::Pause { worker } => [a, b]
            .iter()
            .any(|s| s.worker == worker && during(fault, s.requested)),
        FaultKind::Restart { data_lost: true } => during(fault, a.requested.min(b.requested)),
        _ => false,
    })
}

/// Counts sections whose acquire call began after another section had ended, with a
/// smaller token than that section's.
fn token_order(all: &[Section], report: &mut Report) {
    let mut by_end: Vec<&Section> = all.iter().collect();
    by_end.sort_by_key(|s| s.end);
    let mut by_request: Vec<&Section> = all.iter().collect();
    by_request.sort_by_key(|s| s.requested);
    let mut ended = by_end.iter().peekable();
    let mut highest: Option<&Section> = None;
    for later in by_request {
        while let Some(earlier) = ended.next_if(|s| s.end < later.requested) {
            if highest.is_none_or(|h| earlier.token > h.token) {
                highest = Some(earlier);
            }
        }
        if let Some(earlier) = highest.filter(|h| later.token < h.token) {
            report.token_order_violations += 1;
            if report.examples.len() < 2 * EXAMPLES {
                report.examples.push(format!(
                    "token order: {later:?} began after {earlier:?} ended"
                ));
            }
        }
    }
}

/// Counts acquisitions whose token an earlier acquisition already had.
fn duplicates(all: &[Section], report: &mut Report) {
    let mut seen: HashMap<u64, &Section> = HashMap::new();
    for section in all {
        if let Some(first) = seen.insert(section.token, section) {
            report.duplicate_tokens += 1;
            if report.examples.len() < 3 * EXAMPLES {
                report
                    .examples
                    .push(format!("duplicate token: {first:?} and {section:?}"));
            }
        }
    }
}

/// Counts entries of the resource's list with a token below the highest before them.
fn stale_writes(resource: &[String], report: &mut Report) {
    let mut highest = 0;
    for (index, entry) in resource.iter().enumerate() {
        let Some(token) = entry_token(entry) else {
            report.unreadable_entries += 1;
            continue;
        };
        if token < highest {
            report.stale_writes_accepted += 1;
            if report.examples.len() < 4 * EXAMPLES {
                report.examples.push(format!(
                    "stale write accepted: entry {index} {entry:?} after token {highest}"
                ));
            }
        }
        highest = highest.max(token);
    }
}

/// The token of a `worker:token:phase` entry.
pub fn entry_token(entry: &str) -> Option<u64> {
    let mut parts = entry.split(':');
    let (_worker, token, _phase) = (parts.next()?, parts.next()?, parts.next()?);
    token.parse().ok()
}
