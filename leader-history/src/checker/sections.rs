//! Sections (action start to end) and the other counts, from the nodes' logs.

use crate::event::{Answer, Event, Role, What};
use crate::history::Log;

/// One acquisition and how long its holder acted on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The lock's index.
    pub lock: u32,
    /// The node.
    pub worker: u32,
    /// Its fencing token.
    pub token: u64,
    /// When the acquire call began.
    pub requested: u64,
    /// When the action began (the `action-started` event).
    pub start: u64,
    /// The `lease-lost` or `action-ended` event, whichever came first; else the node's
    /// death, else the history's end.
    pub end: u64,
    /// No `lease-lost` or `action-ended` event: cut short by the node's death or the
    /// history's end.
    pub unfinished: bool,
    /// Ended by a `lease-lost` event: the lease ended before the action did (`end` is
    /// when).
    pub lost: bool,
    /// How much of its lease was left when the action began, µs, if logged.
    pub left: Option<u64>,
    /// The lease's deadline when the action began (its `deadline`, else `start + left`),
    /// if logged.
    pub deadline: Option<u64>,
    /// `renewed` events of its lease sent at or after the deadline the lease had until
    /// then: the node took as renewed a lease that had already ended.
    pub late_renewals: Vec<Event>,
    /// The node's `released` event of its lease while the section was still open: the
    /// node went on acting after it had let the lock go.
    pub released_while_open: Option<Event>,
    /// The events that make it: its `action-started`, and its `lease-lost` or
    /// `action-ended` (or `node-stopped`) if any.
    pub events: Vec<Event>,
    /// The side of a read/write lock it holds; `None` for an exclusive lock's section.
    pub role: Option<Role>,
    /// The node's `resource-read` events of its lease while the section was open (a
    /// reader's reads of the fenced resource).
    pub reads: Vec<Event>,
}

impl Section {
    /// Whether it shares its lock with other readers (a read section); an exclusive
    /// lock's section or a write section excludes every other.
    pub fn is_read(&self) -> bool {
        self.role == Some(Role::Read)
    }
}

/// What the logs say besides the sections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tallies {
    /// Acquire calls refused (another node held the lock).
    pub skips: usize,
    /// Acquire calls whose answer was lost (indeterminate).
    pub errors: usize,
    /// `lease-lost` events.
    pub lost: usize,
    /// Writes the fence refused.
    pub writes_rejected: usize,
    /// Writes whose call failed.
    pub writes_failed: usize,
    /// Partial last lines dropped.
    pub torn_lines: usize,
    /// `renewed` events.
    pub renewals: usize,
    /// `released` events.
    pub releases: usize,
    /// Actions begun after their lease's deadline while their node was paused (a node
    /// stopped between its check of the lease and its first step): explained, not
    /// violations.
    pub late_starts_in_pauses: usize,
    /// Read sections of read/write locks (`action-started` with `role` `read`).
    pub read_sections: usize,
    /// Write sections of read/write locks (`role` `write`).
    pub write_sections: usize,
    /// Readers' reads of the fenced resource (`resource-read`), failed ones included.
    pub reads: usize,
    /// Readers' reads that failed (no answer).
    pub reads_failed: usize,
}

