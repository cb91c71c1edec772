//! `try_acquire_slot`, `try_acquire` and `try_acquire_batch` as one script call.

use std::time::SystemTime;

use leader_core::{LeaderLease, Lease, LockName, ReleaseEvents, SlotOutcome, SlotRequest};
use redis::Value;

use super::{Items, Op, ScriptCall, flag, status};
use crate::decode::{array, int, micros_since_epoch, millis, text_field, time_field, u64_field};
use crate::error::OpError;
use crate::keys::{LockKeys, index_of};
use crate::scripts::ACQUIRE;

/// `try_acquire_slot` (and `try_acquire`, a group of one slot), and `try_acquire_batch`:
/// one script over every slot of every request, each request answered on its own (see
/// `lua/acquire.lua`).
#[derive(Debug)]
pub(crate) struct Acquire<'a, 'p> {
    /// The requests; errors of the whole call name the first one's key.
    requests: Items<'a, SlotRequest<'a>>,
    /// The backend's key prefix, for the keys after the first.
    key_prefix: &'p str,
    /// This node's waiters: a request whose lock one listens on asks the script to mark
    /// a held lease, so that its release is announced.
    events: &'p ReleaseEvents,
    now: SystemTime,
}

impl<'a, 'p> Acquire<'a, 'p> {
    /// The most requests of a batch one script tries: a chunk keeps the server busy for
    /// well under a millisecond.
    pub(crate) const CHUNK: usize = 100;
    /// The most chunks sent in one round trip (a pipeline, on a standalone server).
    pub(crate) const PIPELINED: usize = 10;

    /// Tries `requests` (at most [`CHUNK`](Self::CHUNK) of them; on a cluster only
    /// requests whose keys share one hash tag, so one); `None` when there are none, since
    /// an empty call would name no lock.
    pub(crate) fn new(
        requests: &'a [SlotRequest<'a>],
        key_prefix: &'p str,
        events: &'p ReleaseEvents,
        now: SystemTime,
    ) -> Option<Self> {
        Some(Acquire {
            requests: Items::chunk(requests)?,
            key_prefix,
            events,
            now,
        })
    }

    /// Tries the one request `request` (every slot of its group).
    pub(crate) fn one(
        request: SlotRequest<'a>,
        key_prefix: &'p str,
        events: &'p ReleaseEvents,
        now: SystemTime,
    ) -> Self {
        Acquire {
            requests: Items::One(request),
            key_prefix,
            events,
            now,
        }
    }
}

impl Op for Acquire<'_, '_> {
    /// One answer per request; a request's own failure names its key.
    type Output = Vec<Result<SlotOutcome, OpError>>;
    const NAME: &'static str = "acquire";

    fn name(&self) -> &LockName {
        self.requests.first().request.key
    }

    fn invocation(&self, keys: LockKeys<'_>, _channel: &str) -> ScriptCall {
        // Per request: its slots' lock and fence counter, then its group's index.
        let key_count = self.requests.iter().map(|r| 2 * r.len() + 1).sum();
        let mut invocation = ScriptCall::new(&ACQUIRE, key_count);
        invocation.key(keys.lock());
        invocation.key(keys.fence());
        for (r, slot_request) in self.requests.iter().enumerate() {
            for (s, (_, key)) in slot_request.slots().enumerate() {
                if r > 0 || s > 0 {
                    let later = LockKeys::new(self.key_prefix, key);
                    invocation.key(later.lock()).key(later.fence());
                }
            }
            // The index of the group's derived names, where a derived slot taken is listed.
            invocation.key(index_of(self.key_prefix, slot_request.group_name()));
        }
        invocation.arg(micros_since_epoch(self.now));
        for slot_request in self.requests.iter() {
            let request = &slot_request.request;
            invocation
                .arg(request.owner.hex().as_slice())
                .arg(request.leader_id)
                .arg(millis(request.lease_time))
                .arg(flag(request.use_db_time))
                .arg(flag(
                    self.events.is_listened(slot_request.group_name().as_str()),
                ))
                .arg(slot_request.len());
        }
        invocation
    }

    fn decode(&self, reply: Value) -> Result<Self::Output, OpError> {
        let bad = || OpError::bad_reply(Self::NAME, &reply);
        let items = array(&reply).ok_or_else(bad)?;
        if items.len() != self.requests.len() {
            return Err(bad());
        }
        Ok(self
            .requests
            .iter()
            .zip(items)
            .map(|(request, item)| slot_answer(request, self.key_prefix, item))
            .collect())
    }

