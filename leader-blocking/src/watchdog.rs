//! The renewal thread of an auto-extended lease.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender, TryRecvError};
use leader_core::__private::LeaseTracker;
use leader_core::LockBackend;

use crate::renew::{Raced, extend_before};

/// Renews a lease every `interval` on its own thread until stopped or the lease is lost
/// (see [`LeaseTracker::record_renewal`] for why the first failure ends it). Each renewal
/// races the lease's deadline: unanswered by then, the lease is lost at that moment.
#[derive(Debug)]
pub(crate) struct Watchdog {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts renewing; if no thread can be started the lease is marked lost at once,
    /// so the action never believes it is covered.
    pub(crate) fn start<B: LockBackend + 'static>(
        backend: Arc<B>,
        tracker: Arc<LeaseTracker>,
        interval: Duration,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Self {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let renewing = Arc::clone(&tracker);
        let spawned = std::thread::Builder::new()
            .name("leader-watchdog".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let sent_at = Instant::now();
                    let deadline = renewing.context().deadline();
                    let stop_requested = || stopped.try_recv() != Err(TryRecvError::Empty);
                    let answer = match extend_before(
                        &backend,
                        &renewing,
                        lease_time,
                        use_db_time,
                        deadline,
                        stop_requested,
                    ) {
                        Raced::Answered(answer) => answer,
                        Raced::DeadlinePassed => return renewing.renewal_unanswered(),
                        Raced::Stopped => return,
                    };
                    if !renewing.record_renewal(answer, sent_at, lease_time) {
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
                tracing::warn!(error = %err, "could not start the watchdog thread");
                tracker.lose();
                Watchdog {
                    stop: None,
                    thread: None,
                }
            }
        }
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
