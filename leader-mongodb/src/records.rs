//! Records against the records' collection (`<collection>_records`, which no lock
//! operation reads): `{_id: <name>, version: <Int64 ≥ 1>, value: <string>}`. Async code,
//! run by the kit's runner like `ops`.
//!
//! A new record is an insert (a duplicate key, 11000, is the conflict of a racing
//! creator); a later write an `updateOne` filtered on `{_id, version}` (and the fields'
//! types), so the compare and the set are one step on the server. Both with the lock writes' write concern.

use leader_core::kit::calls::WriteRecord;
use leader_core::{LockName, RecordWriteOutcome, StoredRecord, corrupt_record};
use mongodb::bson::{Bson, Document, doc};

use crate::document::field::ID;
use crate::error::{BACKEND, OpError, is_duplicate_key};
use crate::ops::Store;

/// The record's version field.
const VERSION: &str = "version";
/// The record's value field.
const VALUE: &str = "value";

/// The record in `doc`, checked: a version that is not a positive 64-bit integer (an
/// `Int64`, the type this backend writes) or a value that is not a string is a corrupted
/// record.
fn decode(key: &LockName, doc: &Document) -> Result<StoredRecord, OpError> {
    let corrupt = |what: String| OpError::Record(corrupt_record(BACKEND, key, what));
    let version = match doc.get(VERSION) {
        Some(Bson::Int64(version)) => *version,
        Some(other) => {
            return Err(corrupt(format!(
                "`{VERSION}` is a {:?}, not a 64-bit integer",
                other.element_type()
            )));
        }
        None => return Err(corrupt(format!("no `{VERSION}` field"))),
    };
    let version = u64::try_from(version)
        .ok()
        .filter(|version| *version > 0)
        .ok_or_else(|| corrupt(format!("version {version} is below 1")))?;
    match doc.get(VALUE) {
        Some(Bson::String(value)) => Ok(StoredRecord::new(version, value.as_str())),
        Some(other) => Err(corrupt(format!(
            "`{VALUE}` is a {:?}, not a string",
            other.element_type()
        ))),
        None => Err(corrupt(format!("no `{VALUE}` field"))),
    }
}

impl Store {
    /// One `find` by `_id` on the records' collection.
    pub(crate) async fn read_record(self, key: LockName) -> Result<Option<StoredRecord>, OpError> {
        let found = self
            .records
            .find_one(doc! { ID: key.as_str() })
            .max_time(self.max_time)
            .await?;
        found.map(|doc| decode(&key, &doc)).transpose()
    }

    /// The insert or the filtered update; when it lands nothing, the record is read only
    /// to tell a conflict from a corrupted record, which is an error (the filter never
    /// matches one: its version is no version this backend writes). The conflict names
    /// no record: it was not read in the same step.
    pub(crate) async fn write_record(
        self,
        write: WriteRecord,
    ) -> Result<RecordWriteOutcome, OpError> {
        self.try_write_record(&write).await
    }

    async fn try_write_record(&self, write: &WriteRecord) -> Result<RecordWriteOutcome, OpError> {
        let key = write.key.as_str();
        let next = i64::try_from(write.next_version()).map_err(|_| {
            OpError::Record(corrupt_record(
                BACKEND,
                &write.key,
                "the version is at its maximum",
            ))
        })?;
        let landed = match write.expected {
            None => {
                let inserted = self
                    .records
                    .insert_one(doc! { ID: key, VERSION: next, VALUE: write.value.as_str() })
                    .write_concern(self.write_concern.clone())
                    .await;
                match inserted {
                    Ok(_) => true,
                    Err(err) if is_duplicate_key(&err) => false,
                    Err(err) => return Err(err.into()),
                }
            }
            Some(_) => {
                // The version expected, as stored: one less than `next`, which fits.
                let expected = next.saturating_sub(1);
                let updated = self
                    .records
                    .update_one(
                        // The types too: MongoDB finds 1 equal to 1.0 (and a missing
                        // value is no string), and a corrupted record is never written.
                        doc! {
                            ID: key,
                            VERSION: { "$eq": expected, "$type": "long" },
                            VALUE: { "$type": "string" },
                        },
                        doc! { "$set": { VERSION: next, VALUE: write.value.as_str() } },
                    )
                    .write_concern(self.write_concern.clone())
                    .await?;
                updated.matched_count > 0
            }
        };
        if landed {
            return Ok(RecordWriteOutcome::Written {
                version: write.next_version(),
            });
        }
        self.clone().read_record(write.key.clone()).await?;
        Ok(RecordWriteOutcome::Conflict { current: None })
    }
}
