//! `leader`: inspect, watch, force-release and hold the locks of the `leader` crate from a
//! shell. See the README for the commands, their output and the exit codes.

mod cli;
mod commands;
mod error;
mod output;
mod session;
mod signal;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version go to stdout with 0; usage errors to stderr with 2.
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { error::USAGE } else { 0 });
        }
    };
    // The library's errors show no password; whatever reaches a message all the same is
    // masked here too, every reading of the URL's secret parts.
    let secrets = cli
        .url
        .as_deref()
        .map(leader::UrlSecrets::from_url)
        .unwrap_or_default();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if !err.is_broken_pipe() {
                eprintln!("leader: error: {}", err.render(&secrets));
            }
            ExitCode::from(err.exit_code())
        }
    }
}
