//! The listing's query and its page: plain functions, no I/O.
//!
//! The names under a prefix are one range of the `_id` index, from the prefix up to
//! `ListRequest::prefix_end` (excluded): MongoDB compares strings by their UTF-8 bytes (the
//! simple collation), which is code point order, so that range holds exactly the names
//! that start with the prefix. No regex: a name's `.`, `*` or `[` is just a character.
//!
//! The cursor is the last name shown, tagged with this backend and the prefix
//! (`ListCursor::tagged`): one of another listing is refused.

use leader_core::{CursorError, LeaderState, ListCursor, ListPage, ListRequest};
use mongodb::bson::{Bson, Document, doc};

use crate::document::field::{ID, OWNER};
use crate::document::{ShapeError, decode, lock_name};
use crate::error::BACKEND;
use crate::pipeline;

/// The `find` filter of one page: the `_id` range of the prefix (after the cursor's name,
/// exclusive), and only held documents, as `state` decides it: an owner (a lock kept for
/// its minimum lease included) and unexpired on the server's clock.
///
/// # Errors
///
/// [`CursorError`] for a cursor this backend did not make for this prefix.
pub(crate) fn filter(request: &ListRequest) -> Result<Document, CursorError> {
    let prefix = request.prefix.as_str();
    let mut range = match ListCursor::resume(BACKEND, request)? {
        Some(after) if after >= prefix => doc! { "$gt": after },
        _ => doc! { "$gte": prefix },
    };
    if let Some(upper) = request.prefix_end() {
        range.insert("$lt", upper);
    }
    Ok(doc! {
        ID: range,
        OWNER: { "$ne": Bson::Null },
        "$expr": pipeline::unexpired(),
    })
}

/// The page size of `request` (at least 1).
pub(crate) fn limit(request: &ListRequest) -> usize {
    request.page_size()
}

/// How many documents to fetch for a page: one more than it holds, to know whether another
/// page follows.
pub(crate) fn fetch(request: &ListRequest) -> i64 {
    i64::try_from(limit(request).saturating_add(1)).unwrap_or(i64::MAX)
}

/// The page of `docs` (in name order, at most [`fetch`] of them): the first
/// [`limit`] of `request`, and a cursor at the last of them when there were more.
pub(crate) fn page(docs: &[Document], request: &ListRequest) -> Result<ListPage, ShapeError> {
    let limit = limit(request);
    let shown = docs.get(..limit).unwrap_or(docs);
    let locks = shown
        .iter()
        .map(|doc| {
            Ok(LeaderState::occupied(
                lock_name(doc)?,
                decode(doc)?.holder(),
            ))
        })
        .collect::<Result<Vec<_>, ShapeError>>()?;
    let next = (docs.len() > limit)
        .then(|| {
            let last = locks.last()?;
            Some(ListCursor::tagged(BACKEND, request, last.lock_name()))
        })
        .flatten();
    Ok(ListPage::new(locks, next))
}

#[cfg(test)]
mod tests {
    use mongodb::bson::DateTime;

    use super::*;

    #[test]
    fn a_page_starts_at_the_prefix_or_after_the_cursor_and_takes_held_locks_only() {
        let first = filter(&ListRequest::new("job:")).unwrap();
        assert_eq!(
            first.get_document("_id").unwrap(),
            &doc! { "$gte": "job:", "$lt": "job;" }
        );
        assert_eq!(first.get_document("owner").unwrap(), &doc! { "$ne": null });
        assert_eq!(
            first.get_document("$expr").unwrap(),
            &doc! { "$gt": [ "$expires_at", "$$NOW" ] }
        );
        let job = ListRequest::new("job:");
        let next = filter(
            &job.clone()
                .after(ListCursor::tagged(BACKEND, &job, "job:7")),
        )
        .unwrap();
        assert_eq!(
            next.get_document("_id").unwrap(),
            &doc! { "$gt": "job:7", "$lt": "job;" }
        );
        // A position below the prefix starts at the prefix.
        let stray = filter(&job.clone().after(ListCursor::tagged(BACKEND, &job, "a"))).unwrap();
        assert_eq!(
            stray.get_document("_id").unwrap(),
            &doc! { "$gte": "job:", "$lt": "job;" }
        );
        // A cursor this backend did not make for this prefix is refused.
        for foreign in [
            ListCursor::new("job:7"),
            ListCursor::tagged("sqlite", &job, "job:7"),
            ListCursor::tagged(BACKEND, &ListRequest::new("jo"), "job:7"),
        ] {
            assert!(filter(&job.clone().after(foreign)).is_err());
        }
        let all = filter(&ListRequest::new("")).unwrap();
        assert_eq!(all.get_document("_id").unwrap(), &doc! { "$gte": "" });
    }

    fn held(name: &str, token: i64) -> Document {
        doc! {
            "_id": name,
            "owner": "released",
            "leader_id": "node-a",
            "fencing_token": token,
            "acquired_at": DateTime::from_millis(1_000),
            "expires_at": DateTime::from_millis(31_000),
        }
    }

    #[test]
    fn one_document_more_than_the_limit_makes_a_cursor_at_the_last_shown() {
        let docs = [held("a", 1), held("b", 2), held("c", 3)];
        let request = ListRequest::new("").with_limit(2);
        assert_eq!(fetch(&request), 3);
        let more = page(&docs, &request).unwrap();
        let names: Vec<_> = more.locks.iter().map(LeaderState::lock_name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(more.next, Some(ListCursor::tagged(BACKEND, &request, "b")));
        assert_eq!(more.locks[1].leader().unwrap().fencing_token, 2);

        let last = page(&docs[..2], &request).unwrap();
        assert_eq!(last.locks.len(), 2);
        assert_eq!(last.next, None);
        assert_eq!(page(&[], &request).unwrap(), ListPage::default());
    }

    #[test]
    fn a_zero_limit_counts_as_one_and_a_huge_one_does_not_overflow() {
        let mut request = ListRequest::new("");
        request.limit = 0;
        assert_eq!((limit(&request), fetch(&request)), (1, 2));
        request.limit = usize::MAX;
        assert_eq!(fetch(&request), i64::MAX);
    }

    #[test]
    fn a_document_of_another_shape_is_an_error() {
        let mut broken = held("a", 1);
        broken.remove("leader_id");
        let request = ListRequest::new("").with_limit(5);
        assert_eq!(
            page(&[broken], &request),
            Err(ShapeError::Missing("leader_id"))
        );
        assert!(page(&[doc! { "_id": 5 }], &request).is_err());
    }
}
