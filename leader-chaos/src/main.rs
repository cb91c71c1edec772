//! `leader-chaos`: multi-process fault runs of the leader toolkit (see the crate README).

use std::process::ExitCode;

use leader_chaos::cli::{self, Command, USAGE};
use leader_chaos::{orchestrator, worker};

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(err) => {
            eprintln!("leader-chaos: {err}");
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Command::Worker(args) => {
            log_warnings();
            match worker::run(&args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("leader-chaos worker {}: {err}", args.worker);
                    ExitCode::from(2)
                }
            }
        }
        Command::Run(args) => match orchestrator::run(&args) {
            Ok(report) => {
                for example in &report.examples {
                    println!("{example}");
                }
                println!("{}", report.details());
                println!("chaos: {report}");
                if report.passed() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
            Err(err) => {
                eprintln!("leader-chaos: {err}");
                ExitCode::from(2)
            }
        },
    }
}

/// Sends the library's warnings (`warn` and `error` events: a lease lost and why, a
/// release that failed) to standard error, which the orchestrator keeps as the worker's
/// `w<worker>.<life>.stderr` file; `LEADER_CHAOS_LOG` (a `tracing` filter) asks for more.
fn log_warnings() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LEADER_CHAOS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
