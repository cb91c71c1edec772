//! The read/write lock document and its decoding: pure functions, in `document`'s style.
//!
//! ```text
//! { _id: <lock name>, counter: <int64>, releases: <int64>,
//!   writer: <holder> | null, readers: [<holder>, ...], intent: <intent> | null }
//! holder: { owner: <32 hex digits>, leader_id: <node id>, fencing_token: <int64>,
//!           acquired_at: <date>, expires_at: <date>, released: <bool> }
//! intent: { owner: <32 hex digits>, leader_id: <node id>, expires_at: <date> }
//! ```
//!
//! `counter` is the last fencing token handed out, `releases` how many releases removed a
//! hold or an intent (the change the change stream watches for). A holder `released` is
//! kept for its minimum lease after its release.

use std::time::SystemTime;

use leader_core::kit::{Intent, SharedHolder};
use leader_core::{LeaderLease, Lease, LockName, OwnerToken, SharedState, WriterIntent};
use mongodb::bson::{Bson, Document};

use crate::document::ShapeError;
use crate::time::from_bson;

/// Field names of the read/write lock document.
pub(crate) mod field {
    pub(crate) use crate::document::field::{
        ACQUIRED_AT, EXPIRES_AT, FENCING_TOKEN, ID, LEADER_ID, OWNER,
    };
    /// The last fencing token handed out.
    pub(crate) const COUNTER: &str = "counter";
    /// How many releases removed a hold or an intent.
    pub(crate) const RELEASES: &str = "releases";
    /// The writer's hold, or null.
    pub(crate) const WRITER: &str = "writer";
    /// The readers' holds, in the order they came.
    pub(crate) const READERS: &str = "readers";
    /// A waiting writer's intent, or null.
    pub(crate) const INTENT: &str = "intent";
    /// Whether a holder is kept for its minimum lease after its release.
    pub(crate) const RELEASED: &str = "released";
}

use field::{
    ACQUIRED_AT, COUNTER, EXPIRES_AT, FENCING_TOKEN, INTENT, LEADER_ID, OWNER, READERS, RELEASED,
    RELEASES, WRITER,
};

/// A decoded read/write lock document: the holds as stored (expired ones included),
/// owners as the text stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedDoc {
    /// The last fencing token handed out.
    pub(crate) counter: u64,
    /// The writer.
    pub(crate) writer: Option<SharedHolder<SystemTime>>,
    /// The readers, in the order they came.
    pub(crate) readers: Vec<SharedHolder<SystemTime>>,
    /// A waiting writer's intent.
    pub(crate) intent: Option<Intent<SystemTime>>,
}

impl SharedDoc {
    /// `owner`'s hold in `role` that it may renew or release (not released), whatever its
    /// expiry.
    pub(crate) fn hold_of(
        &self,
        role: leader_core::Role,
        owner: OwnerToken,
    ) -> Option<&SharedHolder<SystemTime>> {
        let mine = |h: &&SharedHolder<SystemTime>| h.owner == owner && !h.released;
        match role {
            leader_core::Role::Read => self.readers.iter().find(mine),
            leader_core::Role::Write => self.writer.as_ref().filter(mine),
        }
    }

    /// Whether `owner`'s intent is recorded.
    pub(crate) fn is_queued(&self, owner: OwnerToken) -> bool {
        self.intent.as_ref().is_some_and(|i| i.owner == owner)
    }

    /// The snapshot of the lock `key` at `now` on the server's clock: no hold or intent
    /// that ran out.
    pub(crate) fn state(&self, key: &LockName, now: SystemTime) -> SharedState {
        SharedState::new(
            key.as_str(),
            self.writer
                .as_ref()
                .filter(|w| w.expires > now)
                .map(snapshot),
            self.readers
                .iter()
                .filter(|r| r.expires > now)
                .map(snapshot)
                .collect(),
            self.intent
                .as_ref()
                .filter(|i| i.expires > now)
                .map(|i| WriterIntent::new(i.node.clone(), i.expires)),
        )
    }
}

/// A holder as a snapshot shows it.
fn snapshot(holder: &SharedHolder<SystemTime>) -> LeaderLease {
    LeaderLease::new(
        holder.node.clone(),
        holder.acquired,
        holder.expires,
        holder.token,
    )
}

/// The lease `holder` is, on `key`.
pub(crate) fn lease(key: &LockName, holder: &SharedHolder<SystemTime>) -> Lease {
    Lease::new(
        key.clone(),
        holder.owner,
        holder.node.clone(),
        holder.token,
        holder.acquired,
        holder.expires,
    )
}

/// Decodes a read/write lock document, checking every field's presence, type and range.
pub(crate) fn decode(doc: &Document) -> Result<SharedDoc, ShapeError> {
    let readers = match get(doc, READERS)? {
        Bson::Array(items) => items
            .iter()
            .map(|item| holder(READERS, item))
            .collect::<Result<Vec<_>, _>>()?,
        other => return Err(wrong_type(READERS, other, "an array")),
    };
    count(doc, RELEASES)?;
    Ok(SharedDoc {
        counter: count(doc, COUNTER)?,
        writer: match get(doc, WRITER)? {
            Bson::Null => None,
            other => Some(holder(WRITER, other)?),
        },
        readers,
        intent: match get(doc, INTENT)? {
            Bson::Null => None,
            other => Some(intent(other)?),
        },
    })
}

fn get<'a>(doc: &'a Document, name: &'static str) -> Result<&'a Bson, ShapeError> {
    doc.get(name).ok_or(ShapeError::Missing(name))
}

fn wrong_type(field: &'static str, value: &Bson, expected: &'static str) -> ShapeError {
    ShapeError::WrongType {
        field,
        found: value.element_type(),
        expected,
    }
}

