//! Reading a log back: [`parse_log`] and what it returns.

use super::{Event, FaultKind, Phase, ReadOutcome, Role, Stamped, WriteOutcome};

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
            lock: if get("lock").is_ok() {
                small("lock")?
            } else {
                0
            },
            token: num("token")?,
            requested: num("req")?,
            left: get("left").is_ok().then(|| num("left")).transpose()?,
            role: match get("role") {
                Err(_) => None,
                Ok("read") => Some(Role::Read),
                Ok("write") => Some(Role::Write),
                Ok(_) => return Err("unknown role"),
            },
        },
        "read" => Event::Read {
            token: num("token")?,
            phase: match get("phase")? {
                "start" => Phase::Start,
                "end" => Phase::End,
                _ => return Err("unknown phase"),
            },
            outcome: match get("seen")? {
                "none" => ReadOutcome::Seen(None),
                "failed" => ReadOutcome::Failed,
                seen => ReadOutcome::Seen(Some(seen.parse().map_err(|_| "not a number")?)),
            },
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
                "member-kill" => FaultKind::MemberKill {
                    member: member(get("member")?)?,
                    leader: leader(get("role")?)?,
                },
                "member-pause" => FaultKind::MemberPause {
                    member: member(get("member")?)?,
                    leader: leader(get("role")?)?,
                },
                "member-cut" => FaultKind::MemberCut {
                    member: member(get("member")?)?,
                },
                "wipe" => FaultKind::Wipe { rows: num("rows")? },
                "busy" => FaultKind::Busy,
                "server-kill" => FaultKind::ServerKill,
                "terminate" => FaultKind::Terminate {
                    sessions: num("sessions")?,
                },
                "row-lock" => FaultKind::RowLock { rows: num("rows")? },
                "failover" => FaultKind::Failover {
                    data_lost: get("data")? == "lose",
                },
                _ => return Err("unknown fault"),
            },
            start: num("start")?,
            end: num("end")?,
        },
        _ => return Err("unknown kind"),
    };
    Ok(Stamped { at, event })
}

fn member(text: &str) -> Result<usize, &'static str> {
    text.parse().map_err(|_| "not a number")
}

fn leader(role: &str) -> Result<bool, &'static str> {
    match role {
        "leader" => Ok(true),
        "follower" => Ok(false),
        _ => Err("unknown role"),
    }
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
                lock: 3,
                token: u64::MAX,
                requested: 3,
                left: None,
                role: None,
            },
            Event::Start {
                lock: 0,
                token: 7,
                requested: 3,
                left: Some(999_000),
                role: Some(Role::Read),
            },
            Event::Start {
                lock: 2,
                token: 8,
                requested: 3,
                left: None,
                role: Some(Role::Write),
            },
            Event::Read {
                token: 5,
                phase: Phase::Start,
                outcome: ReadOutcome::Seen(Some(4)),
            },
            Event::Read {
                token: 5,
                phase: Phase::End,
                outcome: ReadOutcome::Seen(None),
            },
            Event::Read {
                token: 5,
                phase: Phase::End,
                outcome: ReadOutcome::Failed,
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
            Event::Fault {
                kind: FaultKind::MemberKill {
                    member: 2,
                    leader: true,
                },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::MemberPause {
                    member: 0,
                    leader: false,
                },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::MemberCut { member: 1 },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::Wipe { rows: 3 },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::Busy,
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::ServerKill,
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::Terminate { sessions: 4 },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::RowLock { rows: 8 },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::Failover { data_lost: true },
                start: 1,
                end: 2,
            },
            Event::Fault {
                kind: FaultKind::Failover { data_lost: false },
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
