//! The change streams of a backend: a task on the backend's runtime that turns each
//! release that frees a lock (its document's `owner` set to null: a release without minimum
//! lease or after its minimum lease has passed, a force release) into [`ReleaseEvents::notify_token`], so waiting electors retry at
//! once and observers learn which lease ended; and one on the read/write locks'
//! collection that turns each release freeing a hold or withdrawing an intent (its
//! document's `releases` count moved) into a notice without a token (see
//! `Watch::forward`).
//!
//! The stream asks the server for updates of the lock collection whose `owner` became
//! null, with the document as it is when the event is read (`updateLookup`). While that
//! document is still free, its fencing token is the one of the lease whose end the event
//! reports (only a release writes a null owner, and a new holder writes a new token), and
//! the notification carries it; when someone took the lock meanwhile it carries none, and
//! an observer reads the lock instead.
//!
//! What it does not see: an expiry (nothing is written when a lease runs out), and so the
//! end of a minimum lease a release kept the lock for (the owner became `released`);
//! waiters find those by polling, as they do while the stream is down. Change streams need a replica set (or
//! a sharded cluster): on a standalone server, which refuses them, the task ends at its
//! first attempt and waiters poll.
//!
//! The stream is opened again with exponential backoff and jitter when it fails, and
//! [`ReleaseEvents::notify_all`] is called after every (re)start, since releases may have
//! been missed meanwhile. The server answers an idle stream every [`AWAIT`]; no answer
//! within that and the operation timeout means the server or the path to it is gone, and
//! the client is replaced as after any unanswered operation. It stops when the backend is
//! dropped.

use std::sync::Arc;
use std::time::Duration;

use leader_core::ReleaseEvents;
use leader_runtime::{Session, SessionEnd, Subscription};
use mongodb::bson::{Bson, Document, doc};
use mongodb::change_stream::event::ChangeStreamEvent;
use mongodb::error::ErrorKind;
use mongodb::options::FullDocumentType;
use tokio::runtime::Handle;
use tokio::time::timeout;

use crate::clients::Clients;
use crate::document::field::{FENCING_TOKEN, ID, OWNER};
use crate::error::OpError;
use crate::shared::document::field::RELEASES;

/// How long the server holds an idle stream's request before answering it empty.
pub(crate) const AWAIT: Duration = Duration::from_secs(1);
/// The server's refusal of a change stream on a standalone server.
const NOT_A_REPLICA_SET: i32 = 40573;

/// The watching tasks, one per collection; dropping this stops them.
#[derive(Debug)]
pub(crate) struct Listener {
    locks: Subscription,
    shared: Subscription,
}

/// Which collection a stream watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// The lock collection: updates that clear a lock's owner.
    Locks,
    /// The read/write locks' collection (`shared`): updates that count a release.
    Shared,
}

/// What a task needs.
struct Watch {
    clients: Arc<Clients>,
    events: ReleaseEvents,
    answer_within: Duration,
    watched: Watched,
}

impl Listener {
    /// Starts watching the lock collection of `clients`' store, and its read/write locks'
    /// collection, on `runtime`.
    pub(crate) fn start(
        runtime: &Handle,
        clients: Arc<Clients>,
        events: ReleaseEvents,
        answer_within: Duration,
    ) -> Self {
        let watch = |watched| {
            subscribe(
                runtime,
                Watch {
                    clients: Arc::clone(&clients),
                    events: events.clone(),
                    answer_within,
                    watched,
                },
            )
        };
        Listener {
            locks: watch(Watched::Locks),
            shared: watch(Watched::Shared),
        }
    }

    /// Whether both change streams are up right now.
    pub(crate) fn is_listening(&self) -> bool {
        self.locks.is_up() && self.shared.is_up()
    }
}

/// The task running `watch`, started again when its stream ends.
fn subscribe(runtime: &Handle, watch: Watch) -> Subscription {
    let watch = Arc::new(watch);
    Subscription::start(runtime, move |session| {
        let watch = Arc::clone(&watch);
        async move {
            match watch.watch(&session).await {
                Err(OpError::Driver(err)) if refused(&err) => {
                    // Said once, for the lock collection's stream.
                    if watch.watched == Watched::Locks {
                        tracing::info!(
                            "mongodb release notifications off: the server offers no change \
                             streams (a standalone server); waiters poll"
                        );
                    }
                    SessionEnd::Stop
                }
                Err(err) => {
                    tracing::debug!(error = %err, "mongodb release notifications lost");
                    SessionEnd::Restart
                }
                Ok(()) => SessionEnd::Restart,
            }
        }
    })
}

