//! The four operations against the collection, written once as async code.
//!
//! The runner of the backend kit (`calls`) runs these futures, blocking or async (through
//! [`Background`](leader_runtime::Background)); they own everything they touch, so they can
//! be spawned and outlive the caller.

use std::time::{Duration, SystemTime};

use leader_core::kit::Released;
use leader_core::kit::calls::Acquire;
use leader_core::{AcquireOutcome, ExtendOutcome, LeaderState, LockName, OwnerToken};
use mongodb::bson::Document;
use mongodb::options::{
    AggregateOptions, ReadConcern, ReadPreference, ReturnDocument, SelectionCriteria, WriteConcern,
};
use mongodb::{Client, Collection};

use crate::config::MongoConfig;
use crate::document::{LockRecord, ShapeError, decode};
use crate::error::{OpError, is_duplicate_key};
use crate::pipeline::{self, SERVER_NOW};
use crate::shared::shared_collection;
use crate::time::{check_lease, from_bson};

/// How often acquire sends its update when a racing upsert loses (duplicate key) or the
/// server answers an upsert with no document and re-reading finds none.
const ACQUIRE_ATTEMPTS: usize = 3;

/// The collection and the per-operation settings.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub(crate) collection: Collection<Document>,
    /// The records' collection, `<collection>_records` (see `records`).
    pub(crate) records: Collection<Document>,
    /// The read/write locks' collection, `<collection>_shared` (see `shared`).
    pub(crate) shared: Collection<Document>,
    pub(crate) write_concern: WriteConcern,
    pub(crate) max_time: Duration,
}

/// How a lock document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// With the collection's defaults: a best-effort snapshot.
    Snapshot,
    /// From the primary, with majority read concern: to settle an acquire by what the
    /// upsert's majority write left, never a lagging secondary's copy or a write that a
    /// failover could still roll back.
    Settled,
}

impl Read {
    fn options(self, max_time: Duration) -> AggregateOptions {
        let mut options = AggregateOptions::default();
        options.max_time = Some(max_time);
        if self == Read::Settled {
            options.selection_criteria =
                Some(SelectionCriteria::ReadPreference(ReadPreference::Primary));
            options.read_concern = Some(ReadConcern::majority());
        }
        options
    }
}

/// Why the last acquire attempt settled nothing.
enum Unsettled {
    DuplicateKey,
    NoDocument,
}

/// The records' collection beside the lock collection `collection`.
pub(crate) fn records_collection(collection: &str) -> String {
    format!("{collection}_records")
}

impl Store {
    /// The lock collection of `config` in `database`, through `client`.
    pub(crate) fn on(client: &Client, database: &str, config: &MongoConfig) -> Self {
        let database = client.database(database);
        Store {
            collection: database.collection(config.collection()),
            records: database.collection(&records_collection(config.collection())),
            shared: database.collection(&shared_collection(config.collection())),
            write_concern: config.write_concern().clone(),
            max_time: config.max_time(),
        }
    }

    /// One `findOneAndUpdate` per attempt; see [`pipeline::acquire`].
    pub(crate) async fn acquire(self, request: Acquire) -> Result<AcquireOutcome, OpError> {
        self.try_acquire(&request).await
    }

    async fn try_acquire(&self, request: &Acquire) -> Result<AcquireOutcome, OpError> {
        check_lease(request.lease_time)?;
        let mut unsettled = Unsettled::NoDocument;
        for _ in 0..ACQUIRE_ATTEMPTS {
            // Built per attempt: the driver takes it by value (a retry is rare).
            let plan = pipeline::acquire(
                &request.key,
                request.owner,
                &request.leader_id,
                request.lease_time,
            );
            let answer = self
                .collection
                .find_one_and_update(plan.filter, plan.update)
                .upsert(true)
                .return_document(ReturnDocument::After)
                .max_time(self.max_time)
                .write_concern(self.write_concern.clone())
                .await;
            match answer {
                Ok(Some(doc)) => return settle(request, &doc),
                Ok(None) => {
                    if let Some(outcome) = self.reread(request).await? {
                        return Ok(outcome);
                    }
                    unsettled = Unsettled::NoDocument;
                }
                Err(err) if is_duplicate_key(&err) => unsettled = Unsettled::DuplicateKey,
                Err(err) => return Err(err.into()),
            }
        }
        match unsettled {
            // Upserts kept losing to other inserters: someone else has the lock.
            Unsettled::DuplicateKey => Ok(AcquireOutcome::Held(None)),
            Unsettled::NoDocument => Err(OpError::NoDocument(ACQUIRE_ATTEMPTS)),
        }
    }

