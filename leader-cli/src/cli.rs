//! The command line: global options and the five commands (clap derive).

use std::time::Duration;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  success: the command did what it says (a free lock is not an error)
  1  error: the backend is unreachable or failed, `acquire` found the lock held
     elsewhere, the lease was lost while holding it, or the release was not confirmed
     or not done (another holder took the lock after it was shown)
  2  usage: bad arguments, URL, lock name, tenant or duration; `release` without
     --force, or without --yes when stdin is not a terminal";

/// Inspect, watch, force-release and hold leader-election locks.
#[derive(Debug, Parser)]
#[command(name = "leader", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// Backend URL: redis://, rediss://, redis+cluster://h1:p1,h2:p2, mongodb://,
    /// mongodb+srv://, sqlite://path, postgres://, etcd://h1:p1,h2:p2
    #[arg(long, env = "LEADER_URL", global = true, hide_env_values = true)]
    pub(crate) url: Option<String>,

    /// Work inside this tenant's scope (lock names `tenant:<T>:<name>`)
    #[arg(long, global = true, value_name = "T")]
    pub(crate) tenant: Option<String>,

    /// Print JSON instead of a table
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Who holds a lock: leader, fencing token, acquired and expiry times (with --rw: the
    /// read/write lock of that name: its writer, readers and a waiting writer)
    State {
        /// The lock name
        name: String,
        /// Show the read/write lock of this name instead of the exclusive lock
        #[arg(long)]
        rw: bool,
    },
    /// The held locks whose names start with a prefix
    List {
        /// Only names starting with this
        #[arg(long, default_value = "", value_name = "P")]
        prefix: String,
        /// How many locks to ask the backend for at a time
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        page_size: u32,
    },
    /// Print the state, then one line per change of holder, until interrupted
    Watch {
        /// The lock name
        name: String,
        /// How often to poll (release notifications wake it earlier where the backend has them)
        #[arg(long, default_value = "500ms", value_parser = positive_duration)]
        interval: Duration,
    },
    /// Free a lock whoever holds it (needs --force; asks unless --yes). Only the holder
    /// shown is freed: if another took the lock meanwhile, nothing is released (exit 1)
    Release {
        /// Required: this frees another process's lock
        #[arg(long)]
        force: bool,
        /// Do not ask for confirmation
        #[arg(long, short = 'y')]
        yes: bool,
        /// The lock name
        name: String,
    },
    /// A scheduled job: its last run (tick, node, fencing token, outcome), its lock and
    /// its next tick
    Schedule {
        /// The job's name
        name: String,
    },
    /// Take a lock and hold it (renewed) for a duration or until Ctrl-C, then release it
    Acquire {
        /// The lock name
        name: String,
        /// How long to hold it, e.g. 30s, 5m, 1h
        #[arg(long, value_parser = positive_duration)]
        hold: Duration,
        /// How long to wait while another node holds it
        #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
        wait: Duration,
        /// The lease, renewed every third of it: how long the lock stays held if this process dies
        #[arg(long, default_value = "15s", value_parser = positive_duration)]
        lease: Duration,
        /// The node id to hold it as (default: hostname:pid)
        #[arg(long, value_name = "ID")]
        node_id: Option<String>,
        /// Hold the read/write lock of this name as a reader
        #[arg(long, conflicts_with = "write")]
        read: bool,
        /// Hold the read/write lock of this name as the writer
        #[arg(long)]
        write: bool,
    },
}

/// A duration in human form (`500ms`, `30s`, `1m 30s`), above zero.
fn positive_duration(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(duration) if duration.is_zero() => Err("must be above zero".into()),
        Ok(duration) => Ok(duration),
        Err(err) => Err(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
