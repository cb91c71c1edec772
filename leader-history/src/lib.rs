#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod checker;
mod event;
mod history;
#[cfg(feature = "tracing")]
mod layer;

pub use checker::{
    GAP_SHADOW_LEASES, Gap, LATE_START, LOSS_AFTERMATH_US, LossRules, Report,
    STALE_RECORD_WRITE_LEASES, Section, Tallies, Violation, ViolationKind, check, sections,
};
pub use event::{Answer, Clock, Event, FaultKind, Phase, Role, What};
pub use history::{FaultSpan, History, Log, ReadError, Settings, read_history};
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use layer::{TraceHandle, TraceLayer};

/// Reads a JSON-lines trace ([`read_history`]) and checks it ([`check`]).
///
/// Node 1 holds the lock with token 7 while node 2 acts with token 8 (an overlap), then
/// node 3 asks after both ended and gets token 6 (a token going back):
///
/// ```
/// use leader_history::{Settings, ViolationKind, What, check_trace};
///
/// let trace = r#"
/// {"at":100,"node":1,"event":"action-started","token":7,"requested":90}
/// {"at":300,"node":1,"event":"action-ended","token":7}
/// {"at":200,"node":2,"event":"action-started","token":8,"requested":190}
/// {"at":250,"node":2,"event":"action-ended","token":8}
/// {"at":400,"node":3,"event":"acquire-requested"}
/// {"at":420,"node":3,"event":"action-started","token":6}
/// {"at":500,"node":3,"event":"action-ended","token":6}
/// "#;
/// let settings = Settings { lease_us: 1_000_000, ..Settings::default() };
/// let report = check_trace(trace.as_bytes(), settings)?;
/// let kinds: Vec<ViolationKind> = report.violations.iter().map(|v| v.kind).collect();
/// assert_eq!(kinds, [ViolationKind::UnexplainedOverlap, ViolationKind::TokenOrder]);
/// // The token order violation shows node 3's section, then node 2's, which ended first.
/// let tokens: Vec<u64> = report.violations[1]
///     .events
///     .iter()
///     .filter_map(|e| match e.what {
///         What::ActionStarted { token, .. } => Some(token),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(tokens, [6, 8]);
/// # Ok::<(), leader_history::ReadError>(())
/// ```
///
/// # Errors
///
/// The input cannot be read, or a line is not an event.
pub fn check_trace(input: impl std::io::BufRead, settings: Settings) -> Result<Report, ReadError> {
    Ok(check(&read_history(input, settings)?))
}
