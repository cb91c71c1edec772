//! [`IndexListing`]: a page of a name's derived locks (a leader group's slots, ranked
//! candidates' records) read from the name's index in one script call (`lua/list.lua`),
//! for a prefix inside one name's derived names (`job#`, `job#rank:`). Its cost is the
//! page's members, whatever else the server holds; a `SCAN` walks the whole keyspace.

use std::time::SystemTime;

use leader_core::{ListCursor, ListPage, ListRequest, LockName};
use redis::Value;

use super::{ListFailure, OP};
use crate::decode::{array, int, text_field};
use crate::error::OpError;
use crate::keys::{derived_head, index_key};
use crate::ops::{ScriptCall, holder_state};
use crate::scripts::LIST;

/// One page of a listing inside one name's derived names.
#[derive(Debug)]
pub(crate) struct IndexListing {
    /// The name whose derived names are listed (what precedes the `#`).
    group: String,
    /// What the listed names' part after the `#` starts with.
    rest: String,
    /// What the lock keys of the group's derived names start with.
    head: String,
    /// The group's index.
    index: String,
    /// The last member the previous page looked at.
    after: Option<String>,
    limit: usize,
    /// This node's clock when the page was asked for, which judges a record without key
    /// expiry (see `holds_without_expiry`).
    now: SystemTime,
}

impl IndexListing {
    /// The page `request` asks for under `key_prefix` when its prefix lies inside one
    /// name's derived names (it holds the separator `#`: every name it matches is a
    /// derived name of what precedes the first `#`), read at `now` on this node's clock;
    /// `None` for any other prefix.
    ///
    /// # Errors
    ///
    /// [`OpError::BadCursor`] for a cursor that no page of this listing made.
    pub(crate) fn new(
        key_prefix: &str,
        request: &ListRequest,
        now: SystemTime,
    ) -> Result<Option<Self>, OpError> {
        let Some((group, rest)) = request.prefix.split_once(LockName::DERIVED_SEPARATOR) else {
            return Ok(None);
        };
        let after = match &request.cursor {
            None => None,
            Some(cursor) => Some(member_of(cursor, group, rest)?),
        };
        Ok(Some(IndexListing {
            group: group.to_owned(),
            rest: rest.to_owned(),
            head: derived_head(key_prefix, group),
            index: index_key(key_prefix, group),
            after,
            limit: request.page_size(),
            now,
        }))
    }

    /// The index's key, which errors about the index name.
    pub(crate) fn index(&self) -> &str {
        &self.index
    }

    /// The `ZRANGEBYLEX` bounds of the page: from the rest prefix (or after the cursor's
    /// member) to the rest prefix followed by the byte 0xFF, above every member that
    /// starts with it (names are UTF-8, which never holds 0xFF).
    fn bounds(&self) -> (Vec<u8>, Vec<u8>) {
        let min = match &self.after {
            Some(member) => format!("({member}").into_bytes(),
            None => format!("[{}", self.rest).into_bytes(),
        };
        let mut max = format!("[{}", self.rest).into_bytes();
        max.push(0xFF);
        (min, max)
    }

    /// The script call that reads the page.
    pub(crate) fn invocation(&self) -> ScriptCall {
        let (min, max) = self.bounds();
        let mut invocation = ScriptCall::new(&LIST, 1);
        invocation.key(&self.index);
        invocation.arg(&self.head).arg(min).arg(max).arg(self.limit);
        invocation
    }

    /// The page in the script's reply: the held locks among the members it returned.
    ///
    /// # Errors
    ///
    /// A reply of another shape, a corrupted record (naming its key), or another type of
    /// value at a record's key or at the index.
    pub(crate) fn decode(&self, reply: &Value) -> Result<ListPage, ListFailure> {
        let bad = || ListFailure::from(OpError::bad_reply(OP, reply));
        let items = array(reply).ok_or_else(bad)?;
        match items.first().and_then(int) {
            Some(1) => {}
            Some(-1) => {
                let member = text_field(items.get(1), "member")?;
                let failure = OpError::InScript {
                    op: OP,
                    message: text_field(items.get(2), "error")?,
                };
                return Err(ListFailure::at(failure, format!("{}{member}", self.head)));
            }
            Some(-2) => {
                let failure = OpError::InScript {
                    op: OP,
                    message: text_field(items.get(1), "error")?,
                };
                return Err(ListFailure::at(failure, self.index.clone()));
            }
            _ => return Err(bad()),
        }
        let next = text_field(items.get(1), "next")?;
        let records = items.get(2..).unwrap_or_default();
        if records.len() % 3 != 0 {
            return Err(bad());
        }
        let mut locks = Vec::new();
        for record in records.chunks(3) {
            let Some(Value::BulkString(member)) = record.first() else {
                return Err(bad());
            };
            let pttl = record.get(1).and_then(int).ok_or_else(bad)?;
            let fields = record.get(2).and_then(array).ok_or_else(bad)?;
            // What no acquire writes (a member set by hand) names no lock: left out, as a
            // scan leaves out the keys that hold no lock name.
            let Ok(member) = std::str::from_utf8(member) else {
                continue;
            };
            let name = format!("{}{}{member}", self.group, LockName::DERIVED_SEPARATOR);
            if !member.starts_with(&self.rest) || LockName::new(&name).is_err() {
                continue;
            }
            match holder_state(&name, pttl, fields, self.now) {
                Ok(state) if state.leader().is_some() => locks.push(state),
                Ok(_) => {}
                Err(failure) => {
                    return Err(ListFailure::at(failure, format!("{}{member}", self.head)));
                }
            }
        }
        let next = (!next.is_empty()).then(|| {
            ListCursor::new(format!(
                "{}{}{next}",
                self.group,
                LockName::DERIVED_SEPARATOR
            ))
        });
        Ok(ListPage::new(locks, next))
    }
}

