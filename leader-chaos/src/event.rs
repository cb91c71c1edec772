//! The log format shared by the workers and the orchestrator: one event per line,
//! tab-separated, `<wall-clock µs>\t<kind>\t<key>=<value>...`.
//!
//! ```text
//! (tabs shown as two spaces)
//! 1767000000000000  start  token=1767000000000123  req=1766999999998000
//! 1767000000000900  write  token=1767000000000123  phase=start  outcome=accepted
//! 1767000000400000  fault  kind=pause  worker=3  start=1767000000000100  end=1767000000400000
//! ```
//!
//! A writer emits each line with one `write` call, so a process killed with SIGKILL leaves
//! at most a partial last line; [`parse_log`] drops such a line and counts it.

use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock in microseconds since the Unix epoch (0 for a clock set before 1970).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Which of a section's two resource writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Right after the acquisition.
    Start,
    /// After the work.
    End,
}

/// What a resource write answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written (the fence accepted it, or there was no fence).
    Accepted,
    /// Refused by the fence: a newer token had written.
    Rejected {
        /// The highest token the fence had seen.
        highest_seen: u64,
    },
    /// The call failed.
    Failed,
}

/// What a fault did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A worker killed with SIGKILL, then started again.
    Kill {
        /// The worker.
        worker: u32,
    },
    /// A worker stopped with SIGSTOP, then continued.
    Pause {
        /// The worker.
        worker: u32,
    },
    /// The lock server killed and started again.
    Restart {
        /// Whether it came back without its data.
        data_lost: bool,
    },
    /// The proxy dropped all traffic, then healed.
    Blackhole,
    /// The proxy reset every open connection.
    Reset,
}

/// One line of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A worker process began (first line of its log).
    Hello {
        /// The worker id.
        worker: u32,
        /// Its process id.
        pid: u32,
    },
    /// An acquisition: the action began with `token`; the acquire call began at `requested`.
    Start {
        /// The fencing token.
        token: u64,
        /// Wall-clock µs when the call that acquired began.
        requested: u64,
    },
    /// A resource write and its outcome.
    Write {
        /// The token it carried.
        token: u64,
        /// Which write.
        phase: Phase,
        /// What the resource answered.
        outcome: WriteOutcome,
    },
    /// The worker noticed its lease was lost: it stopped acting as the holder here.
    Lost {
        /// The token of the lost lease.
        token: u64,
    },
    /// The section ended (after its end write).
    End {
        /// The token.
        token: u64,
    },
    /// Another node held the lock for the whole wait.
    Skip {
        /// When the call began.
        requested: u64,
    },
    /// The elector returned an error.
    Error {
        /// When the call began.
        requested: u64,
        /// The error, on one line.
        message: String,
    },
    /// The orchestrator started a worker process.
    Spawn {
        /// The worker id.
        worker: u32,
        /// Its incarnation (0 first, then one more per restart).
        incarnation: u32,
        /// Its process id.
        pid: u32,
    },
    /// A worker process ended (`at` is when it was known gone).
    Exit {
        /// The worker id.
        worker: u32,
        /// Its incarnation.
        incarnation: u32,
    },
    /// A fault, from `start` to `end` (wall-clock µs).
    Fault {
        /// What it did.
        kind: FaultKind,
        /// When it began.
        start: u64,
        /// When it was over.
        end: u64,
    },
}

/// An event and when it happened (wall-clock µs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    /// When.
    pub at: u64,
    /// What.
    pub event: Event,
}

/// A complete line that is not an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}: {text:?}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: &'static str,
    /// The line, cut to 200 bytes.
    pub text: String,
}

/// A parsed log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedLog {
    /// The events, in file order.
    pub events: Vec<Stamped>,
    /// Partial last lines dropped (0 or 1): the writer died mid-line.
    pub torn: usize,
}

