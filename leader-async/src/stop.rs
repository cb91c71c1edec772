//! A one-shot stop signal between a handle and its background task.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use event_listener::Event;

/// Set once by a handle; awaited by its background task.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopSignal {
    shared: Arc<(AtomicBool, Event)>,
}

impl StopSignal {
    pub(crate) fn stop(&self) {
        self.shared.0.store(true, Ordering::Release);
        self.shared.1.notify(usize::MAX);
    }

    /// Resolves once [`stop`](Self::stop) was called.
    pub(crate) async fn stopped(self) {
        loop {
            let listener = self.shared.1.listen();
            if self.shared.0.load(Ordering::Acquire) {
                return;
            }
            listener.await;
        }
    }
}
