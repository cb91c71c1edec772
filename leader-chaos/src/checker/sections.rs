//! Sections (acquisition to end) and the other counts, from the workers' logs.

use crate::event::{Event, Stamped, WriteOutcome};

/// One log of a worker's process life (its contending loop's, or a hold loop's), and when
/// that process was known gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Incarnation {
    /// The worker id.
    pub worker: u32,
    /// Its log, in file order.
    pub events: Vec<Stamped>,
    /// When the orchestrator saw it gone (killed, or exited); `None` if it outlived the run.
    pub died_at: Option<u64>,
    /// Partial last lines dropped from its log.
    pub torn: usize,
}

/// One acquisition and how long its holder acted on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// The lock's index.
    pub lock: u32,
    /// The worker.
    pub worker: u32,
    /// Its fencing token.
    pub token: u64,
    /// When the acquire call began.
    pub requested: u64,
    /// When the action began (the `start` line).
    pub start: u64,
    /// The `lost` or `end` line, whichever came first; else the worker's death, else the
    /// run's end.
    pub end: u64,
    /// No `lost` or `end` line: cut short by the worker's death or the run's end.
    pub unfinished: bool,
    /// Ended by a `lost` line: the lease ended before the action did (`end` is when).
    pub lost: bool,
    /// How much of its lease was left when the action began, µs, if logged.
    pub left: Option<u64>,
}

/// What the logs say besides the sections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tallies {
    /// `skip` lines.
    pub skips: usize,
    /// `error` lines.
    pub errors: usize,
    /// `lost` lines.
    pub lost: usize,
    /// Writes the fence refused.
    pub writes_rejected: usize,
    /// Writes whose call failed.
    pub writes_failed: usize,
    /// Partial last lines dropped.
    pub torn_lines: usize,
}

/// The sections of every incarnation, and the tallies.
pub fn sections(incarnations: &[Incarnation], run_end: u64) -> (Vec<Section>, Tallies) {
    let mut all = Vec::new();
    let mut tallies = Tallies::default();
    for life in incarnations {
        tallies.torn_lines += life.torn;
        let mut open: Option<Section> = None;
        for Stamped { at, event } in &life.events {
            match *event {
                Event::Start {
                    lock,
                    token,
                    requested,
                    left,
                } => {
                    // A start inside a section should not happen; the new one ends the old.
                    all.extend(open.take().map(|s| closed(s, *at)));
                    open = Some(Section {
                        lock,
                        worker: life.worker,
                        token,
                        requested: requested.min(*at),
                        start: *at,
                        end: *at,
                        unfinished: true,
                        lost: false,
                        left,
                    });
                }
                Event::Lost { token } | Event::End { token } => {
                    let lost = matches!(event, Event::Lost { .. });
                    if lost {
                        tallies.lost += 1;
                    }
                    if let Some(section) = open.take_if(|s| s.token == token) {
                        all.push(Section {
                            lost,
                            ..closed(section, *at)
                        });
                    }
                }
                Event::Skip { .. } => tallies.skips += 1,
                Event::Error { .. } => tallies.errors += 1,
                Event::Write { outcome, .. } => match outcome {
                    WriteOutcome::Rejected { .. } => tallies.writes_rejected += 1,
                    WriteOutcome::Failed => tallies.writes_failed += 1,
                    WriteOutcome::Accepted => {}
                },
                _ => {}
            }
        }
        if let Some(section) = open {
            let end = life.died_at.unwrap_or(run_end);
            all.push(Section {
                end: end.max(section.start),
                ..section
            });
        }
    }
    (all, tallies)
}

fn closed(section: Section, at: u64) -> Section {
    Section {
        end: at.max(section.start),
        unfinished: false,
        ..section
    }
}
