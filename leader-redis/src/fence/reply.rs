//! What a fenced write answers: the outcome, the errors, and reading the script's reply
//! (a plain function, shared by the blocking and async paths).

use leader_core::BackendErrorKind;
use redis::{RedisError, Value};

use crate::decode::{array, int};
use crate::error::{OpError, reply_text};

/// Whether a fenced write happened.
///
/// Exhaustive on purpose: a write either happened or did not, and a caller should decide
/// both cases explicitly rather than through a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use = "a rejected write did not happen; check the outcome"]
pub enum FenceOutcome {
    /// The token was not older than the highest seen: the write happened and the fence now
    /// holds the token.
    Accepted,
    /// A newer token has written: nothing was written. The holder has lost the lock and
    /// should stop.
    Rejected {
        /// The highest token the resource has seen (above the caller's).
        highest_seen: u64,
    },
}

impl FenceOutcome {
    /// `true` when the write happened.
    pub fn is_accepted(&self) -> bool {
        matches!(self, FenceOutcome::Accepted)
    }
}

/// Why a fenced write could not be judged or done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FenceError {
    /// The call failed: the server could not be reached, refused the script, or the command
    /// failed on it (a failed command changes neither the data nor the fence).
    #[error("the fenced write failed: {0}")]
    Redis(#[from] RedisError),
    /// The fence key holds something that is not a token (written by someone else); the
    /// write was refused and nothing changed.
    #[error("the fence key `{key}` holds {found}, not a fencing token; nothing was written")]
    CorruptFence {
        /// The fence key.
        key: String,
        /// What it holds: the start of a string, or the type of another value.
        found: String,
    },
    /// The reply does not have the shape the script gives.
    #[error("unexpected reply to the fenced write on `{key}`: {reply}")]
    BadReply {
        /// The fence key.
        key: String,
        /// The reply, cut to about 200 bytes.
        reply: String,
    },
}

impl FenceError {
    /// `true` when trying again later may work: the network, or a server that is starting,
    /// failing over or overloaded. A corrupted fence or a refused command is `false`.
    pub fn is_transient(&self) -> bool {
        match self {
            FenceError::Redis(err) => {
                OpError::from_redis("fence", err.clone()).kind() == BackendErrorKind::Transient
            }
            FenceError::CorruptFence { .. } | FenceError::BadReply { .. } => false,
        }
    }
}

/// Reads the reply of `lua/fence.lua`.
pub(super) fn decode(fence_key: &str, reply: &Value) -> Result<FenceOutcome, FenceError> {
    let items = array(reply).unwrap_or_default();
    match (items.first().and_then(int), items.get(1), items.len()) {
        (Some(1), None, 1) => Ok(FenceOutcome::Accepted),
        (Some(0), Some(highest), 2) => match token(highest) {
            Some(highest_seen) => Ok(FenceOutcome::Rejected { highest_seen }),
            None => Err(bad_reply(fence_key, reply)),
        },
        (Some(-1), Some(Value::BulkString(value)), 2) => Err(FenceError::CorruptFence {
            key: fence_key.to_owned(),
            found: format!("the string {:?}", String::from_utf8_lossy(value)),
        }),
        (Some(-2), Some(kind), 2) => Err(FenceError::CorruptFence {
            key: fence_key.to_owned(),
            found: format!("a value of type {}", text(kind)),
        }),
        _ => Err(bad_reply(fence_key, reply)),
    }
}

/// A token in decimal (the script answers in strings: Lua numbers lose digits above 2^53).
fn token(value: &Value) -> Option<u64> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        other => reply_text(other),
    }
}

fn bad_reply(fence_key: &str, reply: &Value) -> FenceError {
    FenceError::BadReply {
        key: fence_key.to_owned(),
        reply: reply_text(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn decoded(items: Vec<Value>) -> Result<FenceOutcome, FenceError> {
        decode("{r}:fence", &Value::Array(items))
    }

    #[test]
    fn reads_both_outcomes() {
        assert_eq!(
            decoded(vec![Value::Int(1)]).unwrap(),
            FenceOutcome::Accepted
        );
        assert_eq!(
            decoded(vec![Value::Int(0), bulk("18446744073709551615")]).unwrap(),
            FenceOutcome::Rejected {
                highest_seen: u64::MAX
            }
        );
    }

    #[test]
    fn a_corrupted_fence_names_the_key_and_what_it_holds() {
        let err = decoded(vec![Value::Int(-1), bulk("abc")]).unwrap_err();
        assert!(matches!(&err, FenceError::CorruptFence { key, found }
            if key == "{r}:fence" && found.contains("abc")));
        let err = decoded(vec![Value::Int(-2), bulk("hash")]).unwrap_err();
        assert!(err.to_string().contains("type hash"), "{err}");
        assert!(!err.is_transient());
    }

    #[test]
    fn garbage_is_a_bad_reply_not_a_panic() {
        for reply in [
            Value::Nil,
            Value::Int(1),
            Value::Array(vec![]),
            Value::Array(vec![Value::Int(2)]),
            Value::Array(vec![Value::Int(1), Value::Int(1)]),
            Value::Array(vec![Value::Int(0)]),
            Value::Array(vec![Value::Int(0), bulk("-3")]),
            Value::Array(vec![Value::Int(0), bulk("18446744073709551616")]),
            Value::Array(vec![Value::Int(-1), Value::Int(3)]),
        ] {
            assert!(
                matches!(decode("k", &reply), Err(FenceError::BadReply { .. })),
                "{reply:?}"
            );
        }
    }
}
