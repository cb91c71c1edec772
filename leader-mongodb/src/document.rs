//! The lock document and its decoding: one pure function, used by every operation.
//!
//! `{_id: <lock name>, owner, leader_id, fencing_token, acquired_at, expires_at}`:
//! `owner` is the holder's 32-hex-digit owner token, or `null` once released;
//! `fencing_token` a non-negative 64-bit integer; the two times BSON dates.

use std::time::SystemTime;

use leader_core::{LeaderLease, Lease, LockName, OwnerToken};
use mongodb::bson::{Bson, Document, spec::ElementType};

use crate::time::from_bson;

/// Field names of the lock document.
pub(crate) mod field {
    /// The lock name.
    pub(crate) const ID: &str = "_id";
    /// The holder's owner token (string) or `null`.
    pub(crate) const OWNER: &str = "owner";
    /// The holder's node id.
    pub(crate) const LEADER_ID: &str = "leader_id";
    /// The last fencing token handed out for the lock.
    pub(crate) const FENCING_TOKEN: &str = "fencing_token";
    /// When the current (or last) holder acquired the lock.
    pub(crate) const ACQUIRED_AT: &str = "acquired_at";
    /// When the current (or last) lease runs out.
    pub(crate) const EXPIRES_AT: &str = "expires_at";
}

/// Why a stored document is not a lock document this backend can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShapeError {
    /// A field is absent.
    #[error("the lock document has no `{0}` field")]
    Missing(&'static str),
    /// A field has another BSON type than expected.
    #[error("field `{field}` of the lock document is a {found:?}, expected {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// The type found.
        found: ElementType,
        /// What was expected, in words.
        expected: &'static str,
    },
    /// A number or date field holds a value out of range.
    #[error("field `{field}` of the lock document holds an out-of-range value ({value})")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value, as text.
        value: String,
    },
}

/// A decoded lock document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockRecord {
    /// The holder's owner token as stored (`None` once released).
    pub(crate) owner: Option<String>,
    /// The holder's node id.
    pub(crate) leader_id: String,
    /// The holder's fencing token.
    pub(crate) fencing_token: u64,
    /// When the holder acquired the lock.
    pub(crate) acquired_at: SystemTime,
    /// When the lease runs out.
    pub(crate) expires_at: SystemTime,
}

impl LockRecord {
    /// Whether `owner` holds this record (whatever its expiry).
    pub(crate) fn is_owned_by(&self, owner: OwnerToken) -> bool {
        self.owner.as_deref() == Some(owner.to_string().as_str())
    }

    /// Whether a holder is recorded and its lease runs past `now`.
    pub(crate) fn is_live_at(&self, now: SystemTime) -> bool {
        self.owner.is_some() && self.expires_at > now
    }

    /// The holder, for `Held` outcomes and state snapshots.
    pub(crate) fn holder(&self) -> LeaderLease {
        LeaderLease::new(
            self.leader_id.clone(),
            self.acquired_at,
            self.expires_at,
            self.fencing_token,
        )
    }

    /// The lease `owner` holds according to this record.
    pub(crate) fn lease(&self, key: &LockName, owner: OwnerToken) -> Lease {
        Lease::new(
            key.clone(),
            owner,
            self.leader_id.clone(),
            self.fencing_token,
            self.acquired_at,
            self.expires_at,
        )
    }
}

/// Decodes a lock document, checking every field's presence, type and range.
pub(crate) fn decode(doc: &Document) -> Result<LockRecord, ShapeError> {
    Ok(LockRecord {
        owner: owner(doc)?,
        leader_id: leader_id(doc)?,
        fencing_token: fencing_token(doc)?,
        acquired_at: date(doc, field::ACQUIRED_AT)?,
        expires_at: date(doc, field::EXPIRES_AT)?,
    })
}

