//! Fencing at the resource: MongoDB updates that a stale lock holder cannot make.
//!
//! A fencing token protects nothing until the resource checks it. A holder that was paused
//! past the end of its lease still believes it leads; when its write arrives, another node
//! may hold the lock with a newer token and may already have written. [`Fence`] builds an
//! `update_one` that the server applies only when the document's fence field (default
//! `fence`, see [`Fence::with_field`]) is **absent, null or not above the token**:
//!
//! - [`Fence::filter`] adds `$or: [{fence: null}, {fence: {$lte: token}}]` to the caller's
//!   filter;
//! - [`Fence::set`] makes `{$set: {...fields, fence: token}}`, so the write raises the
//!   fence in the same atomic single-document update;
//! - [`FenceOutcome::from_update`] reads what happened.
//!
//! An equal token is accepted (one holder writes several times); a lower one matches
//! nothing and changes nothing. The fence lives in the document it guards, so the two are
//! never lost apart: a deleted or restored document takes its fence with it.
//!
//! # Outcomes
//!
//! - `matched_count >= 1`, or an upserted `_id`: [`FenceOutcome::Accepted`].
//! - `matched_count == 0`: [`FenceOutcome::Rejected`]. Without `upsert` this is also what a
//!   *missing* document gives; tell them apart by reading it: none means missing,
//!   otherwise [`Fence::highest_seen`] says which token won.
//! - With `upsert(true)` and a stale token, the filter misses the existing document, so
//!   the server tries to insert a second one with the same `_id` and fails with a
//!   duplicate-key error (11000) — as does the loser of two racing first inserts.
//!   `from_update` turns that error into [`FenceOutcome::Rejected`]. This needs the filter
//!   to name a unique key (`_id`, or a field with a unique index): an upsert on a field
//!   that is not unique would insert a second document instead of failing. It also means
//!   a duplicate key on *another* unique index of the collection reads as `Rejected`.
//!
//! # Tokens in BSON
//!
//! BSON integers are signed, so tokens are stored as `Int64`; [`Fence::new`] refuses a
//! token above `i64::MAX`. The toolkit's tokens track the server clock in microseconds
//! (about 1.8 × 10¹⁵ in 2026), far below that.
//!
//! # Examples
//!
//! ```no_run
//! use leader_mongodb::fence::{Fence, FenceOutcome};
//! use mongodb::bson::{Document, doc};
//!
//! # async fn write(invoices: mongodb::Collection<Document>, token: u64)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! // `token` is the holder's `LeaseContext::fencing_token()`.
//! let fence = Fence::new(token)?;
//! let result = invoices
//!     .update_one(
//!         fence.filter(doc! { "_id": "inv-42" }),
//!         fence.set(doc! { "status": "paid" }),
//!     )
//!     .upsert(true)
//!     .await;
//! match FenceOutcome::from_update(result)? {
//!     FenceOutcome::Accepted => println!("written"),
//!     FenceOutcome::Rejected => println!("a newer holder has written; stopping"),
//! }
//! # Ok(())
//! # }
//! ```

use mongodb::bson::{Bson, Document, doc};
use mongodb::error::Error as DriverError;
use mongodb::results::UpdateResult;

use crate::error::is_duplicate_key;

/// The fence field's name unless [`Fence::with_field`] changes it.
pub const DEFAULT_FIELD: &str = "fence";

/// A holder's fencing token and the document field that keeps the highest token seen:
/// builds the filter and update of a fenced `update_one`.
///
/// # Examples
///
/// ```
/// use leader_mongodb::fence::Fence;
/// use mongodb::bson::doc;
///
/// let fence = Fence::new(7)?;
/// assert_eq!(
///     fence.filter(doc! { "_id": "inv-42" }),
///     doc! { "_id": "inv-42", "$or": [{ "fence": null }, { "fence": { "$lte": 7_i64 } }] },
/// );
/// assert_eq!(
///     fence.set(doc! { "status": "paid" }),
///     doc! { "$set": { "status": "paid", "fence": 7_i64 } },
/// );
/// # Ok::<(), leader_mongodb::fence::FenceError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    field: String,
    token: i64,
}