/// The member a cursor resumes after: the cursor is the full name of the last member a
/// page looked at (`<group>#<member>`), which starts with the listing's prefix.
fn member_of(cursor: &ListCursor, group: &str, rest: &str) -> Result<String, OpError> {
    cursor
        .as_str()
        .strip_prefix(group)
        .and_then(|tail| tail.strip_prefix(LockName::DERIVED_SEPARATOR))
        .filter(|member| member.starts_with(rest))
        .map(str::to_owned)
        .ok_or_else(|| OpError::BadCursor {
            cursor: cursor.as_str().chars().take(64).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn fields(owner: Option<&str>) -> Value {
        let owner = owner.map_or(Value::Nil, bulk);
        Value::Array(vec![owner, bulk("node"), bulk("7"), bulk("1"), bulk("2")])
    }

    fn names(page: &ListPage) -> Vec<&str> {
        page.locks
            .iter()
            .map(leader_core::LeaderState::lock_name)
            .collect()
    }

    #[test]
    fn only_prefixes_inside_a_names_derived_names_use_the_index() {
        assert!(
            IndexListing::new("leader", &ListRequest::new("job"), SystemTime::now())
                .unwrap()
                .is_none()
        );
        let listing = IndexListing::new(
            "leader",
            &ListRequest::new("job#rank:").with_limit(7),
            SystemTime::now(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(listing.index(), "leader:{job}:derived");
        assert_eq!(listing.head, "leader:{job}#");
        assert_eq!(listing.limit, 7);
        assert_eq!(
            listing.bounds(),
            (b"[rank:".to_vec(), b"[rank:\xff".to_vec())
        );
        let everything = IndexListing::new("leader", &ListRequest::new("job#"), SystemTime::now())
            .unwrap()
            .unwrap();
        assert_eq!(everything.bounds(), (b"[".to_vec(), b"[\xff".to_vec()));
    }

    #[test]
    fn a_page_keeps_the_held_records_and_resumes_after_the_last_member_looked_at() {
        let request = ListRequest::new("job#rank:");
        let listing = IndexListing::new("leader", &request, SystemTime::now())
            .unwrap()
            .unwrap();
        let reply = Value::Array(vec![
            Value::Int(1),
            bulk("rank:3:c"),
            bulk("rank:1:a"),
            Value::Int(5000),
            fields(Some("owner")),
            bulk("rank:2:b"),
            Value::Int(5000),
            fields(None),
        ]);
        let page = listing.decode(&reply).unwrap();
        assert_eq!(
            names(&page),
            ["job#rank:1:a"],
            "a record without owner is free"
        );
        let by_hand = Value::Array(vec![
            Value::Int(1),
            bulk(""),
            Value::BulkString(b"rank:\xff".to_vec()),
            Value::Int(5000),
            fields(Some("owner")),
            bulk("rank:{x}"),
            Value::Int(5000),
            fields(Some("owner")),
        ]);
        assert!(
            listing.decode(&by_hand).unwrap().locks.is_empty(),
            "members that name no lock are left out"
        );
        let next = page.next.expect("more may follow");
        assert_eq!(next.as_str(), "job#rank:3:c");

        let resumed = IndexListing::new("leader", &request.clone().after(next), SystemTime::now())
            .unwrap()
            .unwrap();
        assert_eq!(resumed.bounds().0, b"(rank:3:c");
        let last = Value::Array(vec![Value::Int(1), bulk("")]);
        assert_eq!(resumed.decode(&last).unwrap().next, None);
    }

    #[test]
    fn foreign_cursors_corrupted_records_and_odd_replies_are_errors() {
        for cursor in ["12", "1:12", "other#rank:1", "job#1"] {
            let request = ListRequest::new("job#rank:").after(ListCursor::new(cursor));
            assert!(
                matches!(
                    IndexListing::new("leader", &request, SystemTime::now()),
                    Err(OpError::BadCursor { .. })
                ),
                "{cursor}"
            );
        }
        let listing = IndexListing::new("leader", &ListRequest::new("job#"), SystemTime::now())
            .unwrap()
            .unwrap();
        let forever = Value::Array(vec![
            Value::Int(1),
            bulk(""),
            bulk("2"),
            Value::Int(-1),
            fields(Some("owner")),
        ]);
        let failed = listing.decode(&forever).unwrap_err();
        assert!(matches!(failed.failure, OpError::NoExpiry));
        assert_eq!(failed.key.as_deref(), Some("leader:{job}#2"));
        let wrong_type = Value::Array(vec![Value::Int(-1), bulk("2"), bulk("WRONGTYPE")]);
        let failed = listing.decode(&wrong_type).unwrap_err();
        assert!(matches!(failed.failure, OpError::InScript { .. }));
        assert_eq!(failed.key.as_deref(), Some("leader:{job}#2"));
        let bad_index = Value::Array(vec![Value::Int(-2), bulk("WRONGTYPE")]);
        let failed = listing.decode(&bad_index).unwrap_err();
        assert_eq!(failed.key.as_deref(), Some("leader:{job}:derived"));
        for odd in [
            Value::Okay,
            Value::Array(vec![Value::Int(1), bulk(""), bulk("2")]),
            Value::Array(vec![Value::Int(7)]),
        ] {
            let failed = listing.decode(&odd).unwrap_err();
            assert!(
                matches!(failed.failure, OpError::BadReply { .. }),
                "{odd:?}"
            );
        }
    }
}
