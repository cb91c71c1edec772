//! Replica acknowledgement of an acquire or a renewal: the `WAIT` sent right after the
//! script, in the same round trip on the same connection (so on the node that ran it),
//! and what its answer makes of the script's answer.

use leader_core::Lease;
use redis::{RedisResult, Value};

use super::Op;
use crate::acks::ReplicaAcks;
use crate::decode::int;
use crate::error::OpError;

/// The `WAIT` answer: how many replicas acknowledged, or why it failed.
#[derive(Debug)]
pub(crate) enum Ack {
    /// `WAIT` answered with this many replicas.
    Replicas(i64),
    /// `WAIT` failed (or answered something else).
    Failed(redis::RedisError),
}

impl Ack {
    /// Reads `WAIT`'s reply.
    pub(crate) fn from_reply(reply: RedisResult<Value>) -> Self {
        match reply {
            Ok(value) => match int(&value) {
                Some(replicas) => Ack::Replicas(replicas),
                None => Ack::Failed(redis::RedisError::from((
                    redis::ErrorKind::Parse,
                    "WAIT did not answer a number",
                    crate::error::reply_text(&value),
                ))),
            },
            Err(err) => Ack::Failed(err),
        }
    }
}

/// `output` of `O` as the caller gets it once `ack` is known: unchanged when at least
/// `acks.replicas` replicas acknowledged, else every grant is a transient error (saying
/// how many acknowledged) and the leases granted are returned, to be released.
pub(crate) fn acknowledged<O: Op>(
    output: O::Output,
    ack: Ack,
    acks: ReplicaAcks,
) -> (O::Output, Vec<Lease>) {
    let released = if O::NAME == "acquire" {
        "; the grant is released"
    } else {
        ""
    };
    match ack {
        Ack::Replicas(acked) if acked >= i64::from(acks.replicas) => (output, Vec::new()),
        Ack::Replicas(acked) => O::unacknowledged(output, &|| OpError::NotAcknowledged {
            op: O::NAME,
            wanted: acks.replicas,
            acked,
            timeout: acks.timeout,
            released,
        }),
        Ack::Failed(err) => {
            let (kind, detail) = (err.kind(), err.to_string());
            O::unacknowledged(output, &|| OpError::AckFailed {
                op: O::NAME,
                released,
                source: redis::RedisError::from((kind, "WAIT failed", detail.clone())),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use leader_core::{BackendErrorKind, ExtendOutcome, LockName, OwnerToken, SlotOutcome};

    use super::*;
    use crate::ops::{Acquire, Extend};

    fn acks() -> ReplicaAcks {
        ReplicaAcks {
            replicas: 2,
            timeout: Duration::from_millis(50),
        }
    }

    fn lease(key: &LockName) -> Lease {
        let now = SystemTime::now();
        Lease::new(
            key.clone(),
            OwnerToken::random(),
            "node-a",
            7,
            now,
            now + Duration::from_secs(1),
        )
    }

    #[test]
    fn an_unacknowledged_grant_is_a_transient_error_and_released() {
        let key = LockName::new("job").unwrap();
        let granted = lease(&key);
        let output = vec![
            Ok(SlotOutcome::Acquired {
                slot: 0,
                lease: granted.clone(),
            }),
            Ok(SlotOutcome::Held(None)),
        ];
        let (answers, released) = acknowledged::<Acquire<'_, '_>>(output, Ack::Replicas(1), acks());
        assert_eq!(released.len(), 1);
        assert_eq!(released[0].owner, granted.owner);
        let failure = answers[0].as_ref().unwrap_err();
        assert_eq!(failure.kind(), BackendErrorKind::Transient);
        assert_eq!(
            failure.to_string(),
            "the acquire reached 1 of 2 replicas within 50ms (WAIT); the grant is released"
        );
        assert!(matches!(answers[1], Ok(SlotOutcome::Held(None))));

        let output = vec![Ok(SlotOutcome::Acquired {
            slot: 0,
            lease: granted,
        })];
        let (answers, released) = acknowledged::<Acquire<'_, '_>>(output, Ack::Replicas(2), acks());
        assert!(released.is_empty());
        assert!(matches!(answers[0], Ok(SlotOutcome::Acquired { .. })));
    }

    #[test]
    fn an_unacknowledged_renewal_is_a_transient_error_and_a_failed_wait_too() {
        let output = vec![
            Ok(ExtendOutcome::Extended {
                expires_at: SystemTime::now(),
            }),
            Ok(ExtendOutcome::NotHeld),
        ];
        let failed = Ack::from_reply(Err(redis::RedisError::from((
            redis::ErrorKind::Io,
            "connection reset",
        ))));
        let (answers, released) = acknowledged::<Extend<'_, '_>>(output, failed, acks());
        assert!(released.is_empty());
        let failure = answers[0].as_ref().unwrap_err();
        assert_eq!(failure.kind(), BackendErrorKind::Transient);
        assert!(
            failure
                .to_string()
                .starts_with("the WAIT for replicas after the extend failed")
        );
        assert!(matches!(answers[1], Ok(ExtendOutcome::NotHeld)));
        assert!(matches!(Ack::from_reply(Ok(Value::Okay)), Ack::Failed(_)));
        assert!(matches!(
            Ack::from_reply(Ok(Value::Int(3))),
            Ack::Replicas(3)
        ));
    }
}
