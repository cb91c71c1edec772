//! The masters of a cluster, from `CLUSTER SLOTS`, in a stable order.

use std::collections::BTreeMap;

use redis::Value;

use crate::decode::{array, int};
use crate::error::OpError;

/// The number of hash slots of a Redis Cluster.
const SLOTS: i64 = 16384;

/// `CLUSTER SLOTS` (every version since 3.0; `CLUSTER SHARDS` needs 7.0).
pub(crate) fn command() -> redis::Cmd {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    cmd
}

/// One slot of each master (its lowest), ordered by the master's address (`host`, then
/// `port`): commands routed to a master's slot reach that master. Replicas, listed after
/// the master of each range, are left out.
pub(crate) fn slots(reply: &Value) -> Result<Vec<u16>, OpError> {
    let bad = || OpError::bad_reply(super::OP, reply);
    let mut masters: BTreeMap<(Vec<u8>, i64), u16> = BTreeMap::new();
    for range in array(reply).ok_or_else(bad)? {
        let range = array(range).ok_or_else(bad)?;
        let start = range
            .first()
            .and_then(int)
            .filter(|slot| (0..SLOTS).contains(slot))
            .and_then(|slot| u16::try_from(slot).ok())
            .ok_or_else(bad)?;
        let master = range.get(2).and_then(array).ok_or_else(bad)?;
        let host = match master.first() {
            Some(Value::BulkString(host)) => host.clone(),
            Some(Value::SimpleString(host)) => host.clone().into_bytes(),
            _ => return Err(bad()),
        };
        let port = master.get(1).and_then(int).ok_or_else(bad)?;
        let lowest = masters.entry((host, port)).or_insert(start);
        *lowest = (*lowest).min(start);
    }
    Ok(masters.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"id".to_vec()),
        ])
    }

    fn range(start: i64, end: i64, nodes: Vec<Value>) -> Value {
        let mut items = vec![Value::Int(start), Value::Int(end)];
        items.extend(nodes);
        Value::Array(items)
    }

    #[test]
    fn one_slot_per_master_in_address_order_without_replicas() {
        let reply = Value::Array(vec![
            range(
                10923,
                16383,
                vec![node("127.0.0.1", 7002), node("127.0.0.1", 7005)],
            ),
            range(
                5461,
                10922,
                vec![node("127.0.0.1", 7001), node("127.0.0.1", 7004)],
            ),
            range(
                0,
                5000,
                vec![node("127.0.0.1", 7000), node("127.0.0.1", 7003)],
            ),
            range(5001, 5460, vec![node("127.0.0.1", 7002)]),
        ]);
        assert_eq!(slots(&reply).unwrap(), [0, 5461, 5001]);
    }

    #[test]
    fn a_reply_of_another_shape_is_an_error() {
        for reply in [
            Value::Okay,
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![range(0, 10, vec![])]),
            Value::Array(vec![range(20000, 20001, vec![node("h", 1)])]),
        ] {
            assert!(matches!(slots(&reply), Err(OpError::BadReply { .. })));
        }
        assert!(slots(&Value::Array(vec![])).unwrap().is_empty());
    }
}
