//! [`Shutdown`]: the signal that stops a tenant poller or a scheduler, for blocking and
//! async code alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use event_listener::{Event, Listener};

/// A one-way stop signal, cheap to clone; every clone sees the same signal.
///
/// Trigger it from anywhere (a signal handler task, another thread, a test). A tenant
/// poller stops starting tenants at once, wakes from its wait between cycles and returns
/// after the in-flight jobs finished or were abandoned; a scheduler stops firing ticks and
/// returns once its running jobs finished or were abandoned (each by its shutdown mode).
///
/// # Examples
///
/// ```
/// use leader_core::Shutdown;
///
/// let shutdown = Shutdown::new();
/// let remote = shutdown.clone();
/// std::thread::spawn(move || remote.trigger()).join().unwrap();
/// assert!(shutdown.is_triggered());
/// futures::executor::block_on(shutdown.triggered()); // resolves at once now
/// ```
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    triggered: AtomicBool,
    event: Event,
}

impl Shutdown {
    /// A signal not yet triggered.
    pub fn new() -> Self {
        Shutdown::default()
    }

    /// Triggers the signal (idempotent).
    pub fn trigger(&self) {
        self.inner.triggered.store(true, Ordering::SeqCst);
        self.inner.event.notify(usize::MAX);
    }

    /// `true` once triggered.
    pub fn is_triggered(&self) -> bool {
        self.inner.triggered.load(Ordering::SeqCst)
    }

    /// Resolves once the signal is triggered.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future loses nothing.
    pub async fn triggered(&self) {
        while !self.is_triggered() {
            let listener = self.inner.event.listen();
            if self.is_triggered() {
                return;
            }
            listener.await;
        }
    }

    /// Blocks until `deadline` or the signal, whichever comes first; `true` if triggered.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use leader_core::Shutdown;
    ///
    /// let shutdown = Shutdown::new();
    /// assert!(!shutdown.wait_until(Instant::now() + Duration::from_millis(5)));
    /// shutdown.trigger();
    /// assert!(shutdown.wait_until(Instant::now() + Duration::from_secs(60)));
    /// ```
    pub fn wait_until(&self, deadline: Instant) -> bool {
        while !self.is_triggered() {
            let listener = self.inner.event.listen();
            if self.is_triggered() {
                break;
            }
            if listener.wait_deadline(deadline).is_none() {
                return self.is_triggered();
            }
        }
        true
    }
}
