//! `leader state NAME`: who holds a lock. A free lock is an answer, not an error.

use std::time::SystemTime;

use leader::{LeaderLease, LeaderState, ReadWriteLocks, SharedState};

use crate::error::CliError;
use crate::output::{self, LockJson, Out, RwJson};
use crate::session::Session;

pub(crate) fn run(
    session: &Session,
    name: &str,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, name) = session.lock(name)?;
    let state = elector.state(name).map_err(|err| session.error(err))?;
    let now = SystemTime::now();
    if json {
        out.json(&LockJson::new(&state, now))
    } else {
        out.text(&describe(&state, now))
    }
}

/// `leader state --rw NAME`: the read/write lock of that name.
pub(crate) fn run_rw(
    session: &Session,
    name: &str,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, name) = session.lock(name)?;
    let state = ReadWriteLocks::new(&elector)
        .state(name)
        .map_err(|err| session.error(err))?;
    let now = SystemTime::now();
    if json {
        out.json(&RwJson::new(&state, now))
    } else {
        out.text(&describe_rw(&state, now))
    }
}

/// Key/value lines of a read/write lock: name and status (`free`, `write`, `read`), then the
/// writer, each reader and a waiting writer.
fn describe_rw(state: &SharedState, now: SystemTime) -> String {
    let holder = |lease: &LeaderLease| {
        format!(
            "{} token {} expires {} (in {})",
            lease.leader_id,
            lease.fencing_token,
            output::timestamp(lease.expires_at),
            output::expires_in(lease, now)
        )
    };
    let mut lines = vec![
        ("name", state.lock_name.clone()),
        ("status", output::rw_status(state).to_owned()),
    ];
    if let Some(writer) = &state.writer {
        lines.push(("writer", holder(writer)));
    }
    for reader in &state.readers {
        lines.push(("reader", holder(reader)));
    }
    if let Some(intent) = &state.intent {
        lines.push((
            "waiting",
            format!(
                "{} (writer; new readers wait until {})",
                intent.leader_id,
                output::timestamp(intent.expires_at)
            ),
        ));
    }
    lines
        .into_iter()
        .map(|(key, value)| format!("{key:<10}{value}\n"))
        .collect()
}

/// Key/value lines: name and status, then the holder's details when held.
fn describe(state: &LeaderState, now: SystemTime) -> String {
    let mut lines = vec![("name", state.lock_name().to_owned())];
    match state.leader() {
        None => lines.push(("status", "free".to_owned())),
        Some(lease) => {
            lines.push(("status", "held".to_owned()));
            lines.push(("leader", lease.leader_id.clone()));
            lines.push(("token", lease.fencing_token.to_string()));
            lines.push(("acquired", output::timestamp(lease.acquired_at)));
            lines.push((
                "expires",
                format!(
                    "{} (in {})",
                    output::timestamp(lease.expires_at),
                    output::expires_in(lease, now)
                ),
            ));
        }
    }
    lines
        .into_iter()
        .map(|(key, value)| format!("{key:<10}{value}\n"))
        .collect()
}
