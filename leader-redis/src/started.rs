//! [`Started`]: something started on first use, and started again after a failed start.

use std::fmt;
use std::io;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Holds a background service (the release subscription) once it started. A failed start
/// is retried at the next use after `retry_after`, instead of leaving the backend without
/// it for good; a running service is read without a lock.
pub(crate) struct Started<T> {
    running: OnceLock<T>,
    failed_at: Mutex<Option<Instant>>,
    retry_after: Duration,
}

impl<T: fmt::Debug> fmt::Debug for Started<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Started")
            .field("running", &self.running.get())
            .finish_non_exhaustive()
    }
}

impl<T> Started<T> {
    pub(crate) fn new(retry_after: Duration) -> Self {
        Started {
            running: OnceLock::new(),
            failed_at: Mutex::new(None),
            retry_after,
        }
    }

    /// The running service, starting it with `start` if it is not running and no start
    /// failed within `retry_after`.
    pub(crate) fn get_or_start(&self, start: impl FnOnce() -> io::Result<T>) -> Option<&T> {
        if let Some(running) = self.running.get() {
            return Some(running);
        }
        let mut failed_at = self.failed_at.lock();
        if let Some(running) = self.running.get() {
            return Some(running);
        }
        if failed_at.is_some_and(|at| at.elapsed() < self.retry_after) {
            return None;
        }
        match start() {
            Ok(service) => {
                *failed_at = None;
                Some(self.running.get_or_init(|| service))
            }
            Err(err) => {
                tracing::warn!(error = %err, retry_after = ?self.retry_after, "could not start the release subscription; waiters poll until it starts");
                *failed_at = Some(Instant::now());
                None
            }
        }
    }

    /// The running service, if it started.
    pub(crate) fn get(&self) -> Option<&T> {
        self.running.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> io::Result<u32> {
        Err(io::Error::other("no thread"))
    }

    #[test]
    fn a_failed_start_is_retried_after_the_pause_and_a_start_sticks() {
        let started = Started::new(Duration::from_millis(20));
        assert_eq!(started.get_or_start(refused), None);
        assert_eq!(
            started.get_or_start(|| Ok(1)),
            None,
            "not again within the pause"
        );
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(started.get_or_start(|| Ok(1)), Some(&1));
        assert_eq!(started.get_or_start(|| Ok(2)), Some(&1), "started once");
        assert_eq!(started.get(), Some(&1));
    }
}