impl Stamped {
    /// The line for this event, with its newline.
    pub fn to_line(&self) -> String {
        let mut line = format!("{}\t{}", self.at, self.event);
        line.push('\n');
        line
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Hello { worker, pid } => write!(f, "hello\tworker={worker}\tpid={pid}"),
            Event::Start { token, requested } => write!(f, "start\ttoken={token}\treq={requested}"),
            Event::Write {
                token,
                phase,
                outcome,
            } => {
                let phase = match phase {
                    Phase::Start => "start",
                    Phase::End => "end",
                };
                write!(f, "write\ttoken={token}\tphase={phase}\toutcome=")?;
                match outcome {
                    WriteOutcome::Accepted => f.write_str("accepted"),
                    WriteOutcome::Rejected { highest_seen } => write!(f, "rejected:{highest_seen}"),
                    WriteOutcome::Failed => f.write_str("failed"),
                }
            }
            Event::Lost { token } => write!(f, "lost\ttoken={token}"),
            Event::End { token } => write!(f, "end\ttoken={token}"),
            Event::Skip { requested } => write!(f, "skip\treq={requested}"),
            Event::Error { requested, message } => {
                let mut one_line = String::with_capacity(message.len());
                for c in message.chars() {
                    one_line.push(if c.is_control() { ' ' } else { c });
                }
                write!(f, "error\treq={requested}\tmsg={one_line}")
            }
            Event::Spawn {
                worker,
                incarnation,
                pid,
            } => write!(f, "spawn\tworker={worker}\tinc={incarnation}\tpid={pid}"),
            Event::Exit {
                worker,
                incarnation,
            } => write!(f, "exit\tworker={worker}\tinc={incarnation}"),
            Event::Fault { kind, start, end } => {
                f.write_str("fault\tkind=")?;
                match kind {
                    FaultKind::Kill { worker } => write!(f, "kill\tworker={worker}")?,
                    FaultKind::Pause { worker } => write!(f, "pause\tworker={worker}")?,
                    FaultKind::Restart { data_lost } => {
                        let data = if *data_lost { "lose" } else { "keep" };
                        write!(f, "restart\tdata={data}")?;
                    }
                    FaultKind::Blackhole => f.write_str("blackhole")?,
                    FaultKind::Reset => f.write_str("reset")?,
                }
                write!(f, "\tstart={start}\tend={end}")
            }
        }
    }
}

/// Reads a log: every complete line must be an event; a last line without its newline
/// (a writer killed mid-line) is dropped and counted in [`ParsedLog::torn`].
///
/// # Errors
///
/// The first complete line that is not an event.
pub fn parse_log(text: &str) -> Result<ParsedLog, ParseError> {
    let mut parsed = ParsedLog::default();
    let mut rest = text;
    let mut number = 0;
    while !rest.is_empty() {
        number += 1;
        let Some((line, after)) = rest.split_once('\n') else {
            parsed.torn += 1;
            break;
        };
        rest = after;
        if line.is_empty() {
            continue;
        }
        parsed
            .events
            .push(parse_line(line).map_err(|reason| ParseError {
                line: number,
                reason,
                text: line.chars().take(200).collect(),
            })?);
    }
    Ok(parsed)
}

/// One line, without its newline.
fn parse_line(line: &str) -> Result<Stamped, &'static str> {
    let mut fields = line.split('\t');
    let at = fields
        .next()
        .and_then(|at| at.parse().ok())
        .ok_or("no time")?;
    let kind = fields.next().ok_or("no kind")?;
    let pairs: Vec<(&str, &str)> = fields.filter_map(|f| f.split_once('=')).collect();
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or("a field is missing")
    };
    let num = |key: &str| get(key)?.parse::<u64>().map_err(|_| "not a number");
    let small = |key: &str| get(key)?.parse::<u32>().map_err(|_| "not a number");
    let event = match kind {
        "hello" => Event::Hello {
            worker: small("worker")?,
            pid: small("pid")?,
        },
        "start" => Event::Start {
            token: num("token")?,
            requested: num("req")?,
        },
        "write" => Event::Write {
            token: num("token")?,
            phase: match get("phase")? {
                "start" => Phase::Start,
                "end" => Phase::End,
                _ => return Err("unknown phase"),
            },
            outcome: write_outcome(get("outcome")?)?,
        },
        "lost" => Event::Lost {
            token: num("token")?,
        },
        "end" => Event::End {
            token: num("token")?,
        },
        "skip" => Event::Skip {
            requested: num("req")?,
        },
        "error" => Event::Error {
            requested: num("req")?,
            message: get("msg").unwrap_or_default().to_owned(),
        },
        "spawn" => Event::Spawn {
            worker: small("worker")?,
            incarnation: small("inc")?,
            pid: small("pid")?,
        },
        "exit" => Event::Exit {
            worker: small("worker")?,
            incarnation: small("inc")?,
        },
        "fault" => Event::Fault {
            kind: match get("kind")? {
                "kill" => FaultKind::Kill {
                    worker: small("worker")?,
                },
                "pause" => FaultKind::Pause {
                    worker: small("worker")?,
                },
                "restart" => FaultKind::Restart {
                    data_lost: get("data")? == "lose",
                },
                "blackhole" => FaultKind::Blackhole,
                "reset" => FaultKind::Reset,
                _ => return Err("unknown fault"),
            },
            start: num("start")?,
            end: num("end")?,
        },
        _ => return Err("unknown kind"),
    };
    Ok(Stamped { at, event })
}

