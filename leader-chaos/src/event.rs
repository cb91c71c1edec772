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

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

mod parse;

pub use parse::{ParseError, ParsedLog, parse_log};

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

/// What a fault did: the public model's (the checker reads it), re-exported.
pub use leader_history::FaultKind;
/// The side of a read/write lock a section holds: the public model's, re-exported.
pub use leader_history::Role;

/// What a reader's read of the resource answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// The token of the last write the resource had accepted for the lock (`None`: none
    /// yet).
    Seen(Option<u64>),
    /// The call failed.
    Failed,
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
        /// The lock's index (`chaos-<lock>`); absent from a line means 0.
        lock: u32,
        /// The fencing token.
        token: u64,
        /// Wall-clock µs when the call that acquired began.
        requested: u64,
        /// How much of the lease was left when the action began, µs (measured just
        /// before the line's time was read, so never less than it was); absent from a
        /// line (a broken worker's) means unknown.
        left: Option<u64>,
        /// The side of a read/write lock held (`role=read|write`); absent: an exclusive
        /// lock.
        role: Option<Role>,
    },
    /// A reader's read of the resource (instead of a writer's write).
    Read {
        /// The reader's token.
        token: u64,
        /// Which read of the section.
        phase: Phase,
        /// What the resource answered.
        outcome: ReadOutcome,
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
            Event::Start {
                lock,
                token,
                requested,
                left,
                role,
            } => {
                write!(f, "start\tlock={lock}\ttoken={token}\treq={requested}")?;
                if let Some(left) = left {
                    write!(f, "\tleft={left}")?;
                }
                match role {
                    Some(Role::Read) => f.write_str("\trole=read"),
                    Some(Role::Write) => f.write_str("\trole=write"),
                    None => Ok(()),
                }
            }
            Event::Read {
                token,
                phase,
                outcome,
            } => {
                let phase = match phase {
                    Phase::Start => "start",
                    Phase::End => "end",
                };
                write!(f, "read\ttoken={token}\tphase={phase}\tseen=")?;
                match outcome {
                    ReadOutcome::Seen(Some(seen)) => write!(f, "{seen}"),
                    ReadOutcome::Seen(None) => f.write_str("none"),
                    ReadOutcome::Failed => f.write_str("failed"),
                }
            }
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
                    FaultKind::MemberKill { member, leader } => {
                        write!(f, "member-kill\tmember={member}\trole={}", role(*leader))?;
                    }
                    FaultKind::MemberPause { member, leader } => {
                        write!(f, "member-pause\tmember={member}\trole={}", role(*leader))?;
                    }
                    FaultKind::MemberCut { member } => write!(f, "member-cut\tmember={member}")?,
                    FaultKind::Wipe { rows } => write!(f, "wipe\trows={rows}\tdata=lose")?,
                    FaultKind::Busy => f.write_str("busy")?,
                    FaultKind::ServerKill => f.write_str("server-kill")?,
                    FaultKind::Terminate { sessions } => {
                        write!(f, "terminate\tsessions={sessions}")?;
                    }
                    FaultKind::RowLock { rows } => write!(f, "row-lock\trows={rows}")?,
                    FaultKind::Failover { data_lost } => {
                        let data = if *data_lost { "lose" } else { "keep" };
                        write!(f, "failover\tdata={data}")?;
                    }
                }
                write!(f, "\tstart={start}\tend={end}")
            }
        }
    }
}

/// Formats a fault for the schedule printed while the run goes on.
pub fn describe(kind: FaultKind) -> String {
    match kind {
        FaultKind::Kill { worker } => format!("kill -9 worker {worker}, then restart it"),
        FaultKind::Pause { worker } => format!("SIGSTOP worker {worker}, then SIGCONT"),
        FaultKind::Restart { data_lost: true } => "restart the lock server, data lost".into(),
        FaultKind::Restart { data_lost: false } => "restart the lock server, data kept".into(),
        FaultKind::Blackhole => "blackhole the proxy, then heal".into(),
        FaultKind::Reset => "reset the proxy's connections".into(),
        FaultKind::MemberKill { member, leader } => format!(
            "kill -9 etcd member m{member} ({}), then restart it",
            role(leader)
        ),
        FaultKind::MemberPause { member, leader } => format!(
            "SIGSTOP etcd member m{member} ({}), then SIGCONT",
            role(leader)
        ),
        FaultKind::MemberCut { member } => {
            format!("blackhole etcd member m{member}'s proxy, then heal")
        }
        FaultKind::Wipe { .. } => "delete every lock row by hand, data lost".into(),
        FaultKind::Busy => "hold an exclusive transaction on the database file".into(),
        FaultKind::ServerKill => "kill -9 the server, then start it on its data".into(),
        FaultKind::Terminate { .. } => "pg_terminate_backend the client sessions".into(),
        FaultKind::RowLock { .. } => {
            "lock every lock row from another session five times for a moment".into()
        }
        FaultKind::Failover { data_lost: true } => {
            "kill -9 the primary, promote its asynchronous replica, data maybe lost".into()
        }
        FaultKind::Failover { data_lost: false } => {
            "kill -9 the primary, promote its synchronous standby, data kept".into()
        }
    }
}

/// The `role=` value of a member fault.
fn role(leader: bool) -> &'static str {
    if leader { "leader" } else { "follower" }
}