    /// After an upsert that returned no document: what the stored document says, or
    /// `None` when it settles nothing (absent, or free) and the update must be sent again.
    async fn reread(&self, request: &Acquire) -> Result<Option<AcquireOutcome>, OpError> {
        let Some((record, server_now)) = self.read(&request.key, Read::Settled).await? else {
            return Ok(None);
        };
        Ok(if record.is_owned_by(request.owner) {
            Some(AcquireOutcome::Acquired(
                record.lease(&request.key, request.owner),
            ))
        } else if record.is_live_at(server_now) {
            Some(AcquireOutcome::Held(Some(record.holder())))
        } else {
            None
        })
    }

    /// The lock document and the server's time, read together ([`pipeline::state`]).
    async fn read(
        &self,
        key: &LockName,
        read: Read,
    ) -> Result<Option<(LockRecord, SystemTime)>, OpError> {
        let mut cursor = self
            .collection
            .aggregate(pipeline::state(key))
            .with_options(read.options(self.max_time))
            .await?;
        if !cursor.advance().await? {
            return Ok(None);
        }
        let doc: Document = cursor.deserialize_current()?;
        let record = decode(&doc)?;
        let server_now = doc
            .get_datetime(SERVER_NOW)
            .ok()
            .and_then(|now| from_bson(*now))
            .ok_or(OpError::Shape(ShapeError::Missing(SERVER_NOW)))?;
        Ok(Some((record, server_now)))
    }

    /// One `findOneAndUpdate`; see [`pipeline::extend`].
    pub(crate) async fn extend(
        self,
        key: LockName,
        owner: OwnerToken,
        lease_time: Duration,
    ) -> Result<ExtendOutcome, OpError> {
        let plan = pipeline::extend(&key, owner, check_lease(lease_time)?);
        let renewed = self
            .collection
            .find_one_and_update(plan.filter, plan.update)
            .return_document(ReturnDocument::After)
            .max_time(self.max_time)
            .write_concern(self.write_concern.clone())
            .await?;
        Ok(match renewed {
            Some(doc) => ExtendOutcome::Extended {
                expires_at: decode(&doc)?.expires_at,
            },
            None => ExtendOutcome::NotHeld,
        })
    }

    /// One `updateOne`; see [`pipeline::release`]. Its answer counts the document it
    /// matched, not whether it freed the lock or kept it for its minimum lease: `Ended`.
    pub(crate) async fn release(
        self,
        key: LockName,
        owner: OwnerToken,
        min_lease_time: Duration,
    ) -> Result<Released, OpError> {
        let plan = pipeline::release(&key, owner, min_lease_time);
        let update = self
            .collection
            .update_one(plan.filter, plan.update)
            .write_concern(self.write_concern.clone())
            .await?;
        Ok(match update.matched_count {
            0 => Released::NotHeld,
            _ => Released::Ended,
        })
    }

    /// One aggregation; see [`pipeline::state`]. A holder counts as gone once its lease
    /// has run out on the server's clock, the clock that decides it.
    pub(crate) async fn state(self, key: LockName) -> Result<LeaderState, OpError> {
        Ok(match self.read(&key, Read::Snapshot).await? {
            Some((record, server_now)) if record.is_live_at(server_now) => {
                LeaderState::occupied(key.as_str(), record.holder())
            }
            _ => LeaderState::empty(key.as_str()),
        })
    }
}

/// The outcome a document returned by the acquire update means.
fn settle(request: &Acquire, doc: &Document) -> Result<AcquireOutcome, OpError> {
    let record = decode(doc)?;
    Ok(if record.is_owned_by(request.owner) {
        AcquireOutcome::Acquired(record.lease(&request.key, request.owner))
    } else {
        AcquireOutcome::Held(Some(record.holder()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acquire_is_settled_by_a_majority_read_on_the_primary() {
        let settled = Read::Settled.options(Duration::from_secs(5));
        assert_eq!(settled.read_concern, Some(ReadConcern::majority()));
        assert!(matches!(
            settled.selection_criteria,
            Some(SelectionCriteria::ReadPreference(ReadPreference::Primary))
        ));
        assert_eq!(settled.max_time, Some(Duration::from_secs(5)));
        let snapshot = Read::Snapshot.options(Duration::from_secs(5));
        assert_eq!(snapshot.read_concern, None);
        assert!(snapshot.selection_criteria.is_none());
    }
}
