//! Records as [`Op`]s: reading one, and its compare-and-set write, each one statement on
//! the records' table (`<table>_records`), which no lock statement names. Like `ops`,
//! nothing here knows about threads or runtimes.

use leader_core::kit::calls;
use leader_core::{LockName, RecordWriteOutcome, StoredRecord, corrupt_record};
use tokio_postgres::Row;

use crate::conn::Conn;
use crate::error::{BACKEND, OpError};
use crate::ops::Op;

/// The record in columns `at` (version) and `at + 1` (value) of `row`, checked; `None`
/// when both are NULL (no record). A version below 1 is a corrupted record.
fn record(key: &LockName, row: &Row, at: usize) -> Result<Option<StoredRecord>, OpError> {
    let version: Option<i64> = row.try_get(at).map_err(OpError::Decode)?;
    let value: Option<String> = row.try_get(at + 1).map_err(OpError::Decode)?;
    let (Some(version), Some(value)) = (version, value) else {
        return Ok(None);
    };
    let version = u64::try_from(version)
        .ok()
        .filter(|version| *version > 0)
        .ok_or_else(|| {
            OpError::Record(corrupt_record(
                BACKEND,
                key,
                format!("version {version} is below 1"),
            ))
        })?;
    Ok(Some(StoredRecord::new(version, value)))
}

impl Op for calls::ReadRecord {
    async fn run(self, conn: &Conn) -> Result<Option<StoredRecord>, OpError> {
        let row = conn
            .client
            .query_opt(&conn.statements.read_record, &[&self.key.as_str()])
            .await?;
        match row {
            Some(row) => record(&self.key, &row, 0),
            None => Ok(None),
        }
    }
}

impl Op for calls::WriteRecord {
    /// The one statement; when it wrote nothing, the record it found is the conflict's
    /// (or, stored in a shape this backend never writes, the error).
    async fn run(self, conn: &Conn) -> Result<RecordWriteOutcome, OpError> {
        let write = self;
        // A version above i64::MAX is none this backend stores: it matches no row, and
        // the write is a conflict (-1 is never stored either, and is not NULL).
        let expected = write
            .expected
            .map(|version| i64::try_from(version).unwrap_or(-1));
        let row = conn
            .client
            .query_one(
                &conn.statements.write_record,
                &[&write.key.as_str(), &expected, &write.value],
            )
            .await?;
        let written: Option<i64> = row.try_get(0).map_err(OpError::Decode)?;
        let current = record(&write.key, &row, 1)?;
        match written.and_then(|version| u64::try_from(version).ok()) {
            Some(version) => Ok(RecordWriteOutcome::Written { version }),
            None => Ok(RecordWriteOutcome::Conflict { current }),
        }
    }
}
