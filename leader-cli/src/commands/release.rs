//! `leader release --force NAME [--yes]`: free a lock whoever holds it. Without `--yes` it
//! shows the holder and asks on the terminal; with no terminal and no `--yes` it refuses
//! (exit 2) rather than hang or act. A free lock is not an error (exit 0). Only the holder
//! shown (with `--yes`, the one just read) is freed, by its fencing token: if another
//! acquisition took the lock meanwhile, nothing is released and the command says so
//! (exit 1).

use std::io::{self, BufRead, IsTerminal, Write};
use std::time::SystemTime;

use leader::ForceReleaseOutcome;
use serde::Serialize;

use crate::error::CliError;
use crate::output::{self, LeaderJson, Out};
use crate::session::Session;

/// How the release is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Confirm {
    /// `--yes`: already confirmed.
    Given,
    /// Ask on the terminal.
    Ask,
}

/// Checks the flags before anything is sent: `--force` always, and `--yes` when stdin is
/// not a terminal to ask on.
pub(crate) fn confirmation(force: bool, yes: bool) -> Result<Confirm, CliError> {
    if !force {
        return Err(CliError::Usage(
            "`release` frees a lock that another process holds (it finds out at its next renewal); pass --force to do it".into(),
        ));
    }
    if yes {
        return Ok(Confirm::Given);
    }
    if !io::stdin().is_terminal() {
        return Err(CliError::Usage(
            "`release --force` asks for confirmation and stdin is not a terminal; pass --yes to release without asking".into(),
        ));
    }
    Ok(Confirm::Ask)
}

/// The output of `release --json`.
#[derive(Debug, Serialize)]
struct Released<'a> {
    name: &'a str,
    /// `true` when a holder was removed, `false` when the lock was already free.
    released: bool,
    /// The holder that was removed.
    leader: Option<LeaderJson<'a>>,
}

pub(crate) fn run(
    session: &Session,
    name: &str,
    confirm: Confirm,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, lock) = session.lock(name)?;
    let state = elector.state(lock).map_err(|err| session.error(err))?;
    let Some(seen) = state.leader() else {
        return report(out, name, None, json);
    };
    if confirm == Confirm::Ask {
        let question = format!(
            "lock `{name}` is held by `{}` (fencing token {}, expires in {}). Release it? [y/N] ",
            seen.leader_id,
            seen.fencing_token,
            output::expires_in(seen, SystemTime::now())
        );
        if !ask(&question)? {
            return Err(CliError::Declined {
                name: name.to_owned(),
            });
        }
    }
    // Only the holder shown (or, with --yes, just read): one that took over since is kept.
    match elector
        .force_release_if(lock, seen.fencing_token)
        .map_err(|err| session.error(err))?
    {
        ForceReleaseOutcome::Released(lease) => report(out, name, Some(&lease), json),
        ForceReleaseOutcome::HolderChanged(now) => Err(CliError::HolderChanged {
            name: name.to_owned(),
            seen: holder(seen),
            now: holder(&now),
        }),
        _ => report(out, name, None, json),
    }
}

/// `` `node-a` (fencing token 7) ``.
fn holder(lease: &leader::LeaderLease) -> String {
    format!(
        "`{}` (fencing token {})",
        lease.leader_id, lease.fencing_token
    )
}

fn report(
    out: &mut Out,
    name: &str,
    freed: Option<&leader::LeaderLease>,
    json: bool,
) -> Result<(), CliError> {
    let now = SystemTime::now();
    if json {
        return out.json(&Released {
            name,
            released: freed.is_some(),
            leader: freed.map(|lease| LeaderJson::new(lease, now)),
        });
    }
    out.text(&match freed {
        Some(lease) => format!(
            "released `{name}`: it was held by `{}` (fencing token {})",
            lease.leader_id, lease.fencing_token
        ),
        None => format!("`{name}` is free: nothing to release"),
    })
}

/// Asks `question` on stderr and reads the answer from stdin: `y` or `yes` confirms.
fn ask(question: &str) -> Result<bool, CliError> {
    let mut stderr = io::stderr().lock();
    write!(stderr, "{question}")
        .and_then(|()| stderr.flush())
        .map_err(CliError::io("cannot ask for confirmation"))?;
    let mut answer = String::new();
    io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(CliError::io("cannot read the answer"))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