impl Fence {
    /// A fence for a holder with `token`, on the field [`DEFAULT_FIELD`].
    ///
    /// # Errors
    ///
    /// [`FenceError::TokenOutOfRange`] when `token` is above `i64::MAX`.
    pub fn new(token: u64) -> Result<Self, FenceError> {
        let token = i64::try_from(token).map_err(|_| FenceError::TokenOutOfRange(token))?;
        Ok(Fence {
            field: DEFAULT_FIELD.to_owned(),
            token,
        })
    }

    /// The same fence on another field (a dotted path reaches into a subdocument). It
    /// must be a valid field name; the server refuses an update with an empty one or one
    /// starting with `$`.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = field.into();
        self
    }

    /// The fence field.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The holder's token.
    pub fn token(&self) -> u64 {
        // Never negative: `new` took it from a u64.
        self.token.unsigned_abs()
    }

    /// `filter`, narrowed to documents whose fence is absent, null or `<= token`.
    ///
    /// The condition is added as the filter's `$or`; a filter that already has one is
    /// wrapped as `{$and: [filter, condition]}` instead.
    pub fn filter(&self, filter: Document) -> Document {
        let condition = vec![
            Bson::Document(doc! { &self.field: Bson::Null }),
            Bson::Document(doc! { &self.field: { "$lte": self.token } }),
        ];
        if filter.contains_key("$or") {
            doc! { "$and": [filter, { "$or": condition }] }
        } else {
            let mut filter = filter;
            filter.insert("$or", condition);
            filter
        }
    }

    /// The update `{$set: {...fields, <field>: token}}`: writes `fields` and raises the fence.
    pub fn set(&self, fields: Document) -> Document {
        let mut fields = fields;
        fields.insert(self.field.clone(), self.token);
        doc! { "$set": fields }
    }

    /// The token recorded in `document`, `None` when it has no fence yet (absent or null).
    ///
    /// # Errors
    ///
    /// [`FenceError::CorruptFence`] when the field holds anything but a non-negative integer
    /// (a whole, non-negative double is read as one: the shell writes numbers as doubles).
    pub fn highest_seen(&self, document: &Document) -> Result<Option<u64>, FenceError> {
        let mut value = None;
        let mut current = Some(document);
        for part in self.field.split('.') {
            value = current.and_then(|doc| doc.get(part));
            current = match value {
                Some(Bson::Document(inner)) => Some(inner),
                _ => None,
            };
        }
        let token = match value {
            None | Some(Bson::Null) => return Ok(None),
            Some(Bson::Int64(n)) => u64::try_from(*n).ok(),
            Some(Bson::Int32(n)) => u64::try_from(*n).ok(),
            Some(Bson::Double(d)) if d.fract() == 0.0 && (0.0..9.2e18).contains(d) => {
                Some(*d as u64)
            }
            Some(_) => None,
        };
        match (token, value) {
            (Some(token), _) => Ok(Some(token)),
            (None, Some(found)) => Err(FenceError::CorruptFence {
                field: self.field.clone(),
                found: shorten(found.to_string()),
            }),
            (None, None) => Ok(None),
        }
    }
}

/// Whether a fenced update happened.
///
/// Exhaustive on purpose: a write either happened or did not, and a caller should decide
/// both cases explicitly rather than through a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use = "a rejected write did not happen; check the outcome"]
pub enum FenceOutcome {
    /// The document matched (its fence was not above the token) or was inserted: the
    /// update happened and the fence holds the token.
    Accepted,
    /// Nothing was written: a newer token has written (or, without upsert, no document
    /// matched the caller's own filter — see the [module docs](self)).
    Rejected,
}

