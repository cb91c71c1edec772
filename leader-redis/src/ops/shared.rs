//! The read/write lock's calls (`try_acquire_shared`, `extend_shared`, `release_shared`,
//! `state_shared`) as [`Op`]s: one script each (`lua/shared_*.lua`, on the record's rules
//! in `lua/lib/shared.lua`) on the lock's own keys ([`LockKeys::shared`]), so each call is
//! one round trip (two commands with replica acknowledgement: the script and its `WAIT`).

use std::time::SystemTime;

use leader_core::kit::Released;
use leader_core::{
    ExtendOutcome, LeaderLease, Lease, LockName, ReleaseEvents, ReleaseRequest, Renewal, Role,
    SharedOutcome, SharedRequest, SharedState, WriterIntent,
};
use redis::Value;

use super::{Op, ScriptCall, Undo, flag, status};
use crate::decode::{array, int, micros_since_epoch, millis, text_field, time_field, u64_field};
use crate::error::OpError;
use crate::keys::LockKeys;
use crate::scripts::{SHARED_ACQUIRE, SHARED_EXTEND, SHARED_RELEASE, SHARED_STATE};
use crate::time::min_lease;

/// `try_acquire_shared`: see `lua/shared_acquire.lua`.
#[derive(Debug)]
pub(crate) struct AcquireShared<'a, 'p> {
    request: SharedRequest<'a>,
    /// This node's waiters: a request whose lock one listens on asks the script to mark
    /// the record when it is refused, so that the release is announced.
    events: &'p ReleaseEvents,
    now: SystemTime,
}

impl<'a, 'p> AcquireShared<'a, 'p> {
    pub(crate) fn new(
        request: SharedRequest<'a>,
        events: &'p ReleaseEvents,
        now: SystemTime,
    ) -> Self {
        AcquireShared {
            request,
            events,
            now,
        }
    }
}

impl Op for AcquireShared<'_, '_> {
    /// A grant the replicas did not acknowledge is an error (it is released).
    type Output = Result<SharedOutcome, OpError>;
    const NAME: &'static str = "acquire_shared";
    const ACKED: bool = true;
    const RELEASES: bool = true;

    fn name(&self) -> &LockName {
        self.request.request.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let request = &self.request.request;
        let mut invocation = ScriptCall::new(&SHARED_ACQUIRE, 2);
        invocation.key(keys.shared()).key(keys.shared_fence());
        invocation
            .arg(micros_since_epoch(self.now))
            .arg(request.owner.hex().as_slice())
            .arg(request.leader_id)
            .arg(millis(request.lease_time))
            .arg(flag(request.use_db_time))
            .arg(flag(self.events.is_listened(request.key.as_str())))
            .arg(self.request.role.as_str())
            .arg(self.request.max_readers.get());
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        let request = &self.request.request;
        let state = || shared_state(Self::NAME, request.key, items.get(1..).unwrap_or_default());
        let outcome = match (status(items), items.len()) {
            (Some(1), 5) => SharedOutcome::Acquired(Lease::new(
                request.key.clone(),
                request.owner,
                text_field(items.get(4), "n")?,
                u64_field(items.get(1), "t")?,
                time_field(items.get(2), "a")?,
                time_field(items.get(3), "e")?,
            )),
            (Some(0), 4) => SharedOutcome::Held(state()?),
            (Some(2), 4) => SharedOutcome::Queued(state()?),
            (Some(-1), 3) => return Err(script_failure(Self::NAME, items).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        Ok(Ok(outcome))
    }

    /// A grant becomes `failure()` and its lease is handed back for release; a refusal or
    /// a writer's intent (no hold granted) stays.
    fn unacknowledged(
        output: Self::Output,
        failure: &dyn Fn() -> OpError,
    ) -> (Self::Output, Vec<Lease>) {
        match output {
            Ok(SharedOutcome::Acquired(lease)) => (Err(failure()), vec![lease]),
            other => (other, Vec::new()),
        }
    }

    /// The grant's release in the role it was granted in.
    fn undo<'r>(
        &self,
        requests: &'r [ReleaseRequest<'r>],
        _key_prefix: &'r str,
    ) -> Option<Undo<'r>> {
        let request = requests.first()?;
        Some(Undo::Shared(ReleaseShared::new(
            *request,
            self.request.role,
        )))
    }
}

/// `extend_shared`: see `lua/shared_extend.lua`.
#[derive(Debug)]
pub(crate) struct ExtendShared<'a> {
    renewal: Renewal<'a>,
    role: Role,
    now: SystemTime,
}

impl<'a> ExtendShared<'a> {
    pub(crate) fn new(renewal: Renewal<'a>, role: Role, now: SystemTime) -> Self {
        ExtendShared { renewal, role, now }
    }
}

impl Op for ExtendShared<'_> {
    /// A renewal the replicas did not acknowledge is an error (the hold stays until it
    /// runs out).
    type Output = Result<ExtendOutcome, OpError>;
    const NAME: &'static str = "extend_shared";
    const ACKED: bool = true;

    fn name(&self) -> &LockName {
        &self.renewal.lease.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&SHARED_EXTEND, 1);
        invocation.key(keys.shared());
        invocation
            .arg(micros_since_epoch(self.now))
            .arg(self.renewal.lease.owner.hex().as_slice())
            .arg(millis(self.renewal.lease_time))
            .arg(flag(self.renewal.use_db_time))
            .arg(self.role.as_str());
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        match &reply {
            Value::Int(0) => Ok(Ok(ExtendOutcome::NotHeld)),
            Value::Array(items) => Err(script_failure(Self::NAME, items)
                .unwrap_or_else(|| OpError::bad_reply(Self::NAME, &reply))),
            expires => Ok(Ok(ExtendOutcome::Extended {
                expires_at: time_field(Some(expires), "e")?,
            })),
        }
    }

    /// A renewal becomes `failure()`; a hold found gone stays gone.
    fn unacknowledged(
        output: Self::Output,
        failure: &dyn Fn() -> OpError,
    ) -> (Self::Output, Vec<Lease>) {
        match output {
            Ok(ExtendOutcome::Extended { .. }) => (Err(failure()), Vec::new()),
            other => (other, Vec::new()),
        }
    }
}

