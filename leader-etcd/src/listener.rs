//! The one watch per backend: a task on the backend's runtime that turns each deletion of
//! a lock (a release, a force release, an expiry) into [`ReleaseEvents::notify_token`],
//! so waiting electors retry at once and observers learn which lease ended.
//!
//! The watch asks etcd for deletions only, on every holder key under the prefix, with the
//! value each deletion removed: the holder record, whose fencing token the notification
//! carries. A lock's holder key is written and deleted with its lock key in one
//! transaction (or with the lease they share), so its deletions are the lock's. It is
//! started again with exponential backoff and jitter when it fails (a member killed or
//! cut off from the others: the client's "require leader" flag makes a member without a
//! leader cancel its watches) and calls [`ReleaseEvents::notify_all`] after every
//! (re)start, since releases may have been missed meanwhile. While it is down, electors
//! fall back to polling. It stops when the backend is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use etcd_client::{EventType, WatchFilterType, WatchOptions};
use leader_core::ReleaseEvents;
use rand::Rng;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

use crate::conn::Connection;
use crate::error::OpError;
use crate::record::Record;

const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// The watching task; dropping this stops it.
#[derive(Debug)]
pub(crate) struct Listener {
    task: JoinHandle<()>,
    listening: Arc<AtomicBool>,
}

/// What the task needs.
struct Watch {
    connection: Arc<Connection>,
    events: ReleaseEvents,
    answer_within: Duration,
    listening: Arc<AtomicBool>,
}

impl Listener {
    /// Starts watching on `runtime`.
    pub(crate) fn start(
        runtime: &Handle,
        connection: Arc<Connection>,
        events: ReleaseEvents,
        answer_within: Duration,
    ) -> Self {
        let listening = Arc::new(AtomicBool::new(false));
        let watch = Watch {
            connection,
            events,
            answer_within,
            listening: Arc::clone(&listening),
        };
        Listener {
            task: runtime.spawn(watch.run()),
            listening,
        }
    }

    /// Whether the watch is up right now.
    pub(crate) fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watch {
    async fn run(self) {
        let mut backoff = BACKOFF_MIN;
        loop {
            if let Err(err) = self.watch(&mut backoff).await {
                tracing::debug!(error = %err, "etcd release notifications lost");
            }
            self.listening.store(false, Ordering::Release);
            let delay = rand::rng().random_range(backoff / 2..=backoff);
            sleep(delay).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Watches until the watch fails or is cancelled.
    async fn watch(&self, backoff: &mut Duration) -> Result<(), OpError> {
        let conn = timeout(self.answer_within, self.connection.get())
            .await
            .map_err(|_| OpError::TimedOut(self.answer_within))??;
        let prefix = self.connection.keys().holder_prefix().to_owned();
        let options = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_filters([WatchFilterType::NoPut]);
        let mut client = conn.client.watch_client();
        let mut stream = timeout(self.answer_within, client.watch(prefix, Some(options)))
            .await
            .map_err(|_| OpError::TimedOut(self.answer_within))??;
        self.listening.store(true, Ordering::Release);
        *backoff = BACKOFF_MIN;
        tracing::debug!("etcd release notifications up");
        // Releases while we were not watching were missed: wake every waiter.
        self.events.notify_all();
        while let Some(response) = stream.message().await? {
            if response.canceled() {
                return Err(OpError::Protocol("the watch was cancelled by the cluster"));
            }
            for event in response.events() {
                if event.event_type() != EventType::Delete {
                    continue;
                }
                let Some(kv) = event.kv() else {
                    continue;
                };
                let Some(name) = self.connection.keys().name_of_holder(kv.key()) else {
                    continue;
                };
                // The token of the record deleted; a record this backend did not write
                // (or none sent) still wakes the waiters.
                let token = event
                    .prev_kv()
                    .and_then(|prev| Record::decode(prev.key(), prev.value()).ok())
                    .map(|record| record.fencing_token);
                match token {
                    Some(token) => self.events.notify_token(name.as_str(), token),
                    None => self.events.notify(name.as_str()),
                }
            }
        }
        Err(OpError::Protocol("the watch stream ended"))
    }
}
