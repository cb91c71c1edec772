//! `state`: one linearizable read of the lock's three keys, in one transaction.

use std::time::SystemTime;

use etcd_client::{Txn, TxnOp};
use leader_core::{LeaderState, LockName};

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::acquire::{Took, held};
use crate::ops::answer::Answer;
use crate::ops::txn::LockKeys;
use crate::record::decode_fence;

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
    /// The lock key and the fencing counter are read with it: a value of another shape at
    /// any of the three is an error, never a "free" lock that nobody could take.
    async fn run(self, conn: Conn) -> Result<LeaderState, OpError> {
        let keys = LockKeys::of(&conn.keys, self.key.as_str());
        let mut reads = keys.read_holder();
        reads.push(TxnOp::get(keys.fence.clone(), None));
        let txn = Txn::new().and_then(reads);
        let mut answer = Answer::read(conn.client.kv_client().txn(txn).await?);
        if let Some(fence) = answer.got(2)? {
            decode_fence(&keys.fence, &fence.value)?;
        }
        let now = SystemTime::now();
        let holder = match held(answer, &keys)? {
            Took::Held(holder) => holder,
            // A released lock kept for its minimum lease: held until the record says.
            Took::Kept { holder, .. } => Some(holder),
            Took::Taken(_) | Took::Mine { .. } | Took::Behind(_) => None,
        };
        Ok(match holder {
            Some(holder) if holder.expires_at > now => {
                LeaderState::occupied(self.key.as_str(), holder)
            }
            _ => LeaderState::empty(self.key.as_str()),
        })
    }

    fn outcome(output: &LeaderState) -> &'static str {
        match output.leader() {
            Some(_) => "held",
            None => "free",
        }
    }
}
