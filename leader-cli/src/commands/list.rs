//! `leader list [--prefix P]`: the held locks, all pages, each name once, sorted by name.

use std::collections::BTreeMap;
use std::time::SystemTime;

use leader::{LeaderState, ListRequest};

use crate::error::CliError;
use crate::output::{self, LockJson, Out};
use crate::session::Session;

pub(crate) fn run(
    session: &Session,
    prefix: &str,
    page_size: u32,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let locks = fetch(session, prefix, page_size)?;
    let now = SystemTime::now();
    if json {
        let locks: Vec<LockJson<'_>> = locks.values().map(|s| LockJson::new(s, now)).collect();
        return out.json(&locks);
    }
    if locks.is_empty() {
        return out.text(&match prefix {
            "" => "no locks held".to_owned(),
            prefix => format!("no locks held under the prefix `{prefix}`"),
        });
    }
    let rows: Vec<Vec<String>> = locks.values().map(|state| row(state, now)).collect();
    out.text(&output::table(
        &["NAME", "LEADER", "TOKEN", "EXPIRES IN"],
        &rows,
    ))
}

/// Every page under `prefix`. A name seen twice (a Redis SCAN may return a key again)
/// keeps its last snapshot.
fn fetch(
    session: &Session,
    prefix: &str,
    page_size: u32,
) -> Result<BTreeMap<String, LeaderState>, CliError> {
    let limit = usize::try_from(page_size).unwrap_or(ListRequest::DEFAULT_LIMIT);
    let mut locks = BTreeMap::new();
    let mut request = ListRequest::new(prefix).with_limit(limit);
    loop {
        let page = session
            .elector()
            .list(request.clone())
            .map_err(|err| session.error(err))?;
        for state in page.locks {
            locks.insert(state.lock_name().to_owned(), state);
        }
        match page.next {
            // A cursor that does not move would page forever.
            Some(cursor) if request.cursor.as_ref() == Some(&cursor) => {
                return Err(CliError::CursorStuck {
                    url: session.url().to_owned(),
                });
            }
            Some(cursor) => request = request.after(cursor),
            None => return Ok(locks),
        }
    }
}

fn row(state: &LeaderState, now: SystemTime) -> Vec<String> {
    match state.leader() {
        Some(lease) => vec![
            state.lock_name().to_owned(),
            lease.leader_id.clone(),
            lease.fencing_token.to_string(),
            output::expires_in(lease, now),
        ],
        None => vec![
            state.lock_name().to_owned(),
            "-".into(),
            "-".into(),
            "-".into(),
        ],
    }
}
