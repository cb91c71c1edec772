//! The checker: from the nodes' logs, the faults and the resource's accepted writes, the
//! figures of a history and its violations, each with the events that show it
//! (definitions in the crate README).

mod losses;
mod sections;
mod shared;
#[cfg(test)]
mod tests;
mod ticks;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::event::{Answer, Event, FaultKind, What};
use crate::history::{FaultSpan, History, Log};

pub use losses::{LATE_START, LOSS_AFTERMATH_US, LossRules};
pub use sections::{Section, Tallies, sections};
pub use ticks::STALE_RECORD_WRITE_LEASES;

/// A leaderless gap that begins or ends within this many leases (plus a second) after a
/// fault, or during one, is the fault's: a killed or paused holder's lease has to run
/// out, a restarted server to be reconnected to, before anyone can take the lock.
pub const GAP_SHADOW_LEASES: u64 = 2;

/// The longest time a lock went without a holder, outside the faults' windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gap {
    /// The lock's index.
    pub lock: u32,
    /// When its last holder's section ended (release, loss or death), wall-clock µs.
    pub from: u64,
    /// When the next section began.
    pub to: u64,
}

impl Gap {
    /// Its length in µs.
    pub fn len_us(&self) -> u64 {
        self.to.saturating_sub(self.from)
    }
}

/// The figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The backend.
    pub backend: String,
    /// Acquisitions: `action-started` events.
    pub acquisitions: usize,
    /// Pairs of sections of different workers that intersect, with no explaining fault.
    pub unexplained_overlaps: usize,
    /// Pairs that intersect around a pause of a holder or a data-losing fault.
    pub explained_overlaps: usize,
    /// The explained pairs, by the kind of the fault that explains them (a pair two
    /// faults explain counts under the first).
    pub explained_by: BTreeMap<&'static str, usize>,
    /// Sections whose acquire began after another section ended, with a smaller token.
    pub token_order_violations: usize,
    /// Read/write locks: writers whose token is not above that of a section that began
    /// before their acquire call, readers whose token is not above that of a write
    /// section that began before theirs.
    pub shared_token_order_violations: usize,
    /// Readers' reads of the fenced resource that saw a write with a token above the
    /// reader's, with no fault to explain it.
    pub stale_reads: usize,
    /// Such reads a pause of the reader or a data-losing fault explains.
    pub explained_stale_reads: usize,
    /// Acquisitions whose token an earlier acquisition already had.
    pub duplicate_tokens: usize,
    /// Resource entries with a token below the highest accepted before them.
    pub stale_writes_accepted: usize,
    /// Leases lost (a `lease-lost` event) with no fault that could have ended them.
    pub unexplained_losses: usize,
    /// Actions begun at or after their lease's deadline, with no pause of their node to
    /// explain it.
    pub late_actions: usize,
    /// Renewals a node took as granted though it had sent them at or after its lease's
    /// deadline.
    pub late_renewals: usize,
    /// Sections that went on after their node had released their lease.
    pub actions_after_release: usize,
    /// Leases lost around a fault that could have ended them.
    pub explained_losses: usize,
    /// The explained losses, by the kind of the fault that explains them (the first
    /// that fits).
    pub losses_explained_by: BTreeMap<&'static str, usize>,
    /// Resource entries without a readable token.
    pub unreadable_entries: usize,
    /// Faults injected.
    pub faults: usize,
    /// Faults injected, by kind.
    pub faults_by_kind: BTreeMap<&'static str, usize>,
    /// The longest leaderless gap outside the faults' windows, if any gap was.
    pub longest_gap: Option<Gap>,
    /// Sections cut short by a worker's death or the run's end.
    pub unfinished: usize,
    /// Skips, errors, losses, refused and failed writes, torn lines.
    pub tallies: Tallies,
    /// A few of the violations, for a human.
    pub examples: Vec<String>,
    /// Scheduled ticks run (`tick-ran` events of distinct lock and tick).
    pub ticks_run: usize,
    /// Runs of a tick after an earlier run of it, with no data loss to explain them.
    pub ticks_run_twice: usize,
    /// Runs of a tick after an earlier run of it whose claim a data-losing fault may
    /// have lost (what the scheduler's guarantee allows).
    pub ticks_rerun_after_data_loss: usize,
    /// Every violation, with the events that show it.
    pub violations: Vec<Violation>,
}

