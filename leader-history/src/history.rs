//! A whole history, as the checker reads it: each node's logs, the faults, the fenced
//! resource's accepted writes; and [`read_history`], which builds one from JSON lines.

use std::collections::HashMap;
use std::io::BufRead;

use crate::event::{Event, FaultKind, What};

/// A fault, from `start` to `end` (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpan {
    /// What it did.
    pub kind: FaultKind,
    /// When it began.
    pub start: u64,
    /// When it was over.
    pub end: u64,
}

/// One log of a node's process life, in the order the node wrote it, and when that
/// process was known gone.
///
/// A node runs one action at a time in one log: a new `action-started` ends the open
/// section of the same log. A node that holds several locks at once writes one log per
/// concurrent loop (the same `node` in each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    /// The node.
    pub node: u32,
    /// Its events, in the order it wrote them.
    pub events: Vec<Event>,
    /// When the process was known gone (killed, or exited); `None` if it outlived the
    /// history.
    pub died_at: Option<u64>,
    /// Partial last lines dropped from it (a writer killed mid-line).
    pub torn: usize,
}

/// Everything the checker reads.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// A label for the report (`redis`, say).
    pub backend: String,
    /// Every node process's logs.
    pub logs: Vec<Log>,
    /// The faults, in order.
    pub faults: Vec<FaultSpan>,
    /// The fenced resource's accepted writes (`write-accepted` events), in the order it
    /// accepted them.
    pub resource: Vec<Event>,
    /// Entries of the resource that could not be read as a write (each fails the check:
    /// a stale write could hide in one).
    pub unreadable_resource_entries: usize,
    /// When the history ended (sections still open then end here).
    pub run_end: u64,
    /// When the nodes began to be stopped: leaderless gaps are measured only before it
    /// (0: up to `run_end`).
    pub stopped_at: u64,
    /// The nodes' lease, in µs: how long after a fault a leaderless gap is still the
    /// fault's (see [`GAP_SHADOW_LEASES`](crate::GAP_SHADOW_LEASES)), and how long before
    /// a loss a fault may have caused it (see
    /// [`LOSS_AFTERMATH_US`](crate::LOSS_AFTERMATH_US)).
    pub lease_us: u64,
    /// Whether a paused node can keep every other node from renewing (SQLite, whose
    /// write lock a node stopped mid-transaction keeps).
    pub paused_client_blocks_store: bool,
    /// Whether every event was written at the very instant of the decision it records (a
    /// simulator's history): no pause can fall between a node's check of its lease and
    /// the event, so no pause explains a late action.
    pub exact_times: bool,
}

/// What [`read_history`] needs besides the events.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// A label for the report.
    pub backend: String,
    /// The nodes' lease, in µs.
    pub lease_us: u64,
    /// Whether a paused node can keep every other node from renewing.
    pub paused_client_blocks_store: bool,
}

/// A line of a trace that is not an event.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The input could not be read.
    #[error("reading the trace: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not an event.
    #[error("line {line}: {source}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// Why it is not an event.
        source: serde_json::Error,
    },
}

