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
//! (re)start, since releases may have been missed meanwhile. The same stream watches the
//! read/write lock records for puts, and wakes a lock's waiters when a put ended a hold
//! (see [`shared::freed`]). While it is down, electors fall back to polling. It stops
//! when the backend is dropped.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, WatchFilterType, WatchOptions};
use leader_core::ReleaseEvents;
use leader_runtime::{Session, SessionEnd, Subscription};
use tokio::runtime::Handle;
use tokio::time::timeout;

use crate::conn::Connection;
use crate::error::OpError;
use crate::record::HolderRecord;
use crate::shared;

/// The watching task; dropping this stops it.
#[derive(Debug)]
pub(crate) struct Listener(Subscription);

/// What the task needs.
struct Watch {
    connection: Arc<Connection>,
    events: ReleaseEvents,
    answer_within: Duration,
}

impl Listener {
    /// Starts watching on `runtime`.
    pub(crate) fn start(
        runtime: &Handle,
        connection: Arc<Connection>,
        events: ReleaseEvents,
        answer_within: Duration,
    ) -> Self {
        let watch = Arc::new(Watch {
            connection,
            events,
            answer_within,
        });
        Listener(Subscription::start(runtime, move |session| {
            let watch = Arc::clone(&watch);
            async move {
                if let Err(err) = watch.watch(&session).await {
                    tracing::debug!(error = %err, "etcd release notifications lost");
                }
                SessionEnd::Restart
            }
        }))
    }

    /// Whether the watch is up right now.
    pub(crate) fn is_listening(&self) -> bool {
        self.0.is_up()
    }
}

impl Watch {
    /// Watches until the watch fails or is cancelled.
    async fn watch(&self, session: &Session) -> Result<(), OpError> {
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
        // Read/write locks: their records are put, never deleted, so that watch is on
        // puts, each with the record it replaced.
        let shared = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_filters([WatchFilterType::NoDelete]);
        let prefix = self.connection.keys().shared_prefix().to_owned();
        timeout(self.answer_within, stream.watch(prefix, Some(shared)))
            .await
            .map_err(|_| OpError::TimedOut(self.answer_within))??;
        session.up();
        tracing::debug!("etcd release notifications up");
        // Releases while we were not watching were missed: wake every waiter.
        self.events.notify_all();
        while let Some(response) = stream.message().await? {
            if response.canceled() {
                return Err(OpError::Protocol("the watch was cancelled by the cluster"));
            }
            for event in response.events() {
                if event.event_type() == EventType::Put {
                    self.shared_changed(event);
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
                    .and_then(|prev| HolderRecord::decode(prev.key(), prev.value()).ok())
                    .map(|record| record.fencing_token);
                self.events.notify_with(name.as_str(), token);
            }
        }
        Err(OpError::Protocol("the watch stream ended"))
    }

    /// A read/write lock's record put: its waiters wake when the change ended a hold or
    /// withdrew a waiting writer's intent (with the ended hold's token when there was one).
    /// A record this backend did not write wakes nobody (the calls on it report it).
    fn shared_changed(&self, event: &etcd_client::Event) {
        let (Some(kv), Some(prev)) = (event.kv(), event.prev_kv()) else {
            return;
        };
        let Some(name) = self.connection.keys().name_of_shared(kv.key()) else {
            return;
        };
        let (Ok(before), Ok(after)) = (
            shared::decode(prev.key(), prev.value()),
            shared::decode(kv.key(), kv.value()),
        ) else {
            return;
        };
        if let Some(token) = shared::freed(&before.record, &after.record) {
            self.events.notify_with(name.as_str(), token);
        }
    }
}
