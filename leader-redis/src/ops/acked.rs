//! Replica acknowledgement of an acquire or a renewal: the `WAIT` sent right after the
//! script, in the same round trip on the same connection (so on the node that ran it),
//! and what its answer makes of the script's answer. The round trip is built and read
//! here; the blocking and async connections only send it.

use std::time::Duration;

use leader_core::{Lease, ReleaseRequest};
use redis::{ErrorKind, RedisResult, Value};

use super::{Op, Release, ReleaseShared, ScriptCall};
use crate::acks::ReplicaAcks;
use crate::decode::int;
use crate::error::OpError;
use crate::keys::LockKeys;
use crate::sync_conn::is_no_script;

/// The answers of one round trip of a script and its `WAIT`, each its own result.
pub(crate) type AckedReply = RedisResult<(RedisResult<Value>, RedisResult<Value>)>;

/// The round trip: `invocation` then `wait`, as one pipeline of two commands.
pub(crate) fn acked_pipeline(invocation: &ScriptCall, wait: &redis::Cmd) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.add_command(invocation.eval_cmd())
        .add_command(wait.clone());
    pipe
}

/// Whether the server did not know the script (a restart emptied its cache): load it
/// and send the round trip once more. The cluster connection answers an error reply in a
/// pipeline as the error of the whole call; a single connection answers each reply on
/// its own.
pub(crate) fn script_unknown(answer: &AckedReply) -> bool {
    match answer {
        Ok((Err(err), _)) | Err(err) => is_no_script(err),
        Ok(_) => false,
    }
}

/// The two answers of a script and its `WAIT`, each its own result. A script refused
/// with `READONLY` (the connection reached a replica: a master demoted behind Sentinel)
/// fails the whole round trip, as it would without the `WAIT`, so the caller looks for
/// the master again instead of reusing the connection.
pub(crate) fn pair(values: Vec<Value>) -> AckedReply {
    let mut values = values.into_iter().map(Value::extract_error);
    match (values.next(), values.next(), values.next()) {
        (Some(Err(err)), Some(_), None) if crate::sentinel::is_readonly(&err) => Err(err),
        (Some(script), Some(wait), None) => Ok((script, wait)),
        _ => Err(redis::RedisError::from((
            ErrorKind::Parse,
            "expected two answers, to a script and its WAIT",
        ))),
    }
}

/// The script's reply and the `WAIT`'s, from one round trip: a failed round trip is the
/// script's failure (it may or may not have run, as for any failed call).
pub(crate) fn split(reply: AckedReply) -> (RedisResult<Value>, Ack) {
    match reply {
        Ok((script, wait)) => (script, Ack::from_reply(wait)),
        Err(err) => {
            let ack = Ack::Failed(redis::RedisError::from((err.kind(), "no answer")));
            (Err(err), ack)
        }
    }
}

/// The grants the replicas did not acknowledge: released by their owner token at once
/// (no minimum lease kept), so that nobody is left holding what a failover may lose.
#[derive(Debug)]
pub(crate) struct Unacknowledged {
    granted: Vec<Lease>,
}

impl Unacknowledged {
    /// The release requests, as many as the acquire's requests: one chunk of a release.
    pub(crate) fn requests(&self) -> Vec<ReleaseRequest<'_>> {
        self.granted
            .iter()
            .map(|lease| ReleaseRequest::new(lease, Duration::ZERO))
            .collect()
    }

    /// The grants' keys, in the order of [`requests`](Self::requests).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &leader_core::LockName> {
        self.granted.iter().map(|lease| &lease.key)
    }

    /// Warns about each grant whose release failed (`answers` in the order of
    /// [`requests`](Self::requests)): it stays until it runs out; the owner token is the
    /// caller's alone, so nobody else can act on it.
    pub(crate) fn report<T, E: std::fmt::Display>(&self, answers: Vec<Result<T, E>>) {
        for (lease, answer) in self.granted.iter().zip(answers) {
            if let Err(err) = answer {
                tracing::warn!(lock = %lease.key, error = %err, "could not release a grant the replicas did not acknowledge; it runs out by its lease time");
            }
        }
    }
}

/// The release of grants the replicas did not acknowledge ([`Op::undo`]): a chunk of
/// exclusive leases, or a read/write lock's hold in its role; one answer per grant.
#[derive(Debug)]
pub(crate) enum Undo<'a> {
    /// `release.lua` over the leases.
    Exclusive(Release<'a, 'a>),
    /// `shared_release.lua` of the one hold.
    Shared(ReleaseShared<'a>),
}

impl Op for Undo<'_> {
    type Output = Vec<Result<leader_core::kit::Released, OpError>>;
    const NAME: &'static str = "release";

    fn name(&self) -> &leader_core::LockName {
        match self {
            Undo::Exclusive(release) => release.name(),
            Undo::Shared(release) => release.name(),
        }
    }

    fn invocation(&self, keys: LockKeys<'_>, channel: &str) -> ScriptCall {
        match self {
            Undo::Exclusive(release) => release.invocation(keys, channel),
            Undo::Shared(release) => release.invocation(keys, channel),
        }
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        match self {
            Undo::Exclusive(release) => release.decode(reply),
            Undo::Shared(release) => release.decode(reply).map(|answer| vec![Ok(answer)]),
        }
    }
}

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
) -> (O::Output, Unacknowledged) {
    let released = if O::RELEASES {
        "; the grant is released"
    } else {
        ""
    };
    let (output, granted) = match ack {
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
    };
    (output, Unacknowledged { granted })
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
        let requests = released.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].lease.owner, granted.owner);
        assert_eq!(requests[0].min_lease_time, Duration::ZERO);
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
        assert!(released.requests().is_empty());
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
        assert!(released.requests().is_empty());
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