    const ACKED: bool = true;
    const RELEASES: bool = true;

    /// Every grant becomes `failure()` and its lease is handed back for release; a held
    /// lock (nothing written) stays held.
    fn unacknowledged(
        output: Self::Output,
        failure: &dyn Fn() -> OpError,
    ) -> (Self::Output, Vec<Lease>) {
        let mut granted = Vec::new();
        let answers = output
            .into_iter()
            .map(|answer| match answer {
                Ok(SlotOutcome::Acquired { lease, .. }) => {
                    granted.push(lease);
                    Err(failure())
                }
                other => other,
            })
            .collect();
        (answers, granted)
    }
}

/// One request's answer in an `acquire` reply.
fn slot_answer(
    request: &SlotRequest<'_>,
    key_prefix: &str,
    item: &Value,
) -> Result<SlotOutcome, OpError> {
    let bad = || OpError::bad_reply(Acquire::NAME, item);
    // The slot a reply's 1-based position in the request's order names.
    let nth_slot = |position: Option<&Value>| {
        let nth = position.and_then(int)?.checked_sub(1)?;
        request.slots().nth(usize::try_from(nth).ok()?)
    };
    let items = array(item).ok_or_else(bad)?;
    match (status(items), items.len()) {
        (Some(1), 6 | 7) => {
            let (slot, key) = nth_slot(items.get(5)).ok_or_else(bad)?;
            if let Some((skipped, skipped_key)) = items.get(6).and_then(|at| nth_slot(Some(at))) {
                tracing::warn!(lock = %skipped_key, slot = skipped, "skipped a slot of the group whose record cannot be read (corrupted); took another");
            }
            let lease = Lease::new(
                key.clone(),
                request.request.owner,
                text_field(items.get(4), "leader")?,
                u64_field(items.get(1), "fence")?,
                time_field(items.get(2), "acq")?,
                time_field(items.get(3), "exp")?,
            );
            Ok(SlotOutcome::Acquired { slot, lease })
        }
        (Some(0), 5) => Ok(SlotOutcome::Held(Some(LeaderLease::new(
            text_field(items.get(1), "leader")?,
            time_field(items.get(3), "acq")?,
            time_field(items.get(4), "exp")?,
            u64_field(items.get(2), "fence")?,
        )))),
        (Some(-1), 3) => match text_field(items.get(1), "field")?.as_str() {
            // Another owner's record without expiry: corrupted, never a holder to wait for.
            "expiry" => {
                let (_, key) = nth_slot(items.get(2)).ok_or_else(bad)?;
                Err(OpError::NoExpiryAt {
                    key: LockKeys::new(key_prefix, key).lock().into(),
                })
            }
            "error" => Err(OpError::InScript {
                op: Acquire::NAME,
                message: text_field(items.get(2), "error")?,
            }),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use leader_core::{AcquireRequest, GroupSlots, OwnerToken};

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    /// The answer to the one request of `op` in a reply made of `item`.
    fn one(op: &Acquire<'_, '_>, item: Value) -> Result<SlotOutcome, OpError> {
        let mut answers = op.decode(Value::Array(vec![item]))?;
        assert_eq!(answers.len(), 1);
        answers.pop().unwrap()
    }

    #[test]
    fn acquire_decodes_both_outcomes_and_rejects_garbage() {
        let key = LockName::new("job").unwrap();
        let request =
            AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(1));
        let requests = [SlotRequest::single(request)];
        let events = ReleaseEvents::new();
        let op = Acquire::new(&requests, "leader", &events, SystemTime::now()).unwrap();
        let acquired = Value::Array(vec![
            Value::Int(1),
            bulk("42"),
            bulk("1000000"),
            bulk("2000000"),
            bulk("node-a"),
            Value::Int(1),
        ]);
        let SlotOutcome::Acquired { slot: 0, lease } = one(&op, acquired).unwrap() else {
            panic!("acquired")
        };
        assert_eq!(
            (lease.fencing_token, lease.leader_id.as_str()),
            (42, "node-a")
        );
        assert_eq!(
            lease.expires_at.duration_since(lease.acquired_at).unwrap(),
            Duration::from_secs(1)
        );
        let out_of_range = Value::Array(vec![
            Value::Int(1),
            bulk("42"),
            bulk("1000000"),
            bulk("2000000"),
            bulk("node-a"),
            Value::Int(2),
        ]);
        assert!(matches!(
            one(&op, out_of_range),
            Err(OpError::BadReply { .. })
        ));

        let held = Value::Array(vec![
            Value::Int(0),
            bulk("node-b"),
            bulk("7"),
            bulk("1000000"),
            bulk("2000000"),
        ]);
        assert!(matches!(one(&op, held), Ok(SlotOutcome::Held(Some(h))) if h.fencing_token == 7));

        let corrupt = Value::Array(vec![
            Value::Int(0),
            bulk("node-b"),
            bulk("seven"),
            bulk("1"),
            bulk("2"),
        ]);
        assert!(matches!(
            one(&op, corrupt),
            Err(OpError::Corrupt { field: "fence" })
        ));
        assert!(matches!(
            op.decode(Value::Okay),
            Err(OpError::BadReply { .. })
        ));
        let failed = Value::Array(vec![Value::Int(-1), bulk("error"), bulk("WRONGTYPE")]);
        assert!(
            matches!(one(&op, failed), Err(OpError::InScript { message, .. }) if message == "WRONGTYPE")
        );
        assert!(
            matches!(
                op.decode(Value::Array(Vec::new())),
                Err(OpError::BadReply { .. })
            ),
            "one answer per request"
        );
        let no_expiry = Value::Array(vec![Value::Int(-1), bulk("expiry"), Value::Int(1)]);
        assert!(
            matches!(one(&op, no_expiry), Err(OpError::NoExpiryAt { key }) if key == "leader:{job}")
        );
        let far = Value::Array(vec![Value::Int(-1), bulk("expiry"), Value::Int(i64::MIN)]);
        assert!(matches!(one(&op, far), Err(OpError::BadReply { .. })));
    }

    /// The keys an acquire of `requests` sends, in order.
    fn keys_sent(requests: &[SlotRequest<'_>]) -> Vec<String> {
        let events = ReleaseEvents::new();
        let op = Acquire::new(requests, "leader", &events, SystemTime::now()).unwrap();
        let cmd = op
            .invocation(LockKeys::new("leader", op.name()), "leader:released")
            .eval_cmd();
        let words: Vec<String> = cmd
            .args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => String::new(),
            })
            .collect();
        let count: usize = words[2].parse().unwrap();
        words[3..3 + count].to_vec()
    }

    #[test]
    fn every_key_of_a_request_shares_its_groups_hash_tag() {
        // A derived name alone (a ranked candidate's record, a warm standby's lock) is
        // listed in its group's index, in the same cluster slot as its own keys.
        let key = LockName::new("job#warm").unwrap();
        let request =
            AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(1));
        assert_eq!(
            keys_sent(&[SlotRequest::single(request)]),
            [
                "leader:{job}#warm",
                "leader:{job}#warm:fence",
                "leader:{job}:derived"
            ]
        );
        let key = LockName::new("consumers").unwrap();
        let keys = GroupSlots::new(2).unwrap().keys(&key).unwrap();
        let request =
            AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(1));
        let plain = LockName::new("job").unwrap();
        let second = AcquireRequest::new(
            &plain,
            OwnerToken::random(),
            "node-a",
            Duration::from_secs(1),
        );
        assert_eq!(
            keys_sent(&[
                SlotRequest::group(request, &keys, 1),
                SlotRequest::single(second)
            ]),
            [
                "leader:{consumers}#1",
                "leader:{consumers}#1:fence",
                "leader:{consumers}",
                "leader:{consumers}:fence",
                "leader:{consumers}:derived",
                "leader:{job}",
                "leader:{job}:fence",
                "leader:{job}:derived"
            ]
        );
    }

    #[test]
    fn a_group_acquire_sends_every_slots_keys_in_order_and_decodes_the_slot() {
        let key = LockName::new("consumers").unwrap();
        let keys = GroupSlots::new(3).unwrap().keys(&key).unwrap();
        let request =
            AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(1));
        let requests = [SlotRequest::group(request, &keys, 2)];
        let events = ReleaseEvents::new();
        let op = Acquire::new(&requests, "leader", &events, SystemTime::now()).unwrap();
        let first = LockKeys::new("leader", op.name());
        assert_eq!(String::from(first.lock()), "leader:{consumers}#2");
        let second_of_three = Value::Array(vec![
            Value::Int(1),
            bulk("42"),
            bulk("1000000"),
            bulk("2000000"),
            bulk("node-a"),
            Value::Int(2),
        ]);
        let SlotOutcome::Acquired { slot, lease } = one(&op, second_of_three).unwrap() else {
            panic!("acquired")
        };
        assert_eq!((slot, lease.key.as_str()), (0, "consumers"));
    }
}