/// What rule a [`Violation`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// Two nodes acted on one lock at once, and no fault explains it.
    UnexplainedOverlap,
    /// An acquire call began after a section had ended, and got a smaller token.
    TokenOrder,
    /// A token an earlier acquisition of the lock already had.
    DuplicateToken,
    /// The fenced resource accepted a write with a token below one it had accepted.
    StaleWriteAccepted,
    /// A lease was lost, and no fault explains it.
    UnexplainedLoss,
    /// An action began at or after its lease's deadline, and no pause of its node
    /// explains it.
    LateAction,
    /// A node took a renewal as granted that it had sent at or after its lease's
    /// deadline: the lease had ended, and another node may have held the lock since.
    LateRenewal,
    /// A node went on acting after it had released its lease.
    ActionAfterRelease,
    /// A scheduled job's tick ran twice (not a rerun of an unfinished tick), and no data
    /// loss explains it.
    TickRanTwice,
    /// A read/write lock's writer got a token not above that of a section that began
    /// before its acquire call, or a reader one not above an earlier writer's.
    SharedTokenOrder,
    /// A reader read the fenced resource and saw a write with a token above its own (a
    /// writer that came after it, or an earlier one with a larger token), and no fault
    /// explains it.
    StaleRead,
}

/// One violation and the events that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule it breaks.
    pub kind: ViolationKind,
    /// What happened, for a human.
    pub detail: String,
    /// The events that show it, in the order the detail names them: the two sections'
    /// (`action-started` and its end) for an overlap, a token order violation or a
    /// duplicate; the two resource writes for a stale write; the section's for a loss or
    /// a late action; the section's start and the late `renewed` for a late renewal; the
    /// section's and its `released` for an action after its release; the two `tick-ran`
    /// events, the earlier first, for a tick run twice; the later section's and the
    /// earlier's for a read/write token order violation; the reader's section, its read,
    /// and the writer's section if in the history, for a stale read.
    pub events: Vec<Event>,
}

/// How many violations of each kind [`Report::examples`] keeps.
const EXAMPLES: usize = 5;

impl Report {
    /// Records a violation, and its detail among the examples while its kind has fewer
    /// than [`EXAMPLES`] there.
    fn violation(&mut self, kind: ViolationKind, detail: String, events: Vec<Event>) {
        if self.violations.iter().filter(|v| v.kind == kind).count() < EXAMPLES {
            self.examples.push(detail.clone());
        }
        self.violations.push(Violation {
            kind,
            detail,
            events,
        });
    }
}

impl Report {
    /// `true` when the safety figures are all zero: unexplained overlaps (a read section
    /// overlaps only other read sections); token order (violations and duplicates, and
    /// the read/write locks' order); stale writes accepted (and no unreadable entry);
    /// stale reads;
    /// unexplained losses; late actions and renewals; actions after a release; and ticks
    /// run twice.
    pub fn passed(&self) -> bool {
        self.ticks_run_twice == 0
            && self.shared_token_order_violations == 0
            && self.stale_reads == 0
            && self.late_actions == 0
            && self.late_renewals == 0
            && self.actions_after_release == 0
            && self.unexplained_overlaps == 0
            && self.token_order_violations == 0
            && self.duplicate_tokens == 0
            && self.stale_writes_accepted == 0
            && self.unreadable_entries == 0
            && self.unexplained_losses == 0
    }

