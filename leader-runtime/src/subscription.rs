//! [`Subscription`]: one notification session (a `LISTEN`, a watch, a change stream) kept up
//! by a task on a backend's runtime, started again with backoff and jitter whenever it ends.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::Rng;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// The first wait before a session is started again, doubled after each session that
/// never came up, up to [`BACKOFF_MAX`]; each wait is a random time in its second half,
/// so the nodes of a fleet do not all come back at once.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// What a session asks when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// Start a new session after the backoff (the session failed, or was cut off).
    Restart,
    /// Stop for good: the server refuses such sessions (for example a standalone MongoDB,
    /// which has no change streams).
    Stop,
}

/// A running session's handle on its [`Subscription`]: [`up`](Self::up) once it listens.
#[derive(Debug, Clone)]
pub struct Session {
    up: Arc<AtomicBool>,
    came_up: Arc<AtomicBool>,
}

impl Session {
    /// Tells the subscription the session listens now: [`Subscription::is_up`] is `true`
    /// until the session ends, and the next restart waits the shortest backoff again.
    pub fn up(&self) {
        self.up.store(true, Ordering::Release);
        self.came_up.store(true, Ordering::Release);
    }
}

/// A task that keeps one notification session up: it runs `session`, and when that ends
/// runs it again after a backoff with jitter (50 ms doubling to 2 s, back to 50 ms after a
/// session that came up), until [`SessionEnd::Stop`] or until the `Subscription` is
/// dropped, which aborts the task.
///
/// What a session does when it (re)starts is its own: the backends wake every waiter then,
/// since releases may have been missed while it was down.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_runtime::{Background, SessionEnd, Subscription};
///
/// let background = Background::builder("example").build()?;
/// let subscription = Subscription::start(background.handle(), |session| async move {
///     session.up();
///     // ... listen until the connection fails ...
///     tokio::time::sleep(Duration::from_secs(3600)).await;
///     SessionEnd::Restart
/// });
/// while !subscription.is_up() {
///     std::thread::sleep(Duration::from_millis(1));
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Subscription {
    task: JoinHandle<()>,
    up: Arc<AtomicBool>,
}

impl Subscription {
    /// Starts the task on `runtime`.
    pub fn start<S, F>(runtime: &Handle, mut session: S) -> Subscription
    where
        S: FnMut(Session) -> F + Send + 'static,
        F: Future<Output = SessionEnd> + Send + 'static,
    {
        let up = Arc::new(AtomicBool::new(false));
        let handle = Session {
            up: Arc::clone(&up),
            came_up: Arc::new(AtomicBool::new(false)),
        };
        let task = runtime.spawn(async move {
            let mut backoff = BACKOFF_MIN;
            loop {
                let end = session(handle.clone()).await;
                handle.up.store(false, Ordering::Release);
                if end == SessionEnd::Stop {
                    return;
                }
                if handle.came_up.swap(false, Ordering::AcqRel) {
                    backoff = BACKOFF_MIN;
                }
                let delay = rand::rng().random_range(backoff / 2..=backoff);
                tokio::time::sleep(delay).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        });
        Subscription { task, up }
    }

    /// Whether a session is up right now.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_session_is_restarted_until_it_stops_and_reports_when_it_is_up() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let (tx, rx) = std::sync::mpsc::channel();
        let subscription = Subscription::start(runtime.handle(), move |session| {
            let run = counted.fetch_add(1, Ordering::AcqRel);
            let tx = tx.clone();
            async move {
                if run < 2 {
                    return SessionEnd::Restart;
                }
                session.up();
                let _ = tx.send(());
                SessionEnd::Stop
            }
        });
        runtime.block_on(async {
            // The third session comes up, then stops for good: the task ends.
            while rx.try_recv().is_err() || subscription.is_up() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        assert_eq!(
            runs.load(Ordering::Acquire),
            3,
            "two restarts, then the stop"
        );
    }
}