/// The stream's filter: updates that set a lock's owner to null.
fn releases() -> Document {
    doc! { "$match": {
        "operationType": "update",
        format!("updateDescription.updatedFields.{OWNER}"): { "$type": "null" },
    } }
}

/// The read/write locks' stream's filter: updates that count a release (one that freed a
/// hold or withdrew an intent; see `shared::pipeline::release`).
fn shared_releases() -> Document {
    doc! { "$match": {
        "operationType": "update",
        format!("updateDescription.updatedFields.{RELEASES}"): { "$exists": true },
    } }
}

impl Watch {
    /// Watches until the stream fails.
    async fn watch(&self, session: &Session) -> Result<(), OpError> {
        let store = self.clients.store();
        let open = match self.watched {
            Watched::Locks => store
                .collection
                .watch()
                .pipeline([releases()])
                .full_document(FullDocumentType::UpdateLookup),
            // No document: a read/write release's notice carries no token (see `forward`).
            Watched::Shared => store.shared.watch().pipeline([shared_releases()]),
        }
        .max_await_time(AWAIT);
        let mut stream = match timeout(self.answer_within, open).await {
            Ok(opened) => opened?,
            Err(_) => return Err(self.no_answer()),
        };
        session.up();
        tracing::debug!("mongodb release notifications up");
        // Releases while we were not watching were missed: wake every waiter.
        self.events.notify_all();
        loop {
            match timeout(AWAIT + self.answer_within, stream.next_if_any()).await {
                Ok(Ok(Some(event))) => self.forward(&event),
                Ok(Ok(None)) if stream.is_alive() => {}
                Ok(Ok(None)) => return Err(OpError::ShutDown),
                Ok(Err(err)) => return Err(err.into()),
                Err(_) => return Err(self.no_answer()),
            }
        }
    }

    /// The server did not answer in time: the next operation gets a fresh client.
    fn no_answer(&self) -> OpError {
        self.clients.no_answer();
        OpError::TimedOut(self.answer_within)
    }

    /// Wakes the waiters of the lock an event names, with the released lease's token when
    /// the document read with the event is still free.
    ///
    /// A read/write lock's release carries no token: its tokens come from a counter of
    /// their own, which may hand out the very token of the exclusive lock of the same name
    /// (both take the server's clock in microseconds), and an observer of that lock would
    /// take the notice for its holder's end. Without a token, an observer reads the lock.
    fn forward(&self, event: &ChangeStreamEvent<Document>) {
        let Some(name) = event
            .document_key
            .as_ref()
            .and_then(|key| key.get_str(ID).ok())
        else {
            return;
        };
        let token = match self.watched {
            Watched::Locks => event.full_document.as_ref().and_then(released_token),
            Watched::Shared => None,
        };
        self.events.notify_with(name, token);
    }
}

/// The fencing token of a lock document that nobody holds: the last lease's.
fn released_token(doc: &Document) -> Option<u64> {
    if !matches!(doc.get(OWNER), Some(Bson::Null)) {
        return None;
    }
    let token = match doc.get(FENCING_TOKEN)? {
        Bson::Int64(token) => *token,
        Bson::Int32(token) => i64::from(*token),
        _ => return None,
    };
    u64::try_from(token).ok()
}

/// Whether the server refuses change streams for good (a standalone server).
fn refused(err: &mongodb::error::Error) -> bool {
    matches!(err.kind.as_ref(), ErrorKind::Command(command) if command.code == NOT_A_REPLICA_SET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_free_document_gives_its_token() {
        let free = doc! { OWNER: Bson::Null, FENCING_TOKEN: 41_i64 };
        assert_eq!(released_token(&free), Some(41));
        let int = doc! { OWNER: Bson::Null, FENCING_TOKEN: 7_i32 };
        assert_eq!(released_token(&int), Some(7));
        let taken = doc! { OWNER: "00ff", FENCING_TOKEN: 42_i64 };
        assert_eq!(released_token(&taken), None);
        let negative = doc! { OWNER: Bson::Null, FENCING_TOKEN: -1_i64 };
        assert_eq!(released_token(&negative), None);
        assert_eq!(released_token(&doc! { FENCING_TOKEN: 1_i64 }), None);
    }

    #[test]
    fn the_shared_stream_selects_updates_that_count_a_release() {
        assert_eq!(
            shared_releases(),
            doc! { "$match": {
                "operationType": "update",
                "updateDescription.updatedFields.releases": { "$exists": true },
            } }
        );
    }

    #[test]
    fn the_stream_selects_updates_that_clear_the_owner() {
        assert_eq!(
            releases(),
            doc! { "$match": {
                "operationType": "update",
                "updateDescription.updatedFields.owner": { "$type": "null" },
            } }
        );
    }
}
