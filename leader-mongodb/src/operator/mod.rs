//! The operator's calls against the collection: listing the held locks under a prefix, and
//! freeing a lock whoever holds it (or only while its holder has a given fencing token).
//! Async code, run by both SPI implementations like `ops`; the listing's query and page,
//! without I/O, are in [`listing`].

mod listing;

use leader_core::{ForceReleaseOutcome, ListPage, ListRequest, LockName};
use mongodb::bson::{Document, doc};
use mongodb::options::ReturnDocument;

use crate::document::decode;
use crate::document::field::ID;
use crate::error::OpError;
use crate::ops::Store;
use crate::pipeline;

impl Store {
    /// One `find` over the `_id` range of the prefix ([`listing::filter`]), in name order,
    /// one document more than the page holds; see [`listing::page`].
    pub(crate) async fn list(self, request: ListRequest) -> Result<ListPage, OpError> {
        let result = async {
            let fetch = listing::fetch(&request);
            let filter = listing::filter(&request)?;
            let mut cursor = self
                .collection
                .find(filter)
                .sort(doc! { ID: 1 })
                .limit(fetch)
                .batch_size(u32::try_from(fetch).unwrap_or(u32::MAX))
                .max_time(self.max_time)
                .await?;
            let mut docs = Vec::new();
            while cursor.advance().await? {
                docs.push(cursor.deserialize_current()?);
            }
            Ok(listing::page(&docs, &request)?)
        }
        .await;
        match &result {
            Ok(page) => tracing::debug!(
                prefix = %request.prefix,
                locks = page.locks.len(),
                more = page.next.is_some(),
                "mongodb list"
            ),
            Err(err) => {
                tracing::debug!(prefix = %request.prefix, outcome = "error", error = %err, "mongodb list")
            }
        }
        result
    }

    /// One `findOneAndUpdate` returning the document before it; see
    /// [`pipeline::force_release`].
    pub(crate) async fn force_release(self, key: LockName) -> Result<ForceReleaseOutcome, OpError> {
        let plan = pipeline::force_release(&key);
        self.force(key, plan, None).await
    }

    /// One `findOneAndUpdate` returning the document before it; see
    /// [`pipeline::force_release_if`].
    pub(crate) async fn force_release_if(
        self,
        key: LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, OpError> {
        let plan = pipeline::force_release_if(&key, fencing_token);
        self.force(key, plan, Some(fencing_token)).await
    }

    /// Runs a force release's `plan`: the document before it is the holder, freed unless
    /// `only` names another token than its own.
    async fn force(
        self,
        key: LockName,
        plan: pipeline::Plan,
        only: Option<u64>,
    ) -> Result<ForceReleaseOutcome, OpError> {
        let result = async {
            let before: Option<Document> = self
                .collection
                .find_one_and_update(plan.filter, plan.update)
                .return_document(ReturnDocument::Before)
                .max_time(self.max_time)
                .write_concern(self.write_concern.clone())
                .await?;
            let holder = match before {
                Some(doc) => Some(decode(&doc)?.holder()),
                None => None,
            };
            let freed = holder
                .as_ref()
                .is_some_and(|holder| only.is_none_or(|token| token == holder.fencing_token));
            Ok(ForceReleaseOutcome::conditional(holder, freed))
        }
        .await;
        match &result {
            Ok(
                outcome @ (ForceReleaseOutcome::Released(holder)
                | ForceReleaseOutcome::HolderChanged(holder)),
            ) => tracing::debug!(
                lock = %key,
                outcome = outcome.as_str(),
                fencing_token = holder.fencing_token,
                "mongodb force release"
            ),
            Ok(other) => {
                tracing::debug!(lock = %key, outcome = other.as_str(), "mongodb force release")
            }
            Err(err) => {
                tracing::debug!(lock = %key, outcome = "error", error = %err, "mongodb force release")
            }
        }
        result
    }
}