    /// The second line: the figures that are not about safety.
    pub fn details(&self) -> String {
        let t = &self.tallies;
        format!(
            "details: faults_by_kind={} explained_by={} losses_explained_by={} \
             unfinished_sections={} skips={} errors={} lost={} renewals={} releases={} \
             late_starts_in_pauses={} writes_rejected={} writes_failed={} torn_lines={} \
             unreadable_entries={} ticks_run={} ticks_run_twice={} ticks_rerun_after_data_loss={} \
             read_sections={} write_sections={} reads={} reads_failed={} explained_stale_reads={}",
            counts(&self.faults_by_kind),
            counts(&self.explained_by),
            counts(&self.losses_explained_by),
            self.unfinished,
            t.skips,
            t.errors,
            t.lost,
            t.renewals,
            t.releases,
            t.late_starts_in_pauses,
            t.writes_rejected,
            t.writes_failed,
            t.torn_lines,
            self.unreadable_entries,
            self.ticks_run,
            self.ticks_run_twice,
            self.ticks_rerun_after_data_loss,
            t.read_sections,
            t.write_sections,
            t.reads,
            t.reads_failed,
            self.explained_stale_reads
        )
    }
}

impl Report {
    /// The longest leaderless gap outside faults, in whole milliseconds (0 without one).
    pub fn longest_gap_ms(&self) -> u64 {
        self.longest_gap.map_or(0, |g| g.len_us() / 1000)
    }
}

/// `kill:3,pause:4`, or `none`.
fn counts(map: &BTreeMap<&'static str, usize>) -> String {
    if map.is_empty() {
        return "none".to_owned();
    }
    let parts: Vec<String> = map.iter().map(|(k, n)| format!("{k}:{n}")).collect();
    parts.join(",")
}

/// The one-line verdict, `backend=… acquisitions=… unexplained_overlaps=… …`, the safety
/// figures first (`leader-chaos` ends its runs with it, after `chaos: `).
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "backend={} acquisitions={} unexplained_overlaps={} token_order_violations={} \
             duplicate_tokens={} stale_writes_accepted={} unexplained_losses={} late_actions={} \
             late_renewals={} actions_after_release={} shared_token_order_violations={} \
             stale_reads={} faults={} explained_overlaps={} explained_losses={} longest_gap_ms={}",
            self.backend,
            self.acquisitions,
            self.unexplained_overlaps,
            self.token_order_violations,
            self.duplicate_tokens,
            self.stale_writes_accepted,
            self.unexplained_losses,
            self.late_actions,
            self.late_renewals,
            self.actions_after_release,
            self.shared_token_order_violations,
            self.stale_reads,
            self.faults,
            self.explained_overlaps,
            self.explained_losses,
            self.longest_gap_ms()
        )
    }
}

/// Computes the figures of a history and its violations.
pub fn check(run: &History) -> Report {
    let (mut all, tallies) = sections(&run.logs, run.run_end);
    all.sort_by_key(|s| (s.lock, s.start, s.worker));
    let mut faults_by_kind = BTreeMap::new();
    for fault in &run.faults {
        *faults_by_kind.entry(fault.kind.name()).or_insert(0) += 1;
    }
    let mut report = Report {
        backend: run.backend.clone(),
        acquisitions: all.len(),
        faults: run.faults.len(),
        faults_by_kind,
        unfinished: all.iter().filter(|s| s.unfinished).count(),
        tallies,
        ..Report::default()
    };
    let rules = LossRules {
        lease_us: run.lease_us,
        paused_client_blocks_store: run.paused_client_blocks_store,
    };
    for lock in per_lock(&all) {
        overlaps(lock, &run.faults, &mut report);
        losses::losses(lock, &run.faults, rules, &mut report);
        if lock.iter().all(|s| s.role.is_none()) {
            token_order(lock, &mut report);
        } else {
            shared::token_order(lock, &mut report);
            shared::stale_reads(lock, &run.faults, &mut report);
        }
        duplicates(lock, &mut report);
        deadlines(lock, &run.faults, run.exact_times, &mut report);
        let stop = if run.stopped_at == 0 {
            run.run_end
        } else {
            run.stopped_at
        };
        let uncertain = uncertain_holds(&run.logs, lock[0].lock, run.lease_us);
        if let Some(gap) = longest_gap(lock, &run.faults, &uncertain, stop, run.lease_us)
            && report.longest_gap.is_none_or(|g| gap.len_us() > g.len_us())
        {
            report.longest_gap = Some(gap);
        }
    }
    stale_writes(&run.resource, &mut report);
    ticks::ticks(&run.logs, &run.faults, run.lease_us, &mut report);
    report.unreadable_entries += run.unreadable_resource_entries;
    report
}

