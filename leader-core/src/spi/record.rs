//! Records: a small versioned value a backend keeps per name beside its locks, written
//! only by compare-and-set ([`RecordWrite`], [`RecordWriteOutcome`], [`StoredRecord`]).
//!
//! The scheduler keeps each job's last claimed tick in one, so that a tick runs at most
//! once whatever the nodes' clocks say: a claim is a write that succeeds only on the
//! version it read.

use crate::error::{BackendError, BackendErrorKind, Error};
use crate::name::LockName;

/// The longest record value a backend accepts, in bytes.
pub const MAX_RECORD_LEN: usize = 16 * 1024;

/// A record as the store holds it: its version and value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredRecord {
    /// 1 for the first write, one more for each write after it.
    pub version: u64,
    /// The value last written (UTF-8 text, at most [`MAX_RECORD_LEN`] bytes).
    pub value: String,
}

impl StoredRecord {
    /// A record of `version` holding `value` (for backends).
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::StoredRecord;
    /// let record = StoredRecord::new(3, "{}");
    /// assert_eq!((record.version, record.value.as_str()), (3, "{}"));
    /// ```
    pub fn new(version: u64, value: impl Into<String>) -> Self {
        StoredRecord {
            version,
            value: value.into(),
        }
    }
}

/// A compare-and-set write of a record: `value` replaces the record `key` only while the
/// stored version is `expected` (`None`: only while there is no record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordWrite<'a> {
    key: &'a LockName,
    expected: Option<u64>,
    value: &'a str,
}

impl<'a> RecordWrite<'a> {
    /// A write of `value` to `key` over version `expected`.
    ///
    /// # Errors
    ///
    /// A permanent [`Error::Backend`] (backend `"record"`) when `value` is longer than
    /// [`MAX_RECORD_LEN`]: nothing is written.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::{LockName, RecordWrite, MAX_RECORD_LEN};
    /// let key = LockName::new("nightly")?;
    /// let first = RecordWrite::new(&key, None, "{\"tick\":1}")?;
    /// assert_eq!(first.expected(), None);
    /// let too_long = "x".repeat(MAX_RECORD_LEN + 1);
    /// assert!(RecordWrite::new(&key, Some(1), &too_long).is_err());
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn new(key: &'a LockName, expected: Option<u64>, value: &'a str) -> Result<Self, Error> {
        if value.len() > MAX_RECORD_LEN {
            return Err(BackendError::new(
                "record",
                key.as_str(),
                BackendErrorKind::Permanent,
                format!(
                    "a record value of {} bytes is longer than the limit of {MAX_RECORD_LEN}",
                    value.len()
                ),
            )
            .into());
        }
        Ok(RecordWrite {
            key,
            expected,
            value,
        })
    }

    /// The record's name.
    pub fn key(&self) -> &'a LockName {
        self.key
    }

    /// The version the write expects to find (`None`: no record).
    pub fn expected(&self) -> Option<u64> {
        self.expected
    }

    /// The version the record has once this write lands.
    pub fn next_version(&self) -> u64 {
        self.expected.map_or(1, |v| v.saturating_add(1))
    }

    /// The new value.
    pub fn value(&self) -> &'a str {
        self.value
    }
}

/// The answer to `write_record`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordWriteOutcome {
    /// The value was written; the record now has `version`.
    Written {
        /// The record's new version (`expected + 1`, or 1 for a new record).
        version: u64,
    },
    /// The stored version was not the one expected; nothing changed. The record found,
    /// when the backend read it in the same step (`None`: none, or not read).
    Conflict {
        /// What the store holds.
        current: Option<StoredRecord>,
    },
}

impl RecordWriteOutcome {
    /// A short label for logs and metrics: `"written"` or `"conflict"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RecordWriteOutcome::Written { .. } => "written",
            RecordWriteOutcome::Conflict { .. } => "conflict",
        }
    }
}

/// A permanent error for a record the store holds in a shape no backend writes (a version
/// that is not a positive number, a value that is not UTF-8): for backends to report it,
/// never overwrite it.
///
/// # Examples
///
/// ```
/// use leader_core::{LockName, corrupt_record};
/// let key = LockName::new("nightly")?;
/// let err = corrupt_record("redis", &key, "version `x` is not a number");
/// assert!(!err.is_transient());
/// # Ok::<(), leader_core::Error>(())
/// ```
pub fn corrupt_record(backend: &'static str, key: &LockName, what: impl Into<String>) -> Error {
    BackendError::new(
        backend,
        key.as_str(),
        BackendErrorKind::Permanent,
        format!("corrupted record: {}", what.into()),
    )
    .into()
}
