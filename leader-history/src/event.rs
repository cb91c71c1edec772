//! The event model of a lock history: one [`Event`] per line of a JSON-lines trace.

use serde::{Deserialize, Serialize};

/// The clock an event's time was read from.
///
/// The checker puts every event on one time line, whatever its clock: a trace whose
/// nodes' wall clocks disagree by more than the gaps between their events can show
/// overlaps that did not happen, or hide ones that did. The clock is recorded so that a
/// reader (and a later checker) can tell which times may be compared exactly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// The wall clock of the node that logged the event.
    #[default]
    Wall,
    /// The lock store's (or the fenced resource's) clock.
    Store,
}

/// One event of a history: when, by which clock, logged by which node, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When it happened, in microseconds (since the Unix epoch for a wall clock).
    pub at: u64,
    /// The clock `at` was read from; `wall` when absent.
    #[serde(default)]
    pub clock: Clock,
    /// The node (process) that logged it; absent for the store's, the fenced resource's
    /// and the fault injector's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// What happened.
    #[serde(flatten)]
    pub what: What,
}

/// What an [`Event`] says happened; its `event` field in the JSON form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum What {
    /// The node process began (or began again after a crash).
    NodeStarted {
        /// Its process id, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        /// Its name (a node id), if known: for a reader of the report.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// The node process ended (exited, or was killed): its open sections end here.
    NodeStopped,
    /// An acquire call began.
    AcquireRequested {
        /// The lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
    },
    /// An acquire call was answered (or its answer was lost).
    AcquireAnswered {
        /// The lock's index (0 when there is one lock, or when the log does not say).
        #[serde(default)]
        lock: u32,
        /// When the call began, µs.
        requested: u64,
        /// What it answered.
        answer: Answer,
    },
    /// The node began to act as the holder of `lock` with `token`.
    ActionStarted {
        /// The lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
        /// The lease's fencing token.
        token: u64,
        /// When the acquire call that got the lease began, µs; absent: the node's last
        /// `acquire-requested` of this lock, else the action's own time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested: Option<u64>,
        /// How much of the lease was left when the action began, µs, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        left_us: Option<u64>,
        /// The lease's deadline as the node knew it, on the clock of `at`, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline: Option<u64>,
        /// For a read/write lock, which side the node holds: `read` (shared with other
        /// readers) or `write`; absent: an exclusive lock's section (a write, in effect).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<Role>,
    },
    /// The node stopped acting as the holder (its action ended).
    ActionEnded {
        /// The lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
        /// The lease's fencing token.
        token: u64,
    },
    /// The node took a renewal of its lease as granted.
    Renewed {
        /// The lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
        /// The lease's fencing token.
        token: u64,
        /// When the renewal was sent, on the clock of `at`, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested: Option<u64>,
        /// The lease's new deadline as the node knows it, on the clock of `at`, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline: Option<u64>,
    },
    /// A name for a lock's index, for a reader of the report (a trace of named locks
    /// numbers them in the order it met them).
    LockNamed {
        /// The index.
        lock: u32,
        /// The lock's name.
        name: String,
    },
    /// The lease was released.
    Released {
        /// The lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
        /// The lease's fencing token.
        token: u64,
    },
    /// The node learnt its lease was lost: it stopped acting as the holder here.
    LeaseLost {
        /// The lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
        /// The lost lease's fencing token.
        token: u64,
    },
    /// A write to the fenced resource was accepted. Logged by a node, it is that node's
    /// view; logged without a node (by the resource, in the order it accepted them), it
    /// is what the stale-write check reads.
    WriteAccepted {
        /// The lock whose token it carried.
        #[serde(default)]
        lock: u32,
        /// The token it carried.
        token: u64,
        /// Which write of the section, if the writer says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<Phase>,
    },
    /// A write to the fenced resource was refused by its fence.
    WriteRejected {
        /// The lock whose token it carried.
        #[serde(default)]
        lock: u32,
        /// The token it carried.
        token: u64,
        /// Which write of the section, if the writer says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<Phase>,
        /// The highest token the fence had seen, if it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        highest_seen: Option<u64>,
    },
    /// A reader of a read/write lock read the fenced resource: `seen` is the token of the
    /// last write the resource had accepted for the lock (absent: none yet, or the read
    /// failed). Logged by the reader inside its section; the stale-read check reads these.
    ResourceRead {
        /// The lock whose token the reader holds.
        #[serde(default)]
        lock: u32,
        /// The reader's token.
        token: u64,
        /// Which read of the section, if the reader says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<Phase>,
        /// The token of the last accepted write it saw, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen: Option<u64>,
        /// Whether the read failed (no answer): it saw nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        failed: bool,
    },
    /// A write to the fenced resource failed (no answer).
    WriteFailed {
        /// The lock whose token it carried.
        #[serde(default)]
        lock: u32,
        /// The token it carried.
        token: u64,
        /// Which write of the section, if the writer says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<Phase>,
    },
    /// A fault was injected, from `start` to `end` (µs).
    Fault {
        /// What it did.
        fault: FaultKind,
        /// When it began.
        start: u64,
        /// When it was over.
        end: u64,
    },
    /// A scheduled job's run of a tick began on the node (`leader-schedule`: after its
    /// claim of the tick was written). A tick runs at most once, fleet-wide.
    TickRan {
        /// The job's lock's index (0 when there is one lock).
        #[serde(default)]
        lock: u32,
        /// The tick, in ms since the Unix epoch (as the job's record keeps it).
        tick: u64,
        /// The fencing token of the job's lock the run held.
        token: u64,
        /// When the claim's write was sent, on the clock of `at`, if known: a data loss
        /// after it may have lost the claim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claimed: Option<u64>,
        /// A rerun of a tick whose run did not finish (`Delivery::AtLeastOnce`): allowed
        /// to run the tick again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        rerun: bool,
    },
}

