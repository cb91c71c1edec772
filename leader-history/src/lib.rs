#![doc = include_str!("../README.md")]

mod checker;
mod event;
mod history;

pub use checker::{
    GAP_SHADOW_LEASES, Gap, LATE_START, LOSS_AFTERMATH_US, LossRules, Report, Section, Tallies,
    Violation, ViolationKind, check, sections,
};
pub use event::{Answer, Clock, Event, FaultKind, Phase, What};
pub use history::{FaultSpan, History, Log, ReadError, Settings, read_history};

/// Reads a JSON-lines trace ([`read_history`]) and checks it ([`check`]).
///
/// # Errors
///
/// The input cannot be read, or a line is not an event.
pub fn check_trace(input: impl std::io::BufRead, settings: Settings) -> Result<Report, ReadError> {
    Ok(check(&read_history(input, settings)?))
}
