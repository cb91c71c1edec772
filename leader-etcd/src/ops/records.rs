//! `read_record` and `write_record`: the scheduler's compare-and-set register, one key per
//! record under the prefix (see [`Keys::record`](crate::keys::Keys::record); not the
//! holder [`HolderRecord`](crate::record::HolderRecord) of a lock). The stored value is the record's
//! value as is; its version is the key's etcd `version` (1 when created, one more for each
//! put), so etcd itself counts the writes. A value that is not UTF-8 (or longer than the
//! limit) is a corrupted record: reported, never overwritten.

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use leader_core::kit::calls;
use leader_core::{LockName, MAX_RECORD_LEN, RecordWriteOutcome, StoredRecord};

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::answer::Answer;

impl Op for calls::ReadRecord {
    /// One linearizable read of the record's key.
    async fn run(self, conn: Conn) -> Result<Option<StoredRecord>, OpError> {
        let key = conn.keys.record(self.key.as_str());
        let mut answer = conn.client.kv_client().get(key, None).await?;
        answer
            .take_kvs()
            .pop()
            .map(|kv| stored(&self.key, kv.version(), kv.value()))
            .transpose()
    }
}

impl Op for calls::WriteRecord {
    /// A new record: one transaction that puts the key only while it does not exist, and
    /// reads it otherwise. Over a version: the record read first (a corrupted one is
    /// refused there, so a write never replaces it, whatever its etcd version), then put
    /// by a transaction that holds only while the key is unchanged since that read (its
    /// `mod_revision`), and reads it otherwise.
    async fn run(self, conn: Conn) -> Result<RecordWriteOutcome, OpError> {
        let key = conn.keys.record(self.key.as_str());
        let mut kv = conn.client.kv_client();
        let unchanged = match self.expected {
            None => Compare::create_revision(key.clone(), CompareOp::Equal, 0),
            Some(expected) => {
                let Some(found) = kv.get(key.clone(), None).await?.take_kvs().pop() else {
                    return Ok(RecordWriteOutcome::Conflict { current: None });
                };
                let current = stored(&self.key, found.version(), found.value())?;
                if current.version != expected {
                    return Ok(RecordWriteOutcome::Conflict {
                        current: Some(current),
                    });
                }
                Compare::mod_revision(key.clone(), CompareOp::Equal, found.mod_revision())
            }
        };
        let txn = Txn::new()
            .when([unchanged])
            .and_then([TxnOp::put(key.clone(), self.value.into_bytes(), None)])
            .or_else([TxnOp::get(key, None)]);
        let mut answer = Answer::read(kv.txn(txn).await?);
        if answer.succeeded {
            return Ok(RecordWriteOutcome::Written {
                version: self.expected.map_or(1, |v| v.saturating_add(1)),
            });
        }
        let current = answer
            .got(0)?
            .map(|kv| stored(&self.key, kv.version, &kv.value))
            .transpose()?;
        Ok(RecordWriteOutcome::Conflict { current })
    }
}

/// The record `name`, of a key of etcd `version` holding `value`.
fn stored(name: &LockName, version: i64, value: &[u8]) -> Result<StoredRecord, OpError> {
    let corrupt = |what| OpError::CorruptRecord {
        name: name.clone(),
        what,
    };
    let version = u64::try_from(version)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| corrupt("the version is not a positive integer"))?;
    if value.len() > MAX_RECORD_LEN {
        return Err(corrupt("the value is longer than the limit"));
    }
    let value = std::str::from_utf8(value).map_err(|_| corrupt("the value is not UTF-8"))?;
    Ok(StoredRecord::new(version, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_its_keys_version_and_utf8_value() {
        let name = LockName::new("r").unwrap();
        assert_eq!(stored(&name, 3, b"{}").unwrap(), StoredRecord::new(3, "{}"));
        for (version, value) in [(0, &b"{}"[..]), (-1, b"{}"), (1, b"\xff\xfe")] {
            assert!(matches!(
                stored(&name, version, value),
                Err(OpError::CorruptRecord { .. })
            ));
        }
        let long = vec![b'x'; MAX_RECORD_LEN + 1];
        assert!(matches!(
            stored(&name, 1, &long),
            Err(OpError::CorruptRecord { .. })
        ));
    }
}