fn write_outcome(text: &str) -> Result<WriteOutcome, &'static str> {
    match text {
        "accepted" => Ok(WriteOutcome::Accepted),
        "failed" => Ok(WriteOutcome::Failed),
        _ => text
            .strip_prefix("rejected:")
            .and_then(|n| n.parse().ok())
            .map(|highest_seen| WriteOutcome::Rejected { highest_seen })
            .ok_or("unknown outcome"),
    }
}

/// Formats a fault for the schedule printed while the run goes on.
pub fn describe(kind: FaultKind) -> String {
    let mut text = String::new();
    let _ = match kind {
        FaultKind::Kill { worker } => write!(text, "kill -9 worker {worker}, then restart it"),
        FaultKind::Pause { worker } => write!(text, "SIGSTOP worker {worker}, then SIGCONT"),
        FaultKind::Restart { data_lost: true } => {
            write!(text, "restart the lock server, data lost")
        }
        FaultKind::Restart { data_lost: false } => {
            write!(text, "restart the lock server, data kept")
        }
        FaultKind::Blackhole => write!(text, "blackhole the proxy, then heal"),
        FaultKind::Reset => write!(text, "reset the proxy's connections"),
    };
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(event: Event) {
        let stamped = Stamped { at: 42, event };
        let parsed = parse_log(&stamped.to_line()).unwrap();
        assert_eq!(parsed.events, vec![stamped]);
        assert_eq!(parsed.torn, 0);
    }

    #[test]
    fn every_event_round_trips() {
        for event in [
            Event::Hello { worker: 1, pid: 9 },
            Event::Start {
                token: u64::MAX,
                requested: 3,
            },
            Event::Write {
                token: 5,
                phase: Phase::End,
                outcome: WriteOutcome::Rejected { highest_seen: 6 },
            },
            Event::Write {
                token: 5,
                phase: Phase::Start,
                outcome: WriteOutcome::Failed,
            },
            Event::Lost { token: 5 },
            Event::End { token: 5 },
            Event::Skip { requested: 1 },
            Event::Error {
                requested: 1,
                message: "a=b".into(),
            },
            Event::Spawn {
                worker: 1,
                incarnation: 2,
                pid: 3,
            },
            Event::Exit {
                worker: 1,
                incarnation: 2,
            },
            Event::Fault {
                kind: FaultKind::Restart { data_lost: true },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::Pause { worker: 4 },
                start: 1,
                end: 2,
            },
        ] {
            round_trip(event);
        }
    }

    #[test]
    fn an_error_message_stays_on_one_line() {
        let line = Stamped {
            at: 1,
            event: Event::Error {
                requested: 1,
                message: "two\nlines\tand a tab".into(),
            },
        }
        .to_line();
        assert_eq!(line.matches('\n').count(), 1);
        assert!(parse_log(&line).is_ok());
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_counted() {
        let text = "1\tend\ttoken=3\n2\tsta";
        let parsed = parse_log(text).unwrap();
        assert_eq!(parsed.events.len(), 1);
        assert_eq!(parsed.torn, 1);
    }

    #[test]
    fn a_bad_complete_line_is_an_error_with_its_number() {
        let err = parse_log("1\tend\ttoken=3\n2\tend\ttoken=x\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(parse_log("x\tend\n").is_err());
    }
}
