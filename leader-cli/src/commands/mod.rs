//! The commands, one per file, and the dispatch.

mod acquire;
mod list;
mod release;
mod schedule;
mod state;
mod watch;

use crate::cli::{Cli, Command};
use crate::error::CliError;
use crate::output::Out;
use crate::session::{self, Session};

/// Runs the command `cli` names.
pub(crate) fn run(cli: Cli) -> Result<(), CliError> {
    let Cli {
        url,
        tenant,
        json,
        command,
    } = cli;
    let url = url.as_deref();
    let tenant = tenant.as_deref();
    let mut out = Out::new();
    match command {
        Command::State { name, rw } => {
            let session = Session::open(url, tenant, session::read_options())?;
            if rw {
                state::run_rw(&session, &name, json, &mut out)
            } else {
                state::run(&session, &name, json, &mut out)
            }
        }
        Command::List { prefix, page_size } => {
            let session = Session::open(url, tenant, session::read_options())?;
            list::run(&session, &prefix, page_size, json, &mut out)
        }
        Command::Watch { name, interval } => {
            let session = Session::open(url, tenant, session::read_options())?;
            watch::run(&session, &name, interval, json, &mut out)
        }
        Command::Schedule { name } => {
            let session = Session::open(url, tenant, session::read_options())?;
            schedule::run(&session, &name, json, &mut out)
        }
        Command::Release { force, yes, name } => {
            // Refuse before connecting: nothing is sent without both answers.
            let confirm = release::confirmation(force, yes)?;
            let session = Session::open(url, tenant, session::read_options())?;
            release::run(&session, &name, confirm, json, &mut out)
        }
        Command::Acquire {
            name,
            hold,
            wait,
            lease,
            node_id,
            read,
            write,
        } => {
            let plan = acquire::Plan {
                hold,
                wait,
                lease,
                node_id,
                side: match (read, write) {
                    (true, _) => Some(leader::Role::Read),
                    (_, true) => Some(leader::Role::Write),
                    _ => None,
                },
            };
            let session = Session::open(url, tenant, plan.options())?;
            acquire::run(&session, &name, &plan, json, &mut out)
        }
    }
}
