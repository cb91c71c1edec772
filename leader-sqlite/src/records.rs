//! Records: the compare-and-set register per name, in `leader_records`, apart from the
//! lock tables (no lock statement names it). Plain functions on a connection, like `ops`;
//! a write commits [`durably`](crate::durability::durably).

use leader_core::{LockName, RecordWriteOutcome, StoredRecord, corrupt_record};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::durability::durably;
use crate::error::{BACKEND, OpError};

/// `write_record`'s arguments, owned, so that the async path can move them to its thread.
pub(crate) use leader_core::kit::calls::WriteRecord as Write;

/// The record `key`, or `None`, checked: a version that is not a positive integer or a value that is
/// not UTF-8 text is a corrupted record.
pub(crate) fn read(conn: &Connection, key: &LockName) -> Result<Option<StoredRecord>, OpError> {
    let row = conn
        .query_row(
            "SELECT version, value FROM leader_records WHERE name = ?1",
            params![key.as_str()],
            |row| Ok(checked(key, row.get_ref(0)?, row.get_ref(1)?)),
        )
        .optional()?;
    row.transpose()
}

fn checked(
    key: &LockName,
    version: ValueRef<'_>,
    value: ValueRef<'_>,
) -> Result<StoredRecord, OpError> {
    let corrupt = |what: &str| OpError::Record(corrupt_record(BACKEND, key, what));
    let version = match version {
        ValueRef::Integer(version) => u64::try_from(version)
            .ok()
            .filter(|version| *version > 0)
            .ok_or_else(|| corrupt("a version below 1"))?,
        _ => return Err(corrupt("a version that is not an integer")),
    };
    let value = match value {
        ValueRef::Text(bytes) => {
            std::str::from_utf8(bytes).map_err(|_| corrupt("a value that is not UTF-8"))?
        }
        _ => return Err(corrupt("a value that is not text")),
    };
    Ok(StoredRecord::new(version, value))
}

/// Writes the record if its stored version is the one expected: one IMMEDIATE
/// transaction reads, compares and writes, so no other writer comes between, and a
/// conflict reports the record it found. A corrupted record is reported, never replaced.
/// The transaction runs [`durably`]: an acknowledged write (a tick claim) survives a power
/// cut.
pub(crate) fn write(conn: &mut Connection, write: &Write) -> Result<RecordWriteOutcome, OpError> {
    durably(conn, |conn| write_in(conn, write))
}

/// [`write`]'s transaction.
fn write_in(conn: &mut Connection, write: &Write) -> Result<RecordWriteOutcome, OpError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current = read(&tx, &write.key)?;
    if current.as_ref().map(|record| record.version) != write.expected {
        return Ok(RecordWriteOutcome::Conflict { current });
    }
    let version = write.next_version();
    let stored_version = i64::try_from(version).map_err(|_| {
        OpError::Record(corrupt_record(
            BACKEND,
            &write.key,
            "the version is at its maximum",
        ))
    })?;
    tx.execute(
        "INSERT INTO leader_records (name, version, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (name) DO UPDATE SET version = excluded.version, value = excluded.value",
        params![write.key.as_str(), stored_version, write.value],
    )?;
    tx.commit()?;
    Ok(RecordWriteOutcome::Written { version })
}
