//! `read_record` and `write_record` as [`Op`]s: one script (see `lua/record.lua`) reads
//! the record hash, or writes it only while its version is the one expected. A write is
//! acknowledged by the replicas like an acquire when that is configured: the scheduler's
//! tick claims must survive a failover as its locks do.

use leader_core::kit::calls;
use leader_core::{Error, LockName, RecordWriteOutcome, StoredRecord, corrupt_record};
use redis::Value;

use super::{Op, ScriptCall, status};
use crate::decode::{array, int, is_nil};
use crate::error::{BACKEND, OpError};
use crate::keys::LockKeys;
use crate::scripts::RECORD;

/// `read_record`.
#[derive(Debug)]
pub(crate) struct ReadRecord<'a> {
    pub(crate) key: &'a LockName,
}

/// `write_record`: a compare-and-set.
#[derive(Debug)]
pub(crate) struct WriteRecord<'a> {
    pub(crate) write: &'a calls::WriteRecord,
}

impl Op for ReadRecord<'_> {
    type Output = Option<StoredRecord>;
    const NAME: &'static str = "read_record";

    fn name(&self) -> &LockName {
        self.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&RECORD, 1);
        invocation.key(keys.record());
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        match (status(items), items.len()) {
            (Some(0), 1) => Ok(None),
            (Some(1), 3) => stored(&items[1..]).map(Some).ok_or_else(bad),
            (Some(-1), 2) => Err(corrupt(&items[1]).ok_or_else(bad)?),
            _ => Err(bad()),
        }
    }
}

impl Op for WriteRecord<'_> {
    /// A write the replicas did not acknowledge is an error (it may have landed).
    type Output = Result<RecordWriteOutcome, OpError>;
    const NAME: &'static str = "write_record";
    const ACKED: bool = true;

    fn name(&self) -> &LockName {
        &self.write.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&RECORD, 1);
        invocation.key(keys.record());
        let expected = self.write.expected.map(|v| v.to_string());
        invocation
            .arg(expected.unwrap_or_default())
            .arg_fmt(self.write.next_version())
            .arg(self.write.value.as_str());
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        let outcome = match (status(items), items.len()) {
            (Some(1), 1) => RecordWriteOutcome::Written {
                version: self.write.next_version(),
            },
            (Some(0), 1) => RecordWriteOutcome::Conflict { current: None },
            (Some(0), 3) => RecordWriteOutcome::Conflict {
                current: Some(stored(&items[1..]).ok_or_else(bad)?),
            },
            (Some(-1), 2) => return Err(corrupt(&items[1]).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        Ok(Ok(outcome))
    }

    /// A write becomes `failure()`; a conflict wrote nothing and stays.
    fn unacknowledged(
        output: Self::Output,
        failure: &dyn Fn() -> OpError,
    ) -> (Self::Output, Vec<leader_core::Lease>) {
        match output {
            Ok(RecordWriteOutcome::Written { .. }) => (Err(failure()), Vec::new()),
            other => (other, Vec::new()),
        }
    }
}

/// The toolkit's error for a failed record call on `key`, whose hash is `record_key`: a
/// corrupted record is [`corrupt_record`]'s error, any other failure names the hash.
pub(crate) fn record_error(key: &LockName, record_key: &str, failure: OpError) -> Error {
    match failure {
        OpError::CorruptRecord { what } => corrupt_record(BACKEND, key, what),
        failure => failure.into_core(record_key),
    }
}

/// `[version, value]` as the script returns them (it checked both).
fn stored(items: &[Value]) -> Option<StoredRecord> {
    let version = items
        .first()
        .and_then(int)
        .and_then(|v| u64::try_from(v).ok())?;
    let value = match items.get(1)? {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.to_owned(),
        _ => return None,
    };
    Some(StoredRecord::new(version, value))
}

/// The script's word on a record no backend writes.
fn corrupt(what: &Value) -> Option<OpError> {
    match what {
        Value::BulkString(bytes) if !is_nil(what) => Some(OpError::CorruptRecord {
            what: std::str::from_utf8(bytes).ok()?.to_owned(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn decodes_each_answer_of_the_script() {
        let key = LockName::new("job").unwrap();
        let read = ReadRecord { key: &key };
        assert_eq!(
            read.decode(Value::Array(vec![Value::Int(0)])).unwrap(),
            None
        );
        let found = Value::Array(vec![Value::Int(1), bulk("3"), bulk("{}")]);
        assert_eq!(
            read.decode(found).unwrap(),
            Some(StoredRecord::new(3, "{}"))
        );
        let garbled = Value::Array(vec![Value::Int(-1), bulk("the version is bad")]);
        assert!(matches!(
            read.decode(garbled.clone()),
            Err(OpError::CorruptRecord { .. })
        ));
        assert!(matches!(
            read.decode(Value::Nil),
            Err(OpError::BadReply { .. })
        ));

        let planned =
            calls::WriteRecord::from(leader_core::RecordWrite::new(&key, Some(3), "x").unwrap());
        let write = WriteRecord { write: &planned };
        let written = write.decode(Value::Array(vec![Value::Int(1)])).unwrap();
        assert_eq!(written.unwrap(), RecordWriteOutcome::Written { version: 4 });
        let other = Value::Array(vec![Value::Int(0), bulk("5"), bulk("y")]);
        assert_eq!(
            write.decode(other).unwrap().unwrap(),
            RecordWriteOutcome::Conflict {
                current: Some(StoredRecord::new(5, "y"))
            }
        );
        let gone = write.decode(Value::Array(vec![Value::Int(0)])).unwrap();
        assert_eq!(
            gone.unwrap(),
            RecordWriteOutcome::Conflict { current: None }
        );
        assert!(matches!(
            write.decode(garbled),
            Err(OpError::CorruptRecord { .. })
        ));
    }

    #[test]
    fn an_unacknowledged_write_is_an_error_and_a_conflict_stays() {
        let failure = || OpError::BadCursor {
            cursor: String::new(),
        };
        let written = Ok(RecordWriteOutcome::Written { version: 1 });
        assert!(WriteRecord::unacknowledged(written, &failure).0.is_err());
        let conflict = Ok(RecordWriteOutcome::Conflict { current: None });
        assert!(WriteRecord::unacknowledged(conflict, &failure).0.is_ok());
    }
}
