//! `release` and `release_batch` as one script call per chunk.

use leader_core::kit::Released;
use leader_core::{LockName, ReleaseNotice, ReleaseRequest};
use redis::{RedisWrite, ToRedisArgs, Value};

use super::{Items, Op, ScriptCall, write_arg};
use crate::decode::{array, int, millis, text_field};
use crate::error::OpError;
use crate::keys::LockKeys;
use crate::scripts::RELEASE;
use crate::time::min_lease;

/// `release` and `release_batch`: one script releases every lease of a chunk, each
/// answered on its own (see `lua/release.lua`).
#[derive(Debug)]
pub(crate) struct Release<'a, 'p> {
    /// The releases; errors of the whole call name the first one's key.
    releases: Items<'a, ReleaseRequest<'a>>,
    /// The backend's key prefix, for the keys of the leases after the first.
    key_prefix: &'p str,
}

impl<'a, 'p> Release<'a, 'p> {
    /// The most leases one script releases (as [`Acquire::CHUNK`](super::Acquire::CHUNK)).
    pub(crate) const CHUNK: usize = 100;
    /// The most chunks sent in one round trip (a pipeline, on a standalone server).
    pub(crate) const PIPELINED: usize = 10;

    /// Releases `releases` (at most [`CHUNK`](Self::CHUNK) of them; on a cluster one);
    /// `None` when there are none, since an empty call would name no lock.
    pub(crate) fn new(releases: &'a [ReleaseRequest<'a>], key_prefix: &'p str) -> Option<Self> {
        Some(Release {
            releases: Items::chunk(releases)?,
            key_prefix,
        })
    }

    /// Releases the one lease of `release`.
    pub(crate) fn one(release: ReleaseRequest<'a>, key_prefix: &'p str) -> Self {
        Release {
            releases: Items::One(release),
            key_prefix,
        }
    }
}

impl Op for Release<'_, '_> {
    /// One answer per lease; a lease's own failure names its key.
    type Output = Vec<Result<Released, OpError>>;
    const NAME: &'static str = "release";

    fn name(&self) -> &LockName {
        &self.releases.first().lease.key
    }

    fn invocation(&self, keys: LockKeys<'_>, channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&RELEASE, self.releases.len());
        invocation.key(keys.lock());
        for release in self.releases.iter().skip(1) {
            invocation.key(LockKeys::new(self.key_prefix, &release.lease.key).lock());
        }
        invocation.arg(channel);
        for release in self.releases.iter() {
            let min_ms = if release.min_lease_time.is_zero() {
                0
            } else {
                millis(min_lease(release.min_lease_time))
            };
            invocation
                .arg(release.lease.owner.hex().as_slice())
                .arg(min_ms)
                .arg(Notice(release));
        }
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        if items.len() != self.releases.len() {
            return Err(bad());
        }
        Ok(items.iter().map(released).collect())
    }
}

/// The message announcing `0`'s release ([`ReleaseNotice::message`]), written straight
/// into the call as one argument.
pub(super) struct Notice<'r, 'a>(pub(super) &'r ReleaseRequest<'a>);

impl ToRedisArgs for Notice<'_, '_> {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + RedisWrite,
    {
        let (key, token) = (self.0.lease.key.as_str(), self.0.lease.fencing_token);
        write_arg(out, |buffer| {
            ReleaseNotice::write_message(buffer, key, token)
        })
        .unwrap_or_else(|_| out.write_arg(ReleaseNotice::message(key, token).as_bytes()));
    }
}

/// One lease's answer in a `release` reply.
fn released(item: &Value) -> Result<Released, OpError> {
    let bad = || OpError::bad_reply(Release::NAME, item);
    match item {
        Value::Int(1) => Ok(Released::Freed),
        Value::Int(2) => Ok(Released::Kept),
        Value::Int(0) => Ok(Released::NotHeld),
        Value::Array(failed) if failed.first().and_then(int) == Some(-1) => {
            match (text_field(failed.get(1), "field")?.as_str(), failed.len()) {
                ("error", 3) => Err(OpError::InScript {
                    op: Release::NAME,
                    message: text_field(failed.get(2), "error")?,
                }),
                ("sacq", 2) => Err(OpError::Corrupt { field: "sacq" }),
                ("acq", 2) => Err(OpError::Corrupt { field: "acq" }),
                ("exp", 2) => Err(OpError::Corrupt { field: "exp" }),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use leader_core::{Lease, OwnerToken};

    use super::*;

    /// The words of the command that releases `releases`.
    fn words(releases: &[ReleaseRequest<'_>]) -> Vec<String> {
        let op = Release::new(releases, "leader").unwrap();
        op.invocation(LockKeys::new("leader", op.name()), "leader:released")
            .eval_cmd()
            .args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn a_release_sends_each_leases_key_token_minimum_and_message() {
        let now = SystemTime::now();
        let lease = |name: &str, token: u64| {
            Lease::new(
                LockName::new(name).unwrap(),
                OwnerToken::from_u128(u128::from(token) << 64 | 0xabc),
                "node-a",
                token,
                now,
                now + Duration::from_secs(1),
            )
        };
        let (first, second) = (lease("job", 42), lease("group#2", u64::MAX));
        let releases = [
            ReleaseRequest::new(&first, Duration::ZERO),
            ReleaseRequest::new(&second, Duration::from_millis(1500)),
        ];
        let sent = words(&releases);
        assert_eq!(sent[2], "2", "two keys");
        assert_eq!(
            sent[3..],
            [
                "leader:{job}".to_owned(),
                "leader:{group}#2".to_owned(),
                "leader:released".to_owned(),
                first.owner.to_string(),
                "0".to_owned(),
                ReleaseNotice::message("job", 42),
                second.owner.to_string(),
                millis(min_lease(Duration::from_millis(1500))).to_string(),
                ReleaseNotice::message("group#2", u64::MAX),
            ]
        );
    }

    #[test]
    fn a_release_message_longer_than_the_stack_buffer_is_sent_whole() {
        let now = SystemTime::now();
        let name = "n".repeat(LockName::MAX_LEN);
        let lease = Lease::new(
            LockName::new(&name).unwrap(),
            OwnerToken::random(),
            "node-a",
            u64::MAX,
            now,
            now + Duration::from_secs(1),
        );
        let message = ReleaseNotice::message(&name, u64::MAX);
        assert!(message.len() > 256);
        let sent = words(&[ReleaseRequest::new(&lease, Duration::ZERO)]);
        assert_eq!(sent.last(), Some(&message));
    }
}
