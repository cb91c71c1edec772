//! The one `LISTEN` session per backend: a task on the backend's runtime that turns each
//! release's `NOTIFY` into [`ReleaseEvents::notify`], so waiting electors retry at once.
//!
//! It reconnects with exponential backoff and jitter (a server restart, a network cut;
//! `leader_runtime::Subscription` keeps it up)
//! and calls [`ReleaseEvents::notify_all`] after every (re)subscription, since releases
//! may have been missed meanwhile. It checks a quiet session with an empty query every few
//! seconds, so a dead server is noticed. While it is down, electors fall back to polling.
//! It stops when the backend is dropped.

use std::sync::Arc;
use std::time::Duration;

use leader_core::ReleaseEvents;
use leader_runtime::{Session, SessionEnd, Subscription};
use tokio::runtime::Handle;
use tokio::time::timeout;

use crate::connector::Connector;
use crate::error::OpError;

/// An empty query after this long without a notification detects a dead session.
const KEEPALIVE: Duration = Duration::from_secs(5);

/// The listening task; dropping this stops it.
#[derive(Debug)]
pub(crate) struct Listener(Subscription);

/// What the task needs.
struct Listen {
    connector: Arc<Connector>,
    listen: String,
    events: ReleaseEvents,
    answer_within: Duration,
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
        let listen = Arc::new(Listen {
            connector,
            listen,
            events,
            answer_within,
        });
        Listener(Subscription::start(runtime, move |session| {
            let listen = Arc::clone(&listen);
            async move {
                if let Err(err) = listen.listen(&session).await {
                    tracing::debug!(statement = %listen.listen, error = %err, "release notifications lost");
                }
                SessionEnd::Restart
            }
        }))
    }

    /// Whether the `LISTEN` session is up right now.
    pub(crate) fn is_listening(&self) -> bool {
        self.0.is_up()
    }
}

impl Listen {
    /// Listens until the session fails.
    async fn listen(&self, session: &Session) -> Result<(), OpError> {
        let (client, mut driver) = self.connector.connect(Some(self.events.clone())).await?;
        self.within(client.batch_execute(&self.listen)).await?;
        session.up();
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
