//! `state`: one linearizable read of the holder record.

use std::time::SystemTime;

use leader_core::{LeaderState, LockName};

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::record::Record;

/// `state`'s arguments.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) key: LockName,
}

impl Op for State {
    type Output = LeaderState;
    const NAME: &'static str = "state";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    /// The holder record, unless its lease is over: etcd deletes an expired lease's keys
    /// up to about half a second after its TTL, and `state` never reports such a holder.
    async fn run(self, conn: Conn) -> Result<LeaderState, OpError> {
        let holder_key = conn.keys.holder(self.key.as_str());
        let mut answer = conn.client.kv_client().get(holder_key, None).await?;
        let now = SystemTime::now();
        match answer.take_kvs().pop() {
            Some(kv) => {
                let record = Record::decode(kv.key(), kv.value())?;
                Ok(if record.is_over(now) {
                    LeaderState::empty(self.key.as_str())
                } else {
                    LeaderState::occupied(self.key.as_str(), record.holder())
                })
            }
            None => Ok(LeaderState::empty(self.key.as_str())),
        }
    }

    fn outcome(output: &LeaderState) -> &'static str {
        match output.leader() {
            Some(_) => "held",
            None => "free",
        }
    }
}
