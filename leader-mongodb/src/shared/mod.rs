//! Read/write locks (`SharedLockBackend`, through the kit's [`SharedStore`]): one document
//! per name in the collection `<collection>_shared` (see [`document`]), which no
//! exclusive lock operation, listing or record ever reads. Each call is one command:
//! acquire and extend a `findOneAndUpdate`, release an `updateOne`, state an aggregation,
//! each built in [`pipeline`] on the server's clock. Async code, run by the kit's runner
//! like `ops`.

pub(crate) mod document;
pub(crate) mod pipeline;

use std::future::Future;
use std::time::UNIX_EPOCH;

use leader_core::kit::{Call, Released, SharedStore, calls};
use leader_core::{
    ExtendOutcome, LockName, MaxReaders, ReleaseRequest, Renewal, Role, SharedOutcome,
    SharedRequest, SharedState,
};
use mongodb::bson::Document;
use mongodb::options::{AggregateOptions, ReturnDocument};

use crate::backend::MongoBackend;
use crate::calls::Op;
use crate::document::ShapeError;
use crate::error::{OpError, is_duplicate_key};
use crate::ops::Store;
use crate::pipeline::SERVER_NOW;
use crate::time::{check_lease, from_bson};
use document::{SharedDoc, decode, lease};

/// How often acquire sends its update when a racing upsert of a new name loses
/// (duplicate key) or the server answers with no document.
const ACQUIRE_ATTEMPTS: usize = 3;

/// The read/write locks' collection beside the lock collection `collection`.
pub(crate) fn shared_collection(collection: &str) -> String {
    format!("{collection}_shared")
}

/// The answer an acquire's returned document means: the owner's unreleased hold in the
/// role is a grant (new or renewed: the pipeline renewed it), a write's own intent a
/// queue, anything else a refusal; `Held` and `Queued` carry the lock as written (the
/// pipeline dropped what had run out).
fn answer(request: &AcquireShared, doc: &Document) -> Result<SharedOutcome, ShapeError> {
    let record = decode(doc)?;
    let key = &request.call.key;
    let owner = request.call.owner;
    if let Some(holder) = record.hold_of(request.role, owner) {
        return Ok(SharedOutcome::Acquired(lease(key, holder)));
    }
    let state = state_as_written(&record, key);
    Ok(match request.role {
        Role::Write if record.writer.is_none() && record.is_queued(owner) => {
            SharedOutcome::Queued(state)
        }
        _ => SharedOutcome::Held(state),
    })
}

/// The lock as an acquire wrote it: the pipeline dropped every hold and intent that had
/// run out, so all it holds was live on the server's clock then.
fn state_as_written(record: &SharedDoc, key: &LockName) -> SharedState {
    record.state(key, UNIX_EPOCH)
}

impl Store {
    /// One `findOneAndUpdate` (upsert) per attempt; see [`pipeline::acquire`].
    pub(crate) async fn acquire_shared(
        self,
        request: AcquireShared,
    ) -> Result<SharedOutcome, OpError> {
        let call = &request.call;
        check_lease(call.lease_time)?;
        let mut last = None;
        for _ in 0..ACQUIRE_ATTEMPTS {
            let plan = pipeline::acquire(
                &call.key,
                request.role,
                call.owner,
                &call.leader_id,
                call.lease_time,
                request.max_readers.get(),
            );
            let answered = self
                .shared
                .find_one_and_update(plan.filter, plan.update)
                .upsert(true)
                .return_document(ReturnDocument::After)
                .max_time(self.max_time)
                .write_concern(self.write_concern.clone())
                .await;
            match answered {
                Ok(Some(doc)) => return Ok(answer(&request, &doc)?),
                Ok(None) => last = None,
                // Another upsert inserted the name first: the next attempt sees its document.
                Err(err) if is_duplicate_key(&err) => last = Some(err),
                Err(err) => return Err(err.into()),
            }
        }
        Err(match last {
            Some(err) => err.into(),
            None => OpError::NoDocument(ACQUIRE_ATTEMPTS),
        })
    }

    /// One `findOneAndUpdate`; see [`pipeline::extend`].
    pub(crate) async fn extend_shared(self, call: ExtendShared) -> Result<ExtendOutcome, OpError> {
        let lease = &call.call.lease;
        let plan = pipeline::extend(
            &lease.key,
            call.role,
            lease.owner,
            check_lease(call.call.lease_time)?,
        );
        let renewed = self
            .shared
            .find_one_and_update(plan.filter, plan.update)
            .return_document(ReturnDocument::After)
            .max_time(self.max_time)
            .write_concern(self.write_concern.clone())
            .await?;
        let Some(doc) = renewed else {
            return Ok(ExtendOutcome::NotHeld);
        };
        let record = decode(&doc)?;
        Ok(match record.hold_of(call.role, lease.owner) {
            Some(holder) => ExtendOutcome::Extended {
                expires_at: holder.expires,
            },
            None => ExtendOutcome::NotHeld,
        })
    }

