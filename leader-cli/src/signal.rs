//! Wake-ups of the long-running commands (`watch`, `acquire`): Ctrl-C or SIGTERM, a lost
//! lease; all on one channel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use crate::error::CliError;

/// Why a waiting command woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Ctrl-C (SIGINT) or SIGTERM: finish cleanly.
    Stop,
    /// The held lease was lost.
    Lost,
    /// The wait ran out.
    Timeout,
}

/// The channel the wake-ups arrive on.
#[derive(Debug)]
pub(crate) struct Wakeups {
    sender: Sender<Wake>,
    receiver: Receiver<Wake>,
}

impl Wakeups {
    /// A channel that receives [`Wake::Stop`] on the first SIGINT or SIGTERM; a second one
    /// ends the process at once (exit 130), for a cleanup that hangs on a dead backend.
    pub(crate) fn on_interrupt() -> Result<Self, CliError> {
        let (sender, receiver) = mpsc::channel();
        let on_signal = sender.clone();
        let signalled = AtomicBool::new(false);
        ctrlc::set_handler(move || {
            if signalled.swap(true, Ordering::AcqRel) {
                std::process::exit(130);
            }
            let _ = on_signal.send(Wake::Stop);
        })?;
        Ok(Wakeups { sender, receiver })
    }

    /// A sender for other wake-ups (a thread watching the lease).
    pub(crate) fn sender(&self) -> Sender<Wake> {
        self.sender.clone()
    }

    /// The next wake-up, or [`Wake::Timeout`] after `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) -> Wake {
        match self.receiver.recv_timeout(timeout) {
            Ok(wake) => wake,
            // The receiver holds a sender too, so the channel never disconnects.
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => Wake::Timeout,
        }
    }
}