/// What an acquire call answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "kebab-case")]
pub enum Answer {
    /// A lease, with its fencing token.
    Lease {
        /// The fencing token.
        token: u64,
    },
    /// Another node held the lock.
    Refused,
    /// The answer was lost (an error, a timeout): the call may or may not have taken the
    /// lock.
    Indeterminate {
        /// The error, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// Which side of a read/write lock a section holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Shared: read sections may overlap each other.
    Read,
    /// Exclusive: a write section overlaps no other section of its lock.
    Write,
}

/// Which of a section's resource writes (or reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Right after the acquisition.
    Start,
    /// After the work.
    End,
}

/// What a fault did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultKind {
    /// A node killed with SIGKILL, then started again.
    Kill {
        /// The node.
        worker: u32,
    },
    /// A node stopped (SIGSTOP, a long GC pause, a VM freeze), then continued.
    Pause {
        /// The node.
        worker: u32,
    },
    /// The lock server killed and started again.
    Restart {
        /// Whether it came back without its data.
        data_lost: bool,
    },
    /// The network to the store dropped all traffic (a partition), then healed.
    Blackhole,
    /// Every open connection to the store was reset.
    Reset,
    /// One member of a replicated store (etcd) killed, then started again on its data.
    MemberKill {
        /// Its index in the cluster.
        member: usize,
        /// Whether it was the leader when it was killed.
        leader: bool,
    },
    /// One member of a replicated store stopped, then continued.
    MemberPause {
        /// Its index in the cluster.
        member: usize,
        /// Whether it was the leader when it was stopped.
        leader: bool,
    },
    /// One member's network dropped all traffic, then healed; it stayed in the cluster.
    MemberCut {
        /// Its index in the cluster.
        member: usize,
    },
    /// Every lock row deleted by hand: data lost.
    Wipe {
        /// How many rows went.
        rows: u64,
    },
    /// Another connection held an exclusive transaction on the store (SQLite's file).
    Busy,
    /// The server killed with SIGKILL, down a while, then started on its data.
    ServerKill,
    /// The server ended the client sessions.
    Terminate {
        /// How many sessions it ended.
        sessions: u64,
    },
    /// Another session kept every lock row locked for moments shorter than a third of
    /// the lease: a slow contender.
    RowLock {
        /// How many rows it locked.
        rows: u64,
    },
    /// The primary killed and its replica promoted.
    Failover {
        /// Whether the promoted replica may lack acknowledged writes (asynchronous
        /// replication).
        data_lost: bool,
    },
}

impl FaultKind {
    /// Its name (the `kind` of its JSON form).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill { .. } => "kill",
            FaultKind::Pause { .. } => "pause",
            FaultKind::Restart { .. } => "restart",
            FaultKind::Blackhole => "blackhole",
            FaultKind::Reset => "reset",
            FaultKind::MemberKill { .. } => "member-kill",
            FaultKind::MemberPause { .. } => "member-pause",
            FaultKind::MemberCut { .. } => "member-cut",
            FaultKind::Wipe { .. } => "wipe",
            FaultKind::Busy => "busy",
            FaultKind::ServerKill => "server-kill",
            FaultKind::Terminate { .. } => "terminate",
            FaultKind::RowLock { .. } => "row-lock",
            FaultKind::Failover { .. } => "failover",
        }
    }

    /// Whether it loses data the lock store had acknowledged: a restart of a server
    /// without persistence, rows deleted by hand, or a failover to an asynchronous
    /// replica (which may not have received the master's last writes; a synchronous
    /// standby has them all). Only such a fault can explain two
    /// holders at once (with a pause of a holder, which makes a client act past its
    /// lease); every other fault the product must ride out.
    pub fn loses_data(self) -> bool {
        match self {
            FaultKind::Restart { data_lost } | FaultKind::Failover { data_lost } => data_lost,
            FaultKind::Wipe { .. } => true,
            FaultKind::Kill { .. }
            | FaultKind::Pause { .. }
            | FaultKind::Blackhole
            | FaultKind::Reset
            | FaultKind::MemberKill { .. }
            | FaultKind::MemberPause { .. }
            | FaultKind::MemberCut { .. }
            | FaultKind::Busy
            | FaultKind::ServerKill
            | FaultKind::Terminate { .. }
            | FaultKind::RowLock { .. } => false,
        }
    }
}