/// A holder (of `within`: the writer or a reader).
fn holder(within: &'static str, value: &Bson) -> Result<SharedHolder<SystemTime>, ShapeError> {
    let Bson::Document(doc) = value else {
        return Err(wrong_type(within, value, "a document"));
    };
    Ok(SharedHolder {
        owner: owner(doc)?,
        node: string(doc, LEADER_ID)?,
        token: count(doc, FENCING_TOKEN)?,
        acquired: date(doc, ACQUIRED_AT)?,
        expires: date(doc, EXPIRES_AT)?,
        released: match get(doc, RELEASED)? {
            Bson::Boolean(released) => *released,
            other => return Err(wrong_type(RELEASED, other, "a boolean")),
        },
    })
}

fn intent(value: &Bson) -> Result<Intent<SystemTime>, ShapeError> {
    let Bson::Document(doc) = value else {
        return Err(wrong_type(INTENT, value, "a document or null"));
    };
    Ok(Intent {
        owner: owner(doc)?,
        node: string(doc, LEADER_ID)?,
        expires: date(doc, EXPIRES_AT)?,
    })
}

fn owner(doc: &Document) -> Result<OwnerToken, ShapeError> {
    let text = string(doc, OWNER)?;
    text.parse().map_err(|_| ShapeError::OutOfRange {
        field: OWNER,
        value: format!("{} characters, not an owner token", text.len()),
    })
}

fn string(doc: &Document, name: &'static str) -> Result<String, ShapeError> {
    match get(doc, name)? {
        Bson::String(text) => Ok(text.clone()),
        other => Err(wrong_type(name, other, "a string")),
    }
}

/// A non-negative 64-bit integer (a 32-bit one is accepted).
fn count(doc: &Document, name: &'static str) -> Result<u64, ShapeError> {
    let value = match get(doc, name)? {
        Bson::Int64(n) => *n,
        Bson::Int32(n) => i64::from(*n),
        other => return Err(wrong_type(name, other, "a 64-bit integer")),
    };
    u64::try_from(value).map_err(|_| ShapeError::OutOfRange {
        field: name,
        value: value.to_string(),
    })
}

fn date(doc: &Document, name: &'static str) -> Result<SystemTime, ShapeError> {
    match get(doc, name)? {
        Bson::DateTime(date) => from_bson(*date).ok_or_else(|| ShapeError::OutOfRange {
            field: name,
            value: date.timestamp_millis().to_string(),
        }),
        other => Err(wrong_type(name, other, "a date")),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use leader_core::Role;
    use mongodb::bson::{DateTime, doc};

    use super::*;

    const OWNER_HEX: &str = "0123456789abcdef0123456789abcdef";

    fn holder_doc(ms: i64, released: bool) -> Document {
        doc! {
            "owner": OWNER_HEX,
            "leader_id": "node-a",
            "fencing_token": 7_i64,
            "acquired_at": DateTime::from_millis(ms),
            "expires_at": DateTime::from_millis(ms + 30_000),
            "released": released,
        }
    }

    fn good() -> Document {
        doc! {
            "_id": "reports",
            "counter": 9_i64,
            "releases": 0_i64,
            "writer": Bson::Null,
            "readers": [ holder_doc(1_000, false), holder_doc(2_000, true) ],
            "intent": { "owner": OWNER_HEX, "leader_id": "w", "expires_at": DateTime::from_millis(40_000) },
        }
    }

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn decodes_the_holders_and_hides_expired_ones_in_a_snapshot() {
        let record = decode(&good()).unwrap();
        assert_eq!(record.counter, 9);
        assert_eq!(record.readers.len(), 2);
        let owner: OwnerToken = OWNER_HEX.parse().unwrap();
        let mine = record.hold_of(Role::Read, owner).unwrap();
        assert_eq!(mine.acquired, at(1_000), "the unreleased one");
        assert!(record.hold_of(Role::Write, owner).is_none());
        assert!(record.is_queued(owner));
        let key = LockName::new("reports").unwrap();
        let state = record.state(&key, at(31_500));
        assert_eq!(state.readers.len(), 1, "{state:?}");
        assert_eq!(state.readers[0].acquired_at, at(2_000));
        assert_eq!(state.intent.as_ref().unwrap().leader_id, "w");
        assert!(record.state(&key, at(40_000)).is_free());
    }

    #[test]
    fn each_wrong_shape_is_a_precise_error() {
        let mut missing = good();
        missing.remove("counter");
        assert_eq!(decode(&missing), Err(ShapeError::Missing("counter")));
        let mut readers = good();
        readers.insert("readers", "none");
        assert!(matches!(
            decode(&readers),
            Err(ShapeError::WrongType {
                field: "readers",
                ..
            })
        ));
        let mut bad_reader = good();
        let mut holder = holder_doc(1, false);
        holder.insert("released", 1);
        bad_reader.insert("readers", vec![Bson::Document(holder)]);
        assert!(matches!(
            decode(&bad_reader),
            Err(ShapeError::WrongType {
                field: "released",
                ..
            })
        ));
        let mut owner = good();
        let mut holder = holder_doc(1, false);
        holder.insert("owner", "someone");
        owner.insert("writer", holder);
        assert!(matches!(
            decode(&owner),
            Err(ShapeError::OutOfRange { field: "owner", .. })
        ));
        let mut negative = good();
        negative.insert("counter", -1_i64);
        assert!(matches!(
            decode(&negative),
            Err(ShapeError::OutOfRange {
                field: "counter",
                ..
            })
        ));
        let mut intent = good();
        intent.insert("intent", 3);
        assert!(decode(&intent).is_err());
        assert!(decode(&doc! { "_id": "reports" }).is_err());
    }
}
