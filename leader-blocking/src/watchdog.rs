//! The renewal thread of an auto-extended lease.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender};
use leader_core::{ExtendOutcome, LeaseTracker, LockBackend};

/// Renews a lease every `interval` on its own thread until stopped.
///
/// The first failed or refused renewal marks the lease lost and ends the thread: the
/// action is told at once rather than left running on a lease that may be gone
/// (DESIGN §4.7). A transient error could have been retried, but the lease would then
/// be trusted past a renewal nobody confirmed; failing fast is the safe side.
#[derive(Debug)]
pub(crate) struct Watchdog {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What a watchdog renews, and how.
pub(crate) struct Renewal<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) tracker: Arc<LeaseTracker>,
    pub(crate) lease_time: Duration,
    pub(crate) interval: Duration,
    pub(crate) use_db_time: bool,
}

impl Watchdog {
    pub(crate) fn start<B: LockBackend + 'static>(renewal: Renewal<B>) -> Self {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let spawned = std::thread::Builder::new()
            .name("leader-watchdog".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(renewal.interval) {
                    if !renewal.renew_once() {
                        return;
                    }
                }
            });
        match spawned {
            Ok(thread) => Watchdog {
                stop: Some(stop),
                thread: Some(thread),
            },
            Err(err) => {
                // No thread, no renewals: the action must not believe it is covered.
                tracing::warn!(error = %err, "could not start the watchdog thread");
                Watchdog {
                    stop: None,
                    thread: None,
                }
            }
        }
    }

    /// `false` when the watchdog could not start (the caller must treat the lease as unrenewed).
    pub(crate) fn is_running(&self) -> bool {
        self.thread.is_some()
    }

    pub(crate) fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<B: LockBackend> Renewal<B> {
    /// One renewal; `false` when the lease is lost and renewing should stop.
    fn renew_once(&self) -> bool {
        let requested_at = Instant::now();
        match self
            .backend
            .extend(self.tracker.lease(), self.lease_time, self.use_db_time)
        {
            Ok(ExtendOutcome::Extended { .. }) => {
                self.tracker.renewed(requested_at, self.lease_time);
                true
            }
            Ok(ExtendOutcome::NotHeld) => {
                tracing::warn!(lock = %self.tracker.lease().key, "lease lost: renewal found it gone");
                self.tracker.mark_lost();
                false
            }
            Err(err) => {
                tracing::warn!(lock = %self.tracker.lease().key, error = %err, "lease lost: renewal failed");
                self.tracker.mark_lost();
                false
            }
        }
    }
}
