//! Writing a log: each event is one `write` call of one line, straight to the file (no
//! buffer), so a process killed with SIGKILL loses at most a partial last line.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use crate::event::{Event, Stamped, now_us};

/// A log file being appended to.
#[derive(Debug)]
pub struct LogFile {
    file: File,
}

impl LogFile {
    /// Opens `path` for appending, creating it.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened.
    pub fn append(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(LogFile { file })
    }

    /// Appends `event`, stamped now; returns the line's event.
    ///
    /// # Errors
    ///
    /// When the write fails.
    pub fn record(&mut self, event: Event) -> io::Result<Stamped> {
        self.record_at(now_us(), event)
    }

    /// Appends `event` stamped `at`.
    ///
    /// # Errors
    ///
    /// When the write fails.
    pub fn record_at(&mut self, at: u64, event: Event) -> io::Result<Stamped> {
        let stamped = Stamped { at, event };
        self.file.write_all(stamped.to_line().as_bytes())?;
        Ok(stamped)
    }
}
