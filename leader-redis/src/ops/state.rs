//! `state`, and the holder decoding a listing shares.

use std::time::SystemTime;

use leader_core::{LeaderLease, LeaderState, LockName};
use redis::Value;

use super::{Op, ScriptCall, flag, status};
use crate::decode::{array, int, is_nil, micros_since_epoch, text_field, time_field, u64_field};
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
    /// This node's clock, which judges a record without key expiry ([`holds_without_expiry`]).
    pub(crate) now: SystemTime,
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
        let fields = items.get(1..).unwrap_or_default();
        holder_state(self.key.as_str(), pttl, fields, self.now)
    }
}

/// The state of the lock `name` from its key's `pttl` and its hash's `[owner, leader,
/// fence, acq, exp]` (what `state.lua` returns, and what a listing reads with `PTTL` and
/// `HMGET`), read at `now` on this node's clock: empty when the key is gone or has no
/// owner; an error for a record with an unreadable field, or without key expiry once its
/// own end has passed ([`holds_without_expiry`]).
pub(crate) fn holder_state(
    name: &str,
    pttl: i64,
    fields: &[Value],
    now: SystemTime,
) -> Result<LeaderState, OpError> {
    if pttl == -2 || pttl == 0 {
        // No key (or one that expires this very millisecond): nobody holds the lock.
        return Ok(LeaderState::empty(name));
    }
    if fields.first().is_none_or(is_nil) {
        // A hash without an owner holds nothing (acquire takes it over).
        return Ok(LeaderState::empty(name));
    }
    if pttl < 0 && !holds_without_expiry(fields.get(4), now) {
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

/// Whether a lock hash that has an owner but no key expiry (stripped by hand: Redis would
/// never free it) still holds the lock: while its own end `exp` is after `now`, on this
/// node's clock, it does; once `exp` has passed, or when `exp` is no number, it is a
/// corrupted record, reported and never overwritten.
///
/// The one rule of every path: `acquire.lua` (which asks for the key's expiry only once
/// `exp` has passed on the caller's clock, so that finding a live lease held costs one
/// `HMGET`), `force_release.lua`, `state` and both listings. Nodes whose clocks differ
/// may disagree near `exp`; either answer keeps the lock from being taken.
pub(crate) fn holds_without_expiry(exp: Option<&Value>, now: SystemTime) -> bool {
    let now = i64::try_from(micros_since_epoch(now)).unwrap_or(i64::MAX);
    exp.and_then(int).is_some_and(|ends| ends > now)
}

#[cfg(test)]
mod tests {
    use super::*;

    use leader_core::LockStatus;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn state_hides_missing_keys_and_flags_records_without_expiry_past_their_end() {
        let key = LockName::new("job").unwrap();
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_000);
        let op = State {
            key: &key,
            watched: false,
            now,
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
        let without_expiry = |exp: &str| {
            Value::Array(vec![
                Value::Int(-1),
                bulk("o"),
                bulk("n"),
                bulk("1"),
                bulk("1"),
                bulk(exp),
            ])
        };
        // Its own end still ahead: a holder, as acquire has it.
        let live = op.decode(without_expiry("1001")).unwrap();
        assert_eq!(live.leader().unwrap().fencing_token, 1);
        // At or past its end, or no end at all: it would never be freed.
        for dead in ["1000", "2", "soon"] {
            assert!(
                matches!(op.decode(without_expiry(dead)), Err(OpError::NoExpiry)),
                "{dead}"
            );
        }
    }
}
