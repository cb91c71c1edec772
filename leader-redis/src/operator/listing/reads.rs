//! Reading the records of scanned keys: two commands per key, pipelined, and their replies
//! decoded as `state` decodes its script's.

use std::time::SystemTime;

use leader_core::LeaderState;
use redis::{Cmd, Value};

use crate::decode::{array, int};
use crate::error::OpError;
use crate::ops::holder_state;

use super::ListFailure;

/// A scanned lock key and the lock name inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) key: String,
    pub(crate) name: String,
}

/// `PTTL key` and `HMGET key owner leader fence acq exp` for each key.
pub(crate) fn commands(found: &[Found]) -> Vec<Cmd> {
    let mut cmds = Vec::with_capacity(found.len() * 2);
    for lock in found {
        let mut pttl = redis::cmd("PTTL");
        pttl.arg(&lock.key);
        let mut fields = redis::cmd("HMGET");
        fields
            .arg(&lock.key)
            .arg(&["owner", "leader", "fence", "acq", "exp"]);
        cmds.push(pttl);
        cmds.push(fields);
    }
    cmds
}

/// The held locks among `found`, from the replies to [`commands`], judged at `now` on this
/// node's clock as `state` judges its own; a key that expired or vanished since the scan is
/// left out.
///
/// # Errors
///
/// A reply of another shape, or a corrupted record (with that record's key).
pub(crate) fn held(
    found: Vec<Found>,
    reply: &Value,
    now: SystemTime,
) -> Result<Vec<LeaderState>, ListFailure> {
    let bad = || ListFailure::from(OpError::bad_reply(super::OP, reply));
    let replies = array(reply).ok_or_else(bad)?;
    if replies.len() != found.len() * 2 {
        return Err(bad());
    }
    let mut held = Vec::new();
    for (lock, pair) in found.into_iter().zip(replies.chunks(2)) {
        let pttl = pair.first().and_then(int).ok_or_else(bad)?;
        let fields = match pair.get(1) {
            Some(Value::Nil) => &[][..],
            Some(fields) => array(fields).ok_or_else(bad)?,
            None => return Err(bad()),
        };
        match holder_state(&lock.name, pttl, fields, now) {
            Ok(state) if state.leader().is_some() => held.push(state),
            Ok(_) => {}
            Err(failure) => return Err(ListFailure::at(failure, lock.key)),
        }
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn found(name: &str) -> Found {
        Found {
            key: format!("leader:{{{name}}}"),
            name: name.to_owned(),
        }
    }

    fn record(owner: Value) -> Value {
        Value::Array(vec![owner, bulk("node-a"), bulk("9"), bulk("1"), bulk("2")])
    }

    #[test]
    fn only_live_holders_are_kept() {
        let reply = Value::Array(vec![
            Value::Int(5000),
            record(bulk("owner")),
            Value::Int(-2),
            Value::Array(vec![Value::Nil; 5]),
            Value::Int(5000),
            record(Value::Nil),
        ]);
        let locks = held(
            vec![found("a"), found("gone"), found("free")],
            &reply,
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(locks.len(), 1);
        assert_eq!(locks[0].lock_name(), "a");
        assert_eq!(locks[0].leader().unwrap().fencing_token, 9);
        assert_eq!(commands(&[found("a")]).len(), 2);
    }

    #[test]
    fn a_corrupted_record_names_its_key() {
        let reply = Value::Array(vec![Value::Int(-1), record(bulk("owner"))]);
        let failed = held(vec![found("x")], &reply, SystemTime::now()).unwrap_err();
        assert!(matches!(failed.failure, OpError::NoExpiry));
        assert_eq!(failed.key.as_deref(), Some("leader:{x}"));
        let short = Value::Array(vec![Value::Int(1)]);
        let failed = held(vec![found("x")], &short, SystemTime::now()).unwrap_err();
        assert!(matches!(failed.failure, OpError::BadReply { .. }));
        assert_eq!(failed.key, None);
    }
}