/// `all` (sorted by lock) cut into one slice per lock.
fn per_lock(all: &[Section]) -> impl Iterator<Item = &[Section]> {
    all.chunk_by(|a, b| a.lock == b.lock)
}

/// Counts intersecting pairs of sections of different workers (`all`: one lock's,
/// sorted by start), but for two read sections of a read/write lock, which share it.
fn overlaps(all: &[Section], faults: &[FaultSpan], report: &mut Report) {
    for (i, a) in all.iter().enumerate() {
        for b in all[i + 1..].iter().take_while(|b| b.start < a.end) {
            if a.worker == b.worker || (a.is_read() && b.is_read()) {
                continue;
            }
            if let Some(kind) = explanation(a, b, faults) {
                report.explained_overlaps += 1;
                *report.explained_by.entry(kind.name()).or_insert(0) += 1;
            } else {
                report.unexplained_overlaps += 1;
                let detail = format!("unexplained overlap: {a:?} and {b:?}");
                report.violation(ViolationKind::UnexplainedOverlap, detail, both(a, b));
            }
        }
    }
}

/// The fault that explains the overlap of `a` and `b` (`a` started first), if one does:
///
/// - a pause of either holder between the start of its acquire call and the end of the
///   overlap (a holder stopped past its lease, or between acquiring and logging);
/// - a data-losing fault ([`FaultKind::loses_data`]: a restart of Redis without
///   persistence, lock rows deleted by hand) that ended after one section's acquire call
///   began (so that its lock could be among what was lost) and began before the other
///   section did (so that the other acquired after the loss). The one lost may be the
///   later-starting section: its acquire was answered late, after the loss and the
///   other's acquisition.
///
/// Nothing else does: not a partition, a reset, a worker kill, a data-keeping restart
/// (MongoDB, PostgreSQL, a whole etcd cluster), a kill -9 of PostgreSQL, ended sessions,
/// a busy SQLite file, nor a fault of one etcd member (killed, paused, cut off): the
/// product must ride all of those out without two holders.
fn explanation(a: &Section, b: &Section, faults: &[FaultSpan]) -> Option<FaultKind> {
    let window_end = a.end.min(b.end);
    let during = |fault: &FaultSpan, from: u64| fault.start <= window_end && fault.end >= from;
    faults
        .iter()
        .find(|fault| match fault.kind {
            FaultKind::Pause { worker } => [a, b]
                .iter()
                .any(|s| s.worker == worker && during(fault, s.requested)),
            // Either section's lease may be the one lost: the later-starting one too, when
            // its answer came late.
            kind if kind.loses_data() => {
                (fault.end >= a.requested && fault.start <= b.start)
                    || (fault.end >= b.requested && fault.start <= a.start)
            }
            _ => false,
        })
        .map(|fault| fault.kind)
}

/// The times the store may have held `lock` for a node that never learnt it: from each
/// indeterminate acquire call's start (its answer was lost, so it may have taken the
/// lock) to a lease after it.
fn uncertain_holds(logs: &[Log], lock: u32, lease_us: u64) -> Vec<(u64, u64)> {
    logs.iter()
        .flat_map(|log| &log.events)
        .filter_map(|event| match event.what {
            What::AcquireAnswered {
                lock: l,
                requested,
                answer: Answer::Indeterminate { .. },
            } if l == lock => Some((requested, requested.saturating_add(lease_us))),
            _ => None,
        })
        .collect()
}

