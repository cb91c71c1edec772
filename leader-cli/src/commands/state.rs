//! `leader state NAME`: who holds a lock. A free lock is an answer, not an error.

use std::time::SystemTime;

use leader::LeaderState;

use crate::error::CliError;
use crate::output::{self, LockJson, Out};
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
