//! The orchestrator's log: spawns, exits and faults, written to `orchestrator.log` and
//! echoed on standard output as the run goes.

use std::io;
use std::path::Path;

use crate::event::{Event, now_us};
use crate::logfile::LogFile;
use leader_history::FaultSpan;

/// The orchestrator's log, and the faults recorded in it.
#[derive(Debug)]
pub struct Journal {
    log: LogFile,
    began: u64,
    faults: Vec<FaultSpan>,
}

impl Journal {
    /// A journal appending to `path`; times on standard output count from now.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Journal {
            log: LogFile::append(path)?,
            began: now_us(),
            faults: Vec::new(),
        })
    }

    /// Records `event` now.
    ///
    /// # Errors
    ///
    /// When the log cannot be written.
    pub fn record(&mut self, event: Event) -> io::Result<()> {
        self.record_at(now_us(), event)
    }

    /// Records `event` stamped `at`.
    ///
    /// # Errors
    ///
    /// When the log cannot be written.
    pub fn record_at(&mut self, at: u64, event: Event) -> io::Result<()> {
        let stamped = self.log.record_at(at, event)?;
        self.say(&stamped.event.to_string());
        Ok(())
    }

    /// Prints `text` with the time since the run began.
    pub fn say(&self, text: &str) {
        let elapsed = now_us().saturating_sub(self.began);
        #[allow(clippy::cast_precision_loss)] // seconds for a human
        let seconds = elapsed as f64 / 1e6;
        println!("[{seconds:8.3}s] {text}");
    }

    /// Records a fault that is over.
    ///
    /// # Errors
    ///
    /// When the log cannot be written.
    pub fn fault(&mut self, span: FaultSpan) -> io::Result<()> {
        self.faults.push(span);
        self.record_at(
            span.end,
            Event::Fault {
                kind: span.kind,
                start: span.start,
                end: span.end,
            },
        )
    }

    /// The faults so far.
    pub fn faults(&self) -> &[FaultSpan] {
        &self.faults
    }
}