/// Reads a JSON-lines trace (one [`Event`] per line; blank lines skipped) into a
/// [`History`]:
///
/// - a node's events (those with a `node`) make its log, in line order; a
///   `node-stopped` ends that log (its open section ends there) and the node's next
///   events begin a new one;
/// - `fault` events are the faults;
/// - `write-accepted` events without a `node` are the fenced resource's accepted writes,
///   in line order;
/// - the history ends at the latest time of any event.
///
/// # Errors
///
/// The input cannot be read, or a line is not an event.
pub fn read_history(input: impl BufRead, settings: Settings) -> Result<History, ReadError> {
    let mut history = History {
        backend: settings.backend,
        lease_us: settings.lease_us,
        paused_client_blocks_store: settings.paused_client_blocks_store,
        ..History::default()
    };
    let mut open: HashMap<u32, Log> = HashMap::new();
    let mut order: Vec<u32> = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let event: Event = serde_json::from_str(&line).map_err(|source| ReadError::Line {
            line: index + 1,
            source,
        })?;
        history.run_end = history.run_end.max(event.at);
        match (&event.what, event.node) {
            (What::Fault { fault, start, end }, _) => history.faults.push(FaultSpan {
                kind: *fault,
                start: *start,
                end: *end,
            }),
            (What::WriteAccepted { .. }, None) => history.resource.push(event),
            (What::NodeStopped, Some(node)) => {
                let mut log = open.remove(&node).unwrap_or(Log {
                    node,
                    ..Log::default()
                });
                log.died_at = Some(event.at);
                log.events.push(event);
                history.logs.push(log);
            }
            (_, Some(node)) => {
                if !open.contains_key(&node) {
                    order.push(node);
                }
                open.entry(node)
                    .or_insert_with(|| Log {
                        node,
                        ..Log::default()
                    })
                    .events
                    .push(event);
            }
            (_, None) => {}
        }
    }
    for node in order {
        if let Some(log) = open.remove(&node) {
            history.logs.push(log);
        }
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Answer, Clock, Phase, Role};

    #[test]
    fn every_event_reads_back_from_its_json_line() {
        let events = [
            What::NodeStarted {
                pid: Some(7),
                name: Some("web-1".into()),
            },
            What::NodeStopped,
            What::AcquireRequested { lock: 1 },
            What::AcquireAnswered {
                lock: 1,
                requested: 5,
                answer: Answer::Lease { token: 9 },
            },
            What::AcquireAnswered {
                lock: 1,
                requested: 5,
                answer: Answer::Indeterminate {
                    message: Some("timed out".into()),
                },
            },
            What::ActionStarted {
                lock: 1,
                token: 9,
                requested: Some(5),
                left_us: Some(900),
                deadline: Some(1_000),
                role: None,
            },
            What::ActionStarted {
                lock: 2,
                token: 10,
                requested: None,
                left_us: None,
                deadline: None,
                role: Some(Role::Read),
            },
            What::ResourceRead {
                lock: 2,
                token: 10,
                phase: Some(Phase::Start),
                seen: Some(9),
                failed: false,
            },
            What::ResourceRead {
                lock: 2,
                token: 10,
                phase: None,
                seen: None,
                failed: true,
            },
            What::Renewed {
                lock: 1,
                token: 9,
                requested: Some(300),
                deadline: Some(1_300),
            },
            What::LockNamed {
                lock: 1,
                name: "nightly".into(),
            },
            What::Released { lock: 1, token: 9 },
            What::LeaseLost { lock: 1, token: 9 },
            What::ActionEnded { lock: 1, token: 9 },
            What::WriteAccepted {
                lock: 1,
                token: 9,
                phase: Some(Phase::End),
            },
            What::WriteRejected {
                lock: 1,
                token: 9,
                phase: None,
                highest_seen: Some(10),
            },
            What::WriteFailed {
                lock: 1,
                token: 9,
                phase: Some(Phase::Start),
            },
            What::Fault {
                fault: FaultKind::Restart { data_lost: true },
                start: 1,
                end: 2,
            },
            What::TickRan {
                lock: 1,
                tick: 1_767_000_000_000,
                token: 9,
                claimed: Some(8),
                rerun: true,
            },
            What::TickRan {
                lock: 0,
                tick: 5,
                token: 9,
                claimed: None,
                rerun: false,
            },
        ];
        for what in events {
            let event = Event {
                at: 10,
                clock: Clock::Store,
                node: Some(3),
                what,
            };
            let line = serde_json::to_string(&event).unwrap();
            assert_eq!(
                serde_json::from_str::<Event>(&line).unwrap(),
                event,
                "{line}"
            );
        }
    }

    #[test]
    fn a_trace_is_split_into_logs_faults_and_resource_writes() {
        let trace = r#"
{"at":10,"node":1,"event":"acquire-requested"}
{"at":12,"node":2,"event":"acquire-requested"}
{"at":15,"node":1,"event":"action-started","token":4}
{"at":16,"clock":"store","event":"write-accepted","token":4}
{"at":20,"node":1,"event":"node-stopped"}
{"at":40,"event":"fault","fault":{"kind":"kill","worker":1},"start":19,"end":40}
{"at":41,"node":1,"event":"node-started","pid":99}
"#;
        let history = read_history(trace.as_bytes(), Settings::default()).unwrap();
        let shape: Vec<(u32, usize, Option<u64>)> = history
            .logs
            .iter()
            .map(|l| (l.node, l.events.len(), l.died_at))
            .collect();
        assert_eq!(shape, [(1, 3, Some(20)), (1, 1, None), (2, 1, None)]);
        assert_eq!(history.faults.len(), 1);
        assert_eq!(history.resource.len(), 1);
        assert_eq!(history.run_end, 41);
        assert_eq!(history.logs[0].events[0].clock, Clock::Wall);
    }

    #[test]
    fn a_line_that_is_not_an_event_is_named() {
        let trace = "{\"at\":1,\"node\":1,\"event\":\"renewed\",\"token\":1}\nnot json\n";
        let err = read_history(trace.as_bytes(), Settings::default()).unwrap_err();
        assert!(matches!(err, ReadError::Line { line: 2, .. }), "{err}");
    }
}