    /// One `updateOne`; see [`pipeline::release`]. Its answer counts the document it
    /// matched, not whether the hold was freed or kept for its minimum lease: `Ended`
    /// (the change stream wakes the waiters).
    pub(crate) async fn release_shared(self, call: ReleaseShared) -> Result<Released, OpError> {
        let lease = &call.call.lease;
        let plan = pipeline::release(&lease.key, call.role, lease.owner, call.call.min_lease_time);
        let update = self
            .shared
            .update_one(plan.filter, plan.update)
            .write_concern(self.write_concern.clone())
            .await?;
        Ok(match update.matched_count {
            0 => Released::NotHeld,
            _ => Released::Ended,
        })
    }

    /// One aggregation reading the document with the server's time; holds and intents
    /// that ran out on the server's clock are left out.
    pub(crate) async fn state_shared(self, key: LockName) -> Result<SharedState, OpError> {
        let mut options = AggregateOptions::default();
        options.max_time = Some(self.max_time);
        let mut cursor = self
            .shared
            .aggregate(crate::pipeline::state(&key))
            .with_options(options)
            .await?;
        if !cursor.advance().await? {
            return Ok(SharedState::empty(key.as_str()));
        }
        let doc: Document = cursor.deserialize_current()?;
        let record = decode(&doc)?;
        let now = doc
            .get_datetime(SERVER_NOW)
            .ok()
            .and_then(|now| from_bson(*now))
            .ok_or(OpError::Shape(ShapeError::Missing(SERVER_NOW)))?;
        Ok(record.state(&key, now))
    }
}

/// `try_acquire_shared`, owning what it sends.
#[derive(Debug, Clone)]
#[allow(unreachable_pub)] // named by `SharedStore`'s associated type, in a private module
pub struct AcquireShared {
    call: calls::Acquire,
    role: Role,
    max_readers: MaxReaders,
}

impl Call for AcquireShared {
    type Output = SharedOutcome;
    const NAME: &'static str = "acquire_shared";
    fn outcome(output: &SharedOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for AcquireShared {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<SharedOutcome, OpError>> + Send + 'static {
        store.acquire_shared(self)
    }
}

/// `extend_shared`, owning its lease.
#[derive(Debug, Clone)]
#[allow(unreachable_pub)] // named by `SharedStore`'s associated type, in a private module
pub struct ExtendShared {
    call: calls::Extend,
    role: Role,
}

impl Call for ExtendShared {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend_shared";
    fn outcome(output: &ExtendOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for ExtendShared {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<ExtendOutcome, OpError>> + Send + 'static {
        store.extend_shared(self)
    }
}

/// `release_shared`, owning its lease.
#[derive(Debug, Clone)]
#[allow(unreachable_pub)] // named by `SharedStore`'s associated type, in a private module
pub struct ReleaseShared {
    call: calls::Release,
    role: Role,
}

impl Call for ReleaseShared {
    type Output = Released;
    const NAME: &'static str = "release_shared";
    fn outcome(output: &Released) -> &'static str {
        output.as_str()
    }
}

impl Op for ReleaseShared {
    fn run(self, store: Store) -> impl Future<Output = Result<Released, OpError>> + Send + 'static {
        store.release_shared(self)
    }
}

/// `state_shared`.
#[derive(Debug, Clone)]
#[allow(unreachable_pub)] // named by `SharedStore`'s associated type, in a private module
pub struct StateShared {
    key: LockName,
}

impl Call for StateShared {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";
}

impl Op for StateShared {
    fn run(
        self,
        store: Store,
    ) -> impl Future<Output = Result<SharedState, OpError>> + Send + 'static {
        store.state_shared(self.key)
    }
}

/// Each call owns what it sends (it may be spawned), as the exclusive calls do.
impl SharedStore for MongoBackend {
    type AcquireShared<'a> = AcquireShared;
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> AcquireShared {
        AcquireShared {
            call: request.request.into(),
            role: request.role,
            max_readers: request.max_readers,
        }
    }

    type ExtendShared<'a> = ExtendShared;
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role) -> ExtendShared {
        ExtendShared {
            call: renewal.into(),
            role,
        }
    }

    type ReleaseShared<'a> = ReleaseShared;
    fn plan_release_shared<'a>(&'a self, release: ReleaseRequest<'a>, role: Role) -> ReleaseShared {
        ReleaseShared {
            call: release.into(),
            role,
        }
    }

    type StateShared<'a> = StateShared;
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> StateShared {
        StateShared { key: key.clone() }
    }
}
