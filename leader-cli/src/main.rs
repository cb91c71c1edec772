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
    // Whatever a driver puts in its messages, the URL's password is not printed.
    let secret = cli
        .url
        .as_deref()
        .and_then(session::password)
        .map(str::to_owned);
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if !err.is_broken_pipe() {
                let message = session::mask(&err.render(), secret.as_deref());
                eprintln!("leader: error: {message}");
            }
            ExitCode::from(err.exit_code())
        }
    }
}
