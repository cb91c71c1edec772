//! The run's logs as a [`leader_history::History`]: each log line converted to the public
//! event model, and the resource's list to its accepted writes.
//!
//! The workers keep writing the tab-separated line form of [`crate::event`] rather than
//! JSON lines: it is what a worker killed with SIGKILL mid-line leaves readable (a torn
//! last line is dropped and counted), its parser and tests are in place, and the checker
//! needs only the events, which this small adapter gives it.

use leader_history::{Answer, Clock, Event as HistoryEvent, What};

use crate::event::{Event, Phase, ReadOutcome, Stamped, WriteOutcome};

/// The public events of one worker log (its contending loop's or a hold loop's), in order.
///
/// A `start` line is an `action-started` (with its `requested` and `left`); `end`,
/// `action-ended`; `lost`, `lease-lost`; `skip`, an acquire answered `refused`; `error`, an
/// acquire answered `indeterminate` (the elector failed: the call may have taken the
/// lock); `write`, a write accepted, rejected or failed (of the lock of the section it
/// follows; `skip` and `error` lines name no lock: lock 0); `read`, a reader's
/// `resource-read`; `hello`, `node-started`. A `start` line's `role` is the section's.
/// Every time is the worker's wall clock.
pub fn to_history(worker: u32, events: &[Stamped]) -> Vec<HistoryEvent> {
    let mut lock = 0;
    events
        .iter()
        .filter_map(|Stamped { at, event }| {
            let what = match event {
                Event::Hello { pid, .. } => What::NodeStarted {
                    pid: Some(*pid),
                    name: None,
                },
                Event::Start {
                    lock: started,
                    token,
                    requested,
                    left,
                    role,
                } => {
                    lock = *started;
                    What::ActionStarted {
                        lock,
                        token: *token,
                        requested: Some(*requested),
                        left_us: *left,
                        deadline: None,
                        role: *role,
                    }
                }
                Event::Read {
                    token,
                    phase,
                    outcome,
                } => What::ResourceRead {
                    lock,
                    token: *token,
                    phase: Some(history_phase(*phase)),
                    seen: match outcome {
                        ReadOutcome::Seen(seen) => *seen,
                        ReadOutcome::Failed => None,
                    },
                    failed: *outcome == ReadOutcome::Failed,
                },
                Event::Write {
                    token,
                    phase,
                    outcome,
                } => {
                    let (token, phase) = (*token, Some(history_phase(*phase)));
                    match outcome {
                        WriteOutcome::Accepted => What::WriteAccepted { lock, token, phase },
                        WriteOutcome::Rejected { highest_seen } => What::WriteRejected {
                            lock,
                            token,
                            phase,
                            highest_seen: Some(*highest_seen),
                        },
                        WriteOutcome::Failed => What::WriteFailed { lock, token, phase },
                    }
                }
                Event::Lost { token } => What::LeaseLost {
                    lock,
                    token: *token,
                },
                Event::End { token } => What::ActionEnded {
                    lock,
                    token: *token,
                },
                Event::Skip { requested } => What::AcquireAnswered {
                    lock: 0,
                    requested: *requested,
                    answer: Answer::Refused,
                },
                Event::Error { requested, message } => What::AcquireAnswered {
                    lock: 0,
                    requested: *requested,
                    answer: Answer::Indeterminate {
                        message: Some(message.clone()),
                    },
                },
                // The orchestrator's lines: not in a worker's log.
                Event::Spawn { .. } | Event::Exit { .. } | Event::Fault { .. } => return None,
            };
            Some(HistoryEvent {
                at: *at,
                clock: Clock::Wall,
                node: Some(worker),
                what,
            })
        })
        .collect()
}

fn history_phase(phase: Phase) -> leader_history::Phase {
    match phase {
        Phase::Start => leader_history::Phase::Start,
        Phase::End => leader_history::Phase::End,
    }
}

/// The resource's list (`lock:worker:token:phase`, oldest first) as the resource's
/// accepted writes, and how many entries had no readable token.
pub fn resource_writes(entries: &[String]) -> (Vec<HistoryEvent>, usize) {
    let mut writes = Vec::with_capacity(entries.len());
    let mut unreadable = 0;
    for entry in entries {
        match entry_token(entry) {
            Some((lock, token)) => writes.push(HistoryEvent {
                at: 0,
                clock: Clock::Store,
                node: None,
                what: What::WriteAccepted {
                    lock,
                    token,
                    phase: None,
                },
            }),
            None => unreadable += 1,
        }
    }
    (writes, unreadable)
}