/// The longest time between one section's end and the next section's start on one lock
/// (`all`: its sections, sorted by start), leaving out gaps that reach past `stop`, touch
/// a fault's window (from its start to [`GAP_SHADOW_LEASES`] leases and a second after
/// its end) or an `uncertain` hold (an indeterminate acquire's possible lease: the lock
/// may have been held, by a node that did not know it).
fn longest_gap(
    all: &[Section],
    faults: &[FaultSpan],
    uncertain: &[(u64, u64)],
    stop: u64,
    lease_us: u64,
) -> Option<Gap> {
    let shadow = GAP_SHADOW_LEASES * lease_us + 1_000_000;
    let explained = |from: u64, to: u64| {
        faults
            .iter()
            .any(|f| f.start <= to && f.end.saturating_add(shadow) >= from)
            || uncertain.iter().any(|&(s, e)| s <= to && e >= from)
    };
    let mut sections = all.iter();
    let first = sections.next()?;
    let mut covered = first.end;
    let mut longest: Option<Gap> = None;
    for next in sections {
        if next.start > covered && next.start <= stop && !explained(covered, next.start) {
            let gap = Gap {
                lock: next.lock,
                from: covered,
                to: next.start,
            };
            if longest.is_none_or(|g| gap.len_us() > g.len_us()) {
                longest = Some(gap);
            }
        }
        covered = covered.max(next.end);
    }
    longest
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
            let detail = format!("token order: {later:?} began after {earlier:?} ended");
            report.violation(ViolationKind::TokenOrder, detail, both(later, earlier));
        }
    }
}

/// Counts acquisitions whose token an earlier acquisition already had.
fn duplicates(all: &[Section], report: &mut Report) {
    let mut seen: HashMap<u64, &Section> = HashMap::new();
    for section in all {
        if let Some(first) = seen.insert(section.token, section) {
            report.duplicate_tokens += 1;
            let detail = format!("duplicate token: {first:?} and {section:?}");
            report.violation(ViolationKind::DuplicateToken, detail, both(first, section));
        }
    }
}

/// Counts the actions begun at or after their lease's deadline (that no pause of their
/// node between the acquire call's start and the action's explains), the renewals taken
/// as granted though sent at or after the deadline, and the sections that went on after
/// their lease was released (`all`: one lock's sections).
fn deadlines(all: &[Section], faults: &[FaultSpan], exact_times: bool, report: &mut Report) {
    for section in all {
        let late = section.left == Some(0) || section.deadline.is_some_and(|d| section.start >= d);
        if late {
            let paused = !exact_times
                && faults.iter().any(|f| {
                    matches!(f.kind, FaultKind::Pause { worker } if worker == section.worker)
                        && f.start <= section.start
                        && f.end >= section.requested
                });
            if paused {
                report.tallies.late_starts_in_pauses += 1;
            } else {
                report.late_actions += 1;
                report.violation(
                    ViolationKind::LateAction,
                    format!("late action: {section:?} began at or after its deadline"),
                    section.events.clone(),
                );
            }
        }
        for renewal in &section.late_renewals {
            report.late_renewals += 1;
            report.violation(
                ViolationKind::LateRenewal,
                format!("late renewal: {renewal:?} of {section:?} was sent after its deadline"),
                vec![section.events[0].clone(), renewal.clone()],
            );
        }
        if let Some(released) = &section.released_while_open {
            report.actions_after_release += 1;
            let mut events = section.events.clone();
            events.push(released.clone());
            report.violation(
                ViolationKind::ActionAfterRelease,
                format!("action after release: {section:?} went on after {released:?}"),
                events,
            );
        }
    }
}

/// The events of two sections, `a`'s first.
fn both(a: &Section, b: &Section) -> Vec<Event> {
    a.events.iter().chain(&b.events).cloned().collect()
}

/// Counts the resource's accepted writes with a token below the highest of their lock
/// before them.
fn stale_writes(resource: &[Event], report: &mut Report) {
    let mut highest_of: HashMap<u32, (u64, usize)> = HashMap::new();
    for (index, entry) in resource.iter().enumerate() {
        let What::WriteAccepted { lock, token, .. } = entry.what else {
            report.unreadable_entries += 1;
            continue;
        };
        let highest = highest_of.entry(lock).or_insert((0, index));
        if token < highest.0 {
            report.stale_writes_accepted += 1;
            let detail = format!(
                "stale write accepted: entry {index} {entry:?} after token {}",
                highest.0
            );
            report.violation(
                ViolationKind::StaleWriteAccepted,
                detail,
                vec![resource[highest.1].clone(), entry.clone()],
            );
        }
        if token > highest.0 {
            *highest = (token, index);
        }
    }
}
