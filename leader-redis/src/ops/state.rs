//! `state`, and the holder decoding a listing shares.

use leader_core::{LeaderLease, LeaderState, LockName};
use redis::Value;

use super::{Op, ScriptCall, flag, status};
use crate::decode::{array, is_nil, text_field, time_field, u64_field};
use crate::error::OpError;
use crate::keys::LockKeys;
use crate::scripts::STATE;

/// `state`.
#[derive(Debug)]
pub(crate) struct State<'a> {
    pub(crate) key: &'a LockName,
    /// Whether one of this node's waiters listens on the lock: the read then marks its
    /// holder's lease, so that its release is announced.
    pub(crate) watched: bool,
}

impl Op for State<'_> {
    type Output = LeaderState;
    const NAME: &'static str = "state";

    fn name(&self) -> &LockName {
        self.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&STATE, 1);
        invocation.key(keys.lock());
        invocation.arg(flag(self.watched));
        invocation
    }

    fn decode(&self, reply: Value) -> Result<LeaderState, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        if items.len() != 6 {
            return Err(bad());
        }
        let pttl = status(items).ok_or_else(bad)?;
        holder_state(self.key.as_str(), pttl, items.get(1..).unwrap_or_default())
    }

    fn outcome(output: &LeaderState) -> &'static str {
        match output.leader() {
            Some(_) => "occupied",
            None => "empty",
        }
    }
}

/// The state of the lock `name` from its key's `pttl` and its hash's `[owner, leader,
/// fence, acq, exp]` (what `state.lua` returns, and what a listing reads with `PTTL` and
/// `HMGET`): empty when the key is gone or has no owner, an error for a record without
/// expiry or with an unreadable field.
pub(crate) fn holder_state(
    name: &str,
    pttl: i64,
    fields: &[Value],
) -> Result<LeaderState, OpError> {
    if pttl == -2 || pttl == 0 {
        // No key (or one that expires this very millisecond): nobody holds the lock.
        return Ok(LeaderState::empty(name));
    }
    if fields.first().is_none_or(is_nil) {
        // A hash without an owner holds nothing (acquire takes it over).
        return Ok(LeaderState::empty(name));
    }
    if pttl < 0 {
        return Err(OpError::NoExpiry);
    }
    let lease = LeaderLease::new(
        text_field(fields.get(1), "leader")?,
        time_field(fields.get(3), "acq")?,
        time_field(fields.get(4), "exp")?,
        u64_field(fields.get(2), "fence")?,
    );
    Ok(LeaderState::occupied(name, lease))
}

#[cfg(test)]
mod tests {
    use super::*;

    use leader_core::LockStatus;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn state_hides_missing_keys_and_flags_records_without_expiry() {
        let key = LockName::new("job").unwrap();
        let op = State {
            key: &key,
            watched: false,
        };
        let gone = Value::Array(vec![
            Value::Int(-2),
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::Nil,
        ]);
        assert_eq!(op.decode(gone).unwrap().status(), LockStatus::Empty);
        let forever = Value::Array(vec![
            Value::Int(-1),
            bulk("o"),
            bulk("n"),
            bulk("1"),
            bulk("1"),
            bulk("2"),
        ]);
        assert!(matches!(op.decode(forever), Err(OpError::NoExpiry)));
    }
}
