//! Rendering: tables and key/value lines for people, JSON for programs. Times are RFC 3339
//! UTC with milliseconds; remaining leases are durations (`29.8s`, `4m 10s`).

use std::io::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader::{LeaderLease, LeaderState, SharedState};
use serde::Serialize;

use crate::error::CliError;

/// A lock as JSON: `{"name", "status": "held"|"free", "leader": {...}|null}`.
#[derive(Debug, Serialize)]
pub(crate) struct LockJson<'a> {
    pub(crate) name: &'a str,
    pub(crate) status: &'static str,
    pub(crate) leader: Option<LeaderJson<'a>>,
}

/// A holder as JSON.
#[derive(Debug, Serialize)]
pub(crate) struct LeaderJson<'a> {
    /// The holder's node id.
    pub(crate) leader_id: &'a str,
    pub(crate) fencing_token: u64,
    pub(crate) acquired_at: String,
    pub(crate) expires_at: String,
    /// Milliseconds until the lease expires (0 once past).
    pub(crate) expires_in_ms: u64,
}

impl<'a> LockJson<'a> {
    pub(crate) fn new(state: &'a LeaderState, now: SystemTime) -> Self {
        LockJson {
            name: state.lock_name(),
            status: if state.leader().is_some() {
                "held"
            } else {
                "free"
            },
            leader: state.leader().map(|lease| LeaderJson::new(lease, now)),
        }
    }
}

/// A read/write lock as JSON: `{"name", "status": "free"|"read"|"write", "writer": {...}|null,
/// "readers": [...], "waiting_writer": {"leader_id", "expires_at"}|null}`.
#[derive(Debug, Serialize)]
pub(crate) struct RwJson<'a> {
    pub(crate) name: &'a str,
    pub(crate) status: &'static str,
    pub(crate) writer: Option<LeaderJson<'a>>,
    pub(crate) readers: Vec<LeaderJson<'a>>,
    pub(crate) waiting_writer: Option<IntentJson<'a>>,
}

/// A waiting writer as JSON.
#[derive(Debug, Serialize)]
pub(crate) struct IntentJson<'a> {
    pub(crate) leader_id: &'a str,
    pub(crate) expires_at: String,
}

impl<'a> RwJson<'a> {
    pub(crate) fn new(state: &'a SharedState, now: SystemTime) -> Self {
        RwJson {
            name: &state.lock_name,
            status: rw_status(state),
            writer: state
                .writer
                .as_ref()
                .map(|lease| LeaderJson::new(lease, now)),
            readers: state
                .readers
                .iter()
                .map(|lease| LeaderJson::new(lease, now))
                .collect(),
            waiting_writer: state.intent.as_ref().map(|intent| IntentJson {
                leader_id: &intent.leader_id,
                expires_at: timestamp(intent.expires_at),
            }),
        }
    }
}

/// `write` while a writer holds the lock, `read` while readers do, else `free`.
pub(crate) fn rw_status(state: &SharedState) -> &'static str {
    if state.writer.is_some() {
        "write"
    } else if state.readers.is_empty() {
        "free"
    } else {
        "read"
    }
}