/// `release_shared`: see `lua/shared_release.lua`.
#[derive(Debug)]
pub(crate) struct ReleaseShared<'a> {
    release: ReleaseRequest<'a>,
    role: Role,
}

impl<'a> ReleaseShared<'a> {
    pub(crate) fn new(release: ReleaseRequest<'a>, role: Role) -> Self {
        ReleaseShared { release, role }
    }
}

impl Op for ReleaseShared<'_> {
    type Output = Released;
    const NAME: &'static str = "release_shared";

    fn name(&self) -> &LockName {
        &self.release.lease.key
    }

    fn invocation(&self, keys: LockKeys<'_>, channel: &str) -> ScriptCall {
        let min_ms = if self.release.min_lease_time.is_zero() {
            0
        } else {
            millis(min_lease(self.release.min_lease_time))
        };
        let mut invocation = ScriptCall::new(&SHARED_RELEASE, 1);
        invocation.key(keys.shared());
        invocation
            .arg(channel)
            .arg(self.release.lease.owner.hex().as_slice())
            .arg(min_ms)
            .arg(self.role.as_str())
            // The key alone, no token: a read/write lock's tokens come from its own
            // counter, and an observer of the exclusive lock of the same name (which hears
            // this channel too) must not take one for its holder's end.
            .arg(self.release.lease.key.as_str());
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Released, OpError> {
        match &reply {
            Value::Int(1) => Ok(Released::Freed),
            Value::Int(2) => Ok(Released::Kept),
            Value::Int(0) => Ok(Released::NotHeld),
            Value::Array(items) => Err(script_failure(Self::NAME, items)
                .unwrap_or_else(|| OpError::bad_reply(Self::NAME, &reply))),
            _ => Err(OpError::bad_reply(Self::NAME, &reply)),
        }
    }
}

/// `state_shared`: see `lua/shared_state.lua`.
#[derive(Debug)]
pub(crate) struct StateShared<'a> {
    key: &'a LockName,
    /// Whether one of this node's waiters listens on the lock: the read then marks the
    /// record, so that a release is announced.
    watched: bool,
}

impl<'a> StateShared<'a> {
    pub(crate) fn new(key: &'a LockName, watched: bool) -> Self {
        StateShared { key, watched }
    }
}

impl Op for StateShared<'_> {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";

    fn name(&self) -> &LockName {
        self.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        let mut invocation = ScriptCall::new(&SHARED_STATE, 1);
        invocation.key(keys.shared());
        invocation.arg(flag(self.watched));
        invocation
    }

    fn decode(&self, reply: Value) -> Result<SharedState, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        match (status(items), items.len()) {
            (Some(1), 4) => shared_state(Self::NAME, self.key, &items[1..]),
            (Some(-1), 3) => Err(script_failure(Self::NAME, items).ok_or_else(bad)?),
            _ => Err(bad()),
        }
    }
}

/// The lock `key` from the `[writer, readers, intent]` of a reply to `op`
/// (`shared_view` in `lua/lib/shared.lua`).
fn shared_state(op: &'static str, key: &LockName, parts: &[Value]) -> Result<SharedState, OpError> {
    let bad = || OpError::bad_reply(op, &Value::Array(parts.to_vec()));
    let [writer, readers, intent] = parts else {
        return Err(bad());
    };
    let list = |value| array(value).ok_or_else(bad);
    let writer = match list(writer)? {
        [] => None,
        fields => Some(hold(fields, &bad)?),
    };
    let readers = list(readers)?
        .iter()
        .map(|reader| hold(list(reader)?, &bad))
        .collect::<Result<_, _>>()?;
    let intent = match list(intent)? {
        [] => None,
        [node, expires] => Some(WriterIntent::new(
            text_field(Some(node), "n")?,
            time_field(Some(expires), "e")?,
        )),
        _ => return Err(bad()),
    };
    Ok(SharedState::new(key.as_str(), writer, readers, intent))
}

/// A hold from its `[node, token, acquired, expires]`.
fn hold(fields: &[Value], bad: &dyn Fn() -> OpError) -> Result<LeaderLease, OpError> {
    let [node, token, acquired, expires] = fields else {
        return Err(bad());
    };
    Ok(LeaderLease::new(
        text_field(Some(node), "n")?,
        time_field(Some(acquired), "a")?,
        time_field(Some(expires), "e")?,
        u64_field(Some(token), "t")?,
    ))
}

/// The failure a script reported as `{-1, kind, what}`: a record this library did not
/// write (`corrupt`), or a command that failed on a key (`error`).
fn script_failure(op: &'static str, items: &[Value]) -> Option<OpError> {
    if items.first().and_then(int) != Some(-1) {
        return None;
    }
    let what = text_field(items.get(2), "error").ok()?;
    match text_field(items.get(1), "kind").ok()?.as_str() {
        "corrupt" => Some(OpError::CorruptShared { what }),
        "error" => Some(OpError::InScript { op, message: what }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