/// The lock and the token of a `lock:worker:token:phase` entry (a `worker:token:phase`
/// one is lock 0's).
pub fn entry_token(entry: &str) -> Option<(u32, u64)> {
    let parts: Vec<&str> = entry.split(':').collect();
    match parts.as_slice() {
        [lock, _worker, token, _phase] => Some((lock.parse().ok()?, token.parse().ok()?)),
        [_worker, token, _phase] => Some((0, token.parse().ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::parse_log;
    use leader_history::{FaultKind, FaultSpan, History, Log, ViolationKind, check};

    fn log(worker: u32, text: &str) -> Log {
        let parsed = parse_log(text).unwrap();
        Log {
            node: worker,
            events: to_history(worker, &parsed.events),
            died_at: None,
            torn: parsed.torn,
        }
    }

    #[test]
    fn each_line_becomes_its_public_event() {
        let events = log(
            3,
            "1\thello\tworker=3\tpid=77\n2\tskip\treq=0\n3\terror\treq=1\tmsg=boom\n\
             4\tstart\tlock=2\ttoken=5\treq=3\tleft=900\n\
             5\twrite\ttoken=5\tphase=start\toutcome=rejected:9\n6\tlost\ttoken=5\n\
             7\tend\ttoken=5\n",
        )
        .events;
        let whats: Vec<What> = events.iter().map(|e| e.what.clone()).collect();
        assert_eq!(
            whats,
            [
                What::NodeStarted {
                    pid: Some(77),
                    name: None
                },
                What::AcquireAnswered {
                    lock: 0,
                    requested: 0,
                    answer: Answer::Refused
                },
                What::AcquireAnswered {
                    lock: 0,
                    requested: 1,
                    answer: Answer::Indeterminate {
                        message: Some("boom".into())
                    }
                },
                What::ActionStarted {
                    lock: 2,
                    token: 5,
                    requested: Some(3),
                    left_us: Some(900),
                    deadline: None,
                    role: None,
                },
                What::WriteRejected {
                    lock: 2,
                    token: 5,
                    phase: Some(leader_history::Phase::Start),
                    highest_seen: Some(9)
                },
                What::LeaseLost { lock: 2, token: 5 },
                What::ActionEnded { lock: 2, token: 5 },
            ]
        );
        assert!(
            events
                .iter()
                .enumerate()
                .all(|(i, e)| e.at == i as u64 + 1 && e.node == Some(3))
        );
    }

    #[test]
    fn a_chaos_log_gets_the_checkers_verdicts() {
        let (resource, unreadable_resource_entries) = resource_writes(&[
            "0:1:5:start".to_owned(),
            "0:2:4:start".to_owned(),
            "garbage".to_owned(),
        ]);
        let history = History {
            backend: "test".into(),
            logs: vec![
                log(1, "10\tstart\ttoken=5\treq=9\n30\tend\ttoken=5\n"),
                log(2, "20\tstart\ttoken=4\treq=19\n40\tend\ttoken=4\n"),
            ],
            faults: vec![FaultSpan {
                kind: FaultKind::Blackhole,
                start: 12,
                end: 25,
            }],
            resource,
            unreadable_resource_entries,
            run_end: 1_000,
            lease_us: 100,
            ..History::default()
        };
        let report = check(&history);
        assert_eq!(report.unexplained_overlaps, 1);
        assert_eq!(report.stale_writes_accepted, 1);
        assert_eq!(report.unreadable_entries, 1);
        assert!(!report.passed());
        let kinds: Vec<ViolationKind> = report.violations.iter().map(|v| v.kind).collect();
        assert_eq!(
            kinds,
            [
                ViolationKind::UnexplainedOverlap,
                ViolationKind::StaleWriteAccepted
            ]
        );
        assert_eq!(report.violations[0].events.len(), 4);
    }

    #[test]
    fn entries_name_their_lock_and_token() {
        assert_eq!(entry_token("2:1:7:end"), Some((2, 7)));
        assert_eq!(entry_token("1:7:start"), Some((0, 7)));
        assert_eq!(entry_token("1:x:start"), None);
        assert_eq!(entry_token("garbage"), None);
    }
}
