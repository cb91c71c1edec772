//! The one `LISTEN` session per backend: a task on the backend's runtime that turns each
//! release's `NOTIFY` into [`ReleaseEvents::notify`], so waiting electors retry at once.
//!
//! It reconnects with exponential backoff and jitter (a server restart, a network cut)
//! and calls [`ReleaseEvents::notify_all`] after every (re)subscription, since releases
//! may have been missed meanwhile. It checks a quiet session with an empty query every few
//! seconds, so a dead server is noticed. While it is down, electors fall back to polling.
//! It stops when the backend is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leader_core::ReleaseEvents;
use rand::Rng;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

use crate::connector::Connector;
use crate::error::OpError;

/// An empty query after this long without a notification detects a dead session.
const KEEPALIVE: Duration = Duration::from_secs(5);
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// The listening task; dropping this stops it.
#[derive(Debug)]
pub(crate) struct Listener {
    task: JoinHandle<()>,
    listening: Arc<AtomicBool>,
}

/// What the task needs.
struct Session {
    connector: Arc<Connector>,
    listen: String,
    events: ReleaseEvents,
    answer_within: Duration,
    listening: Arc<AtomicBool>,
}

impl Listener {
    /// Starts listening with `listen` (the `LISTEN` statement) on `runtime`.
    pub(crate) fn start(
        runtime: &Handle,
        connector: Arc<Connector>,
        listen: String,
        events: ReleaseEvents,
        answer_within: Duration,
    ) -> Self {
        let listening = Arc::new(AtomicBool::new(false));
        let session = Session {
            connector,
            listen,
            events,
            answer_within,
            listening: Arc::clone(&listening),
        };
        Listener {
            task: runtime.spawn(session.run()),
            listening,
        }
    }

    /// Whether the `LISTEN` session is up right now.
    pub(crate) fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Session {
    async fn run(self) {
        let mut backoff = BACKOFF_MIN;
        loop {
            if let Err(err) = self.listen(&mut backoff).await {
                tracing::debug!(statement = %self.listen, error = %err, "release notifications lost");
            }
            self.listening.store(false, Ordering::Release);
            let delay = rand::rng().random_range(backoff / 2..=backoff);
            sleep(delay).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Listens until the session fails.
    async fn listen(&self, backoff: &mut Duration) -> Result<(), OpError> {
        let (client, mut driver) = self.connector.connect(Some(self.events.clone())).await?;
        self.within(client.batch_execute(&self.listen)).await?;
        self.listening.store(true, Ordering::Release);
        *backoff = BACKOFF_MIN;
        tracing::debug!(statement = %self.listen, "release notifications up");
        // Releases notified while we were not listening were missed: wake every waiter.
        self.events.notify_all();
        loop {
            match timeout(KEEPALIVE, &mut driver.0).await {
                Ok(Ok(Ok(()))) => return Err(OpError::ShutDown),
                Ok(Ok(Err(err))) => return Err(err.into()),
                Ok(Err(_)) => return Err(OpError::ShutDown),
                Err(_quiet) => self.within(client.simple_query("")).await.map(drop)?,
            }
        }
    }

    async fn within<T>(
        &self,
        call: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, OpError> {
        match timeout(self.answer_within, call).await {
            Ok(answer) => Ok(answer?),
            Err(_) => Err(OpError::TimedOut(self.answer_within)),
        }
    }
}