impl<'a> LeaderJson<'a> {
    pub(crate) fn new(lease: &'a LeaderLease, now: SystemTime) -> Self {
        LeaderJson {
            leader_id: &lease.leader_id,
            fencing_token: lease.fencing_token,
            acquired_at: timestamp(lease.acquired_at),
            expires_at: timestamp(lease.expires_at),
            expires_in_ms: u64::try_from(remaining(lease, now).as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// `time` as RFC 3339 UTC with milliseconds (`2026-11-30T21:22:09.123Z`).
///
/// RFC 3339 writes the years 1970 (here) to 9999 only, and a store can return other times
/// (a hand-edited record, a lease of millennia, which SQLite and Redis keep as asked): such
/// a time is written as its Unix time instead (`unix time -1.5s (before 1970)`), so no
/// record can stop a command.
pub(crate) fn timestamp(time: SystemTime) -> String {
    use std::fmt::Write as _;
    let since_epoch = time.duration_since(UNIX_EPOCH);
    let mut text = String::new();
    // humantime's formatter panics before the epoch and fails from the year 10000 on.
    if since_epoch.is_ok() && write!(text, "{}", humantime::format_rfc3339_millis(time)).is_ok() {
        return text;
    }
    match since_epoch {
        Ok(after) => format!("unix time {}s (after the year 9999)", seconds(after)),
        Err(before) => format!("unix time -{}s (before 1970)", seconds(before.duration())),
    }
}

/// Whole seconds, with up to three decimals when there are milliseconds (`1.5`, `12`).
fn seconds(duration: Duration) -> String {
    let millis = duration.subsec_millis();
    if millis == 0 {
        return duration.as_secs().to_string();
    }
    let fraction = format!("{millis:03}");
    format!("{}.{}", duration.as_secs(), fraction.trim_end_matches('0'))
}

/// How long `lease` still runs after `now` (zero once past).
pub(crate) fn remaining(lease: &LeaderLease, now: SystemTime) -> Duration {
    lease
        .expires_at
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
}

/// A lease's remaining time for a table: `29.8s`, `4m 10s`, `2h 5m`, or `expired`.
pub(crate) fn expires_in(lease: &LeaderLease, now: SystemTime) -> String {
    let left = remaining(lease, now);
    if left.is_zero() {
        return "expired".into();
    }
    let secs = left.as_secs();
    match secs {
        0..60 => format!("{:.1}s", left.as_secs_f64()),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
    }
}

/// Left-aligned columns separated by two spaces, the last column unpadded.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|cell| cell.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|cell| (*cell).to_owned()).collect();
    let mut text = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if index == last {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// Standard output, line by line (each line is flushed: a reader of `watch` or `acquire`
/// sees it at once).
#[derive(Debug)]
pub(crate) struct Out {
    stdout: io::Stdout,
}

impl Out {
    pub(crate) fn new() -> Self {
        Out {
            stdout: io::stdout(),
        }
    }

    /// Writes `text` (one or more lines; a newline is added when missing).
    pub(crate) fn text(&mut self, text: &str) -> Result<(), CliError> {
        let mut lock = self.stdout.lock();
        let newline = if text.ends_with('\n') { "" } else { "\n" };
        write!(lock, "{text}{newline}")
            .and_then(|()| lock.flush())
            .map_err(CliError::io("cannot write the output"))
    }

    /// Writes `value` as one line of JSON.
    pub(crate) fn json(&mut self, value: &impl Serialize) -> Result<(), CliError> {
        let line = serde_json::to_string(value).map_err(|err| CliError::Io {
            what: "cannot write JSON",
            source: err.into(),
        })?;
        self.text(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(expires_in: Duration) -> (LeaderLease, SystemTime) {
        let now = UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        (LeaderLease::new("node-a", now, now + expires_in, 7), now)
    }

    #[test]
    fn remaining_leases_read_well() {
        for (left, text) in [
            (Duration::from_millis(29_840), "29.8s"),
            (Duration::from_secs(250), "4m 10s"),
            (Duration::from_secs(7500), "2h 5m"),
            (Duration::ZERO, "expired"),
        ] {
            let (lease, now) = lease(left);
            assert_eq!(expires_in(&lease, now), text);
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let (lease, _) = lease(Duration::ZERO);
        assert_eq!(timestamp(lease.acquired_at), "2026-11-30T00:53:20.000Z");
    }

    #[test]
    fn times_out_of_the_rfc3339_range_are_written_without_panicking() {
        let far = UNIX_EPOCH + Duration::from_secs(253_402_300_800 + 86_400);
        assert_eq!(
            timestamp(far),
            "unix time 253402387200s (after the year 9999)"
        );
        let before = UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(timestamp(before), "unix time -1.5s (before 1970)");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let last = UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
        assert_eq!(timestamp(last), "9999-12-31T23:59:59.999Z");
        // The most extreme lease a store can return: JSON and the table show it.
        let forever = LeaderLease::new(
            "n",
            before,
            UNIX_EPOCH + Duration::from_secs(i64::MAX as u64),
            1,
        );
        let json = LeaderJson::new(&forever, UNIX_EPOCH);
        assert!(json.expires_at.contains("after the year 9999"), "{json:?}");
        assert!(json.acquired_at.contains("before 1970"), "{json:?}");
        assert!(expires_in(&forever, UNIX_EPOCH).ends_with('m'));
    }

    #[test]
    fn tables_align_columns() {
        let text = table(
            &["NAME", "LEADER"],
            &[
                vec!["a-long-name".into(), "n".into()],
                vec!["b".into(), "node".into()],
            ],
        );
        assert_eq!(
            text,
            "NAME         LEADER\na-long-name  n\nb            node\n"
        );
    }
}
