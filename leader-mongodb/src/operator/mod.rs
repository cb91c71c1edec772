//! The operator's calls against the collection: listing the held locks under a prefix, and
//! freeing a lock whoever holds it (or only while its holder has a given fencing token).
//! Async code, run by the kit's runner like `ops`; the listing's query and page,
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

    /// One `findOneAndUpdate` returning the document before it; see
    /// [`pipeline::force_release`], or with `only`, [`pipeline::force_release_if`].
    pub(crate) async fn force_release(
        self,
        key: LockName,
        only: Option<u64>,
    ) -> Result<ForceReleaseOutcome, OpError> {
        let plan = match only {
            None => pipeline::force_release(&key),
            Some(fencing_token) => pipeline::force_release_if(&key, fencing_token),
        };
        self.force(plan, only).await
    }

    /// Runs a force release's `plan`: the document before it is the holder, freed unless
    /// `only` names another token than its own.
    async fn force(
        self,
        plan: pipeline::Plan,
        only: Option<u64>,
    ) -> Result<ForceReleaseOutcome, OpError> {
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
}