impl FenceOutcome {
    /// The outcome of a fenced `update_one` (with or without upsert).
    ///
    /// # Errors
    ///
    /// The driver's error, unless it is a duplicate key (11000), which is a rejection.
    pub fn from_update(result: Result<UpdateResult, DriverError>) -> Result<Self, DriverError> {
        match result {
            Ok(update) if update.matched_count > 0 || update.upserted_id.is_some() => {
                Ok(FenceOutcome::Accepted)
            }
            Ok(_) => Ok(FenceOutcome::Rejected),
            Err(err) if is_duplicate_key(&err) => Ok(FenceOutcome::Rejected),
            Err(err) => Err(err),
        }
    }

    /// `true` when the write happened.
    pub fn is_accepted(&self) -> bool {
        matches!(self, FenceOutcome::Accepted)
    }
}

/// Why a fence could not be built or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FenceError {
    /// The token is above `i64::MAX`, the largest integer BSON stores.
    #[error("fencing token {0} is above i64::MAX, the largest integer BSON stores")]
    TokenOutOfRange(u64),
    /// The fence field holds something that is not a token (written by someone else). No
    /// fenced update can match such a document: it refuses every write until repaired.
    #[error("the fence field `{field}` holds {found}, not a fencing token")]
    CorruptFence {
        /// The fence field.
        field: String,
        /// What it holds, cut to about 64 bytes.
        found: String,
    },
}

fn shorten(mut text: String) -> String {
    if text.len() > 64 {
        let cut = (0..=64).rev().find(|i| text.is_char_boundary(*i));
        text.truncate(cut.unwrap_or(0));
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_with_its_own_or_is_wrapped() {
        let fence = Fence::new(3).unwrap().with_field("meta.fence");
        let own = doc! { "$or": [{ "a": 1 }, { "b": 1 }] };
        assert_eq!(
            fence.filter(own.clone()),
            doc! { "$and": [own, { "$or": [
                { "meta.fence": null }, { "meta.fence": { "$lte": 3_i64 } }
            ] }] }
        );
    }

    #[test]
    fn tokens_beyond_bson_integers_are_refused() {
        assert_eq!(
            Fence::new(u64::MAX),
            Err(FenceError::TokenOutOfRange(u64::MAX))
        );
        let max = u64::try_from(i64::MAX).unwrap();
        assert_eq!(Fence::new(max).unwrap().token(), max);
    }

    #[test]
    fn reads_the_recorded_token_or_names_what_is_there() {
        let fence = Fence::new(1).unwrap().with_field("meta.fence");
        let read = |doc: Document| fence.highest_seen(&doc);
        assert_eq!(read(doc! {}), Ok(None));
        assert_eq!(read(doc! { "meta": { "fence": null } }), Ok(None));
        assert_eq!(read(doc! { "meta": { "fence": 9_i64 } }), Ok(Some(9)));
        assert_eq!(read(doc! { "meta": { "fence": 9_i32 } }), Ok(Some(9)));
        assert_eq!(read(doc! { "meta": { "fence": 9.0 } }), Ok(Some(9)));
        for bad in [
            Bson::from("abc"),
            Bson::from(-1_i64),
            Bson::from(1.5),
            Bson::from(f64::NAN),
        ] {
            let err = read(doc! { "meta": { "fence": bad.clone() } }).unwrap_err();
            assert!(
                matches!(&err, FenceError::CorruptFence { field, .. } if field == "meta.fence"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn update_results_become_outcomes() {
        let mut matched = UpdateResult::default();
        matched.matched_count = 1;
        let mut inserted = UpdateResult::default();
        inserted.upserted_id = Some(Bson::from("inv-42"));
        let outcome = |r| FenceOutcome::from_update(Ok(r)).unwrap();
        assert_eq!(outcome(matched), FenceOutcome::Accepted);
        assert_eq!(outcome(inserted), FenceOutcome::Accepted);
        assert_eq!(outcome(UpdateResult::default()), FenceOutcome::Rejected);
    }
}
