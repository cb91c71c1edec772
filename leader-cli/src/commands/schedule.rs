//! `leader schedule JOB`: a scheduled job's last run, as its record keeps it, who holds
//! its lock now, and its next tick. A job that never ran is an answer, not an error.

use std::time::SystemTime;

use leader::schedule::{RunRecord, Schedule, read_run_record};
use serde::Serialize;

use crate::error::CliError;
use crate::output::{self, Out};
use crate::session::Session;

/// A job as JSON: `{"name", "last_run": {...}|null, "lock_holder": ...|null, "next_tick": ...|null}`.
#[derive(Debug, Serialize)]
struct JobJson<'a> {
    name: &'a str,
    last_run: Option<RunJson<'a>>,
    /// The node holding the job's lock now (running a tick), if any.
    lock_holder: Option<&'a str>,
    next_tick: Option<String>,
}

#[derive(Debug, Serialize)]
struct RunJson<'a> {
    tick: String,
    outcome: &'static str,
    node: &'a str,
    fencing_token: u64,
    started_at: String,
    finished_at: Option<String>,
    schedule: &'a str,
    runs: u64,
}

pub(crate) fn run(
    session: &Session,
    name: &str,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, name) = session.lock(name)?;
    let key = elector.lock_key(name).map_err(|err| session.error(err))?;
    let record = read_run_record(&**elector.backend(), &key).map_err(|err| match err {
        leader::schedule::ScheduleError::Leader(err) => session.error(err),
        other => session.error(leader::Error::Backend(leader::backend::BackendError::new(
            "schedule",
            key.as_str(),
            leader::backend::BackendErrorKind::Permanent,
            other.to_string(),
        ))),
    })?;
    let state = elector.state(name).map_err(|err| session.error(err))?;
    let holder = state.leader().map(|lease| lease.leader_id.as_str());
    let now = SystemTime::now();
    let next = record.as_ref().and_then(|r| next_tick(r, now));
    if json {
        out.json(&JobJson {
            name,
            last_run: record.as_ref().map(run_json),
            lock_holder: holder,
            next_tick: next.map(output::timestamp),
        })
    } else {
        out.text(&describe(name, record.as_ref(), holder, next))
    }
}

/// The next tick of the schedule the record names (`None` for a text this version cannot
/// read).
fn next_tick(record: &RunRecord, now: SystemTime) -> Option<SystemTime> {
    let schedule: Schedule = record.schedule.parse().ok()?;
    schedule.next_after(now)
}

fn run_json(record: &RunRecord) -> RunJson<'_> {
    RunJson {
        tick: output::timestamp(record.tick()),
        outcome: record.state.as_str(),
        node: &record.node,
        fencing_token: record.fencing_token,
        started_at: output::timestamp(record.started_at()),
        finished_at: record.finished_at().map(output::timestamp),
        schedule: &record.schedule,
        runs: record.runs,
    }
}

/// Key/value lines.
fn describe(
    name: &str,
    record: Option<&RunRecord>,
    holder: Option<&str>,
    next: Option<SystemTime>,
) -> String {
    let mut lines = vec![("job", name.to_owned())];
    match record {
        None => lines.push(("last run", "never".to_owned())),
        Some(record) => {
            lines.push(("schedule", record.schedule.clone()));
            lines.push(("last tick", output::timestamp(record.tick())));
            lines.push(("outcome", record.state.as_str().to_owned()));
            lines.push(("node", record.node.clone()));
            lines.push(("token", record.fencing_token.to_string()));
            lines.push(("started", output::timestamp(record.started_at())));
            if let Some(finished) = record.finished_at() {
                lines.push(("finished", output::timestamp(finished)));
            }
            lines.push(("runs", record.runs.to_string()));
        }
    }
    lines.push((
        "lock",
        holder.map_or_else(|| "free".to_owned(), |h| format!("held by {h}")),
    ));
    if let Some(next) = next {
        lines.push(("next tick", output::timestamp(next)));
    }
    lines
        .into_iter()
        .map(|(key, value)| format!("{key:<11}{value}\n"))
        .collect()
}