/// The sections of every log, and the tallies.
///
/// A log has at most one open section per lock: a new `action-started` of a lock ends the
/// open section of that lock (it should not happen); `action-ended` and `lease-lost` end
/// the open section of their lock with their token. A `lease-lost` after the section's
/// `action-ended` marks it lost at its end (the node found the loss when the action
/// returned).
pub fn sections(logs: &[Log], run_end: u64) -> (Vec<Section>, Tallies) {
    let mut all = Vec::new();
    let mut tallies = Tallies::default();
    for life in logs {
        tallies.torn_lines += life.torn;
        let first_of_log = all.len();
        let mut open: Vec<Section> = Vec::new();
        // The last `acquire-requested` of each lock.
        let mut asked: Vec<(u32, u64)> = Vec::new();
        for event in &life.events {
            let at = event.at;
            match event.what {
                What::AcquireRequested { lock } => {
                    asked.retain(|(l, _)| *l != lock);
                    asked.push((lock, at));
                }
                What::ActionStarted {
                    lock,
                    token,
                    requested,
                    left_us,
                    deadline,
                    role,
                } => {
                    match role {
                        Some(Role::Read) => tallies.read_sections += 1,
                        Some(Role::Write) => tallies.write_sections += 1,
                        None => {}
                    }
                    if let Some(i) = open.iter().position(|s| s.lock == lock) {
                        all.push(closed(open.swap_remove(i), at, None));
                    }
                    let requested = requested
                        .or_else(|| asked.iter().find(|(l, _)| *l == lock).map(|(_, r)| *r))
                        .unwrap_or(at);
                    open.push(Section {
                        lock,
                        worker: life.node,
                        token,
                        requested: requested.min(at),
                        start: at,
                        end: at,
                        unfinished: true,
                        lost: false,
                        left: left_us,
                        deadline: deadline.or_else(|| left_us.map(|left| at.saturating_add(left))),
                        late_renewals: Vec::new(),
                        released_while_open: None,
                        events: vec![event.clone()],
                        role,
                        reads: Vec::new(),
                    });
                }
                What::LeaseLost { lock, token } | What::ActionEnded { lock, token } => {
                    let lost = matches!(event.what, What::LeaseLost { .. });
                    if lost {
                        tallies.lost += 1;
                    }
                    if let Some(i) = open.iter().position(|s| (s.lock, s.token) == (lock, token)) {
                        all.push(Section {
                            lost,
                            ..closed(open.swap_remove(i), at, Some(event))
                        });
                    } else if lost
                        && let Some(ended) = all[first_of_log..]
                            .iter_mut()
                            .rev()
                            .find(|s| (s.lock, s.token) == (lock, token) && !s.lost)
                    {
                        // Found lost when its action returned: lost at its end.
                        ended.lost = true;
                        ended.events.push(event.clone());
                    }
                }
                What::Renewed {
                    lock,
                    token,
                    requested,
                    deadline,
                } => {
                    tallies.renewals += 1;
                    if let Some(section) =
                        open.iter_mut().find(|s| (s.lock, s.token) == (lock, token))
                    {
                        if let (Some(sent), Some(until)) = (requested, section.deadline)
                            && sent >= until
                        {
                            section.late_renewals.push(event.clone());
                        }
                        section.deadline = deadline.or(section.deadline);
                    }
                }
                What::Released { lock, token } => {
                    tallies.releases += 1;
                    if let Some(section) =
                        open.iter_mut().find(|s| (s.lock, s.token) == (lock, token))
                    {
                        section
                            .released_while_open
                            .get_or_insert_with(|| event.clone());
                    }
                }
                What::AcquireAnswered { ref answer, .. } => match answer {
                    Answer::Refused => tallies.skips += 1,
                    Answer::Indeterminate { .. } => tallies.errors += 1,
                    Answer::Lease { .. } => {}
                },
                What::ResourceRead {
                    lock,
                    token,
                    failed,
                    ..
                } => {
                    tallies.reads += 1;
                    if failed {
                        tallies.reads_failed += 1;
                    }
                    if let Some(section) =
                        open.iter_mut().find(|s| (s.lock, s.token) == (lock, token))
                    {
                        section.reads.push(event.clone());
                    }
                }
                What::WriteRejected { .. } => tallies.writes_rejected += 1,
                What::WriteFailed { .. } => tallies.writes_failed += 1,
                _ => {}
            }
        }
        let stop = life
            .events
            .iter()
            .rev()
            .find(|e| matches!(e.what, What::NodeStopped));
        for mut section in open {
            let end = life.died_at.unwrap_or(run_end);
            section.events.extend(stop.cloned());
            all.push(Section {
                end: end.max(section.start),
                ..section
            });
        }
    }
    (all, tallies)
}

fn closed(mut section: Section, at: u64, by: Option<&Event>) -> Section {
    section.events.extend(by.cloned());
    Section {
        end: at.max(section.start),
        unfinished: false,
        ..section
    }
}
