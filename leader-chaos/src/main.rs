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
        Command::Worker(args) => match worker::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("leader-chaos worker {}: {err}", args.worker);
                ExitCode::from(2)
            }
        },
        Command::Run(args) => match orchestrator::run(&args) {
            Ok(report) => {
                for example in &report.examples {
                    println!("{example}");
                }
                println!("{}", report.details());
                println!("{report}");
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
