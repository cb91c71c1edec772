//! `force_release` and `force_release_if` as an [`Op`]: one script that frees the lock
//! whoever holds it, or only while its holder has the fencing token given.

use std::time::SystemTime;

use leader_core::{ForceReleaseOutcome, LeaderLease, LockName};
use redis::Value;

use crate::decode::{array, int, micros_since_epoch, text_field, time_field, u64_field};
use crate::error::OpError;
use crate::keys::LockKeys;
use crate::ops::{Op, ScriptCall};
use crate::scripts::FORCE_RELEASE;

/// `force_release` (`only: None`), or `force_release_if` (`only: Some(token)`).
#[derive(Debug)]
pub(crate) struct ForceRelease<'a> {
    pub(crate) key: &'a LockName,
    /// The fencing token the holder must have to be freed.
    pub(crate) only: Option<u64>,
    /// This node's clock, which judges a record without key expiry as `state` does (see
    /// `holds_without_expiry`).
    pub(crate) now: SystemTime,
}

impl Op for ForceRelease<'_> {
    type Output = ForceReleaseOutcome;
    const NAME: &'static str = "force_release";

    fn name(&self) -> &LockName {
        self.key
    }

    fn invocation(&self, keys: LockKeys<'_>, channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&FORCE_RELEASE, 1);
        invocation.key(keys.lock());
        invocation.arg(channel).arg(self.key.as_str());
        match self.only {
            Some(token) => invocation.arg(token.to_string()),
            None => invocation.arg(""),
        };
        invocation.arg(micros_since_epoch(self.now));
        invocation
    }

    fn decode(&self, reply: Value) -> Result<ForceReleaseOutcome, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        let holder = || {
            Ok::<_, OpError>(LeaderLease::new(
                text_field(items.get(1), "leader")?,
                time_field(items.get(3), "acq")?,
                time_field(items.get(4), "exp")?,
                u64_field(items.get(2), "fence")?,
            ))
        };
        match (items.first().and_then(int), items.len()) {
            (Some(1), 5) => Ok(ForceReleaseOutcome::Released(holder()?)),
            (Some(2), 5) if self.only.is_some() => {
                Ok(ForceReleaseOutcome::HolderChanged(holder()?))
            }
            (Some(0), 1) => Ok(ForceReleaseOutcome::NotHeld),
            (Some(-1), 2) => Err(match text_field(items.get(1), "field")?.as_str() {
                "expiry" => OpError::NoExpiry,
                "leader" => OpError::Corrupt { field: "leader" },
                "fence" => OpError::Corrupt { field: "fence" },
                "acq" => OpError::Corrupt { field: "acq" },
                "exp" => OpError::Corrupt { field: "exp" },
                _ => return Err(bad()),
            }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn decodes_the_holder_freed_nothing_held_and_corruption() {
        let key = LockName::new("job").unwrap();
        let op = ForceRelease {
            key: &key,
            only: None,
            now: SystemTime::now(),
        };
        let freed = Value::Array(vec![
            Value::Int(1),
            bulk("node-a"),
            bulk("42"),
            bulk("1000000"),
            bulk("3000000"),
        ]);
        let ForceReleaseOutcome::Released(holder) = op.decode(freed).unwrap() else {
            panic!("released")
        };
        assert_eq!(
            (holder.leader_id.as_str(), holder.fencing_token),
            ("node-a", 42)
        );
        assert_eq!(
            holder.acquired_at,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1)
        );
        assert_eq!(
            holder.expires_at,
            SystemTime::UNIX_EPOCH + Duration::from_secs(3)
        );

        let none = Value::Array(vec![Value::Int(0)]);
        assert_eq!(op.decode(none).unwrap(), ForceReleaseOutcome::NotHeld);

        let forever = Value::Array(vec![Value::Int(-1), bulk("expiry")]);
        assert!(matches!(op.decode(forever), Err(OpError::NoExpiry)));
        let fence = Value::Array(vec![Value::Int(-1), bulk("fence")]);
        assert!(matches!(
            op.decode(fence),
            Err(OpError::Corrupt { field: "fence" })
        ));
        // Another holder is an answer of the conditional call only.
        let other = Value::Array(vec![
            Value::Int(2),
            bulk("node-b"),
            bulk("43"),
            bulk("1000000"),
            bulk("3000000"),
        ]);
        assert!(matches!(
            op.decode(other.clone()),
            Err(OpError::BadReply { .. })
        ));
        let only = ForceRelease {
            key: &key,
            only: Some(42),
            now: SystemTime::now(),
        };
        assert!(matches!(
            only.decode(other).unwrap(),
            ForceReleaseOutcome::HolderChanged(holder) if holder.fencing_token == 43
        ));
        let odd = Value::Array(vec![Value::Int(-1), bulk("owner?")]);
        assert!(matches!(op.decode(odd), Err(OpError::BadReply { .. })));
        assert!(matches!(
            op.decode(Value::Nil),
            Err(OpError::BadReply { .. })
        ));
    }
}