/// The lock name of a lock document (its `_id`).
pub(crate) fn lock_name(doc: &Document) -> Result<&str, ShapeError> {
    match get(doc, field::ID)? {
        Bson::String(name) => Ok(name),
        other => Err(wrong_type(field::ID, other, "a string")),
    }
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

fn owner(doc: &Document) -> Result<Option<String>, ShapeError> {
    match get(doc, field::OWNER)? {
        Bson::String(owner) => Ok(Some(owner.clone())),
        Bson::Null => Ok(None),
        other => Err(wrong_type(field::OWNER, other, "a string or null")),
    }
}

fn leader_id(doc: &Document) -> Result<String, ShapeError> {
    match get(doc, field::LEADER_ID)? {
        Bson::String(id) => Ok(id.clone()),
        other => Err(wrong_type(field::LEADER_ID, other, "a string")),
    }
}

fn fencing_token(doc: &Document) -> Result<u64, ShapeError> {
    let name = field::FENCING_TOKEN;
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

    use mongodb::bson::{DateTime, doc};

    use super::*;

    fn good() -> Document {
        doc! {
            "_id": "nightly",
            "owner": "0123456789abcdef0123456789abcdef",
            "leader_id": "node-a",
            "fencing_token": 7_i64,
            "acquired_at": DateTime::from_millis(1_000),
            "expires_at": DateTime::from_millis(31_000),
        }
    }

    #[test]
    fn decodes_a_held_and_a_released_document() {
        let record = decode(&good()).unwrap();
        assert_eq!(record.leader_id, "node-a");
        assert_eq!(record.fencing_token, 7);
        assert_eq!(record.acquired_at, UNIX_EPOCH + Duration::from_secs(1));
        assert_eq!(record.expires_at, UNIX_EPOCH + Duration::from_secs(31));
        let owner: OwnerToken = "0123456789abcdef0123456789abcdef".parse().unwrap();
        assert!(record.is_owned_by(owner));
        assert!(!record.is_owned_by(OwnerToken::random()));
        assert!(record.is_live_at(UNIX_EPOCH + Duration::from_secs(30)));
        assert!(!record.is_live_at(UNIX_EPOCH + Duration::from_secs(31)));

        let mut released = good();
        released.insert("owner", Bson::Null);
        let record = decode(&released).unwrap();
        assert_eq!(record.owner, None);
        assert!(!record.is_live_at(UNIX_EPOCH));
    }

    #[test]
    fn accepts_a_32_bit_fencing_token() {
        let mut doc = good();
        doc.insert("fencing_token", 3_i32);
        assert_eq!(decode(&doc).unwrap().fencing_token, 3);
    }

    #[test]
    fn each_wrong_shape_is_a_precise_error() {
        let mut missing = good();
        missing.remove("expires_at");
        assert_eq!(decode(&missing), Err(ShapeError::Missing("expires_at")));

        let mut owner = good();
        owner.insert("owner", 42);
        assert!(matches!(
            decode(&owner),
            Err(ShapeError::WrongType {
                field: "owner",
                found: ElementType::Int32,
                ..
            })
        ));

        let mut token = good();
        token.insert("fencing_token", "seven");
        assert!(matches!(
            decode(&token),
            Err(ShapeError::WrongType {
                field: "fencing_token",
                ..
            })
        ));

        let mut negative = good();
        negative.insert("fencing_token", -1_i64);
        assert!(matches!(
            decode(&negative),
            Err(ShapeError::OutOfRange {
                field: "fencing_token",
                ..
            })
        ));

        let mut date = good();
        date.insert("acquired_at", "yesterday");
        assert!(matches!(
            decode(&date),
            Err(ShapeError::WrongType {
                field: "acquired_at",
                ..
            })
        ));

        let mut leader = good();
        leader.insert("leader_id", Bson::Null);
        assert!(decode(&leader).is_err());
        assert!(decode(&doc! {"_id": "x"}).is_err());
    }

    #[test]
    fn the_lock_name_is_the_string_id() {
        assert_eq!(lock_name(&good()), Ok("nightly"));
        assert_eq!(lock_name(&doc! {}), Err(ShapeError::Missing("_id")));
        assert!(matches!(
            lock_name(&doc! { "_id": 1 }),
            Err(ShapeError::WrongType { field: "_id", .. })
        ));
    }

    #[test]
    fn error_messages_name_the_field() {
        let err = decode(&doc! {"_id": "x", "owner": 1}).unwrap_err();
        assert!(err.to_string().contains("owner"), "{err}");
    }
}
