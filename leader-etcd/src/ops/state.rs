//! `state`: one linearizable read of the lock's three keys, in one transaction; and
//! [`lapsed`], what `state` and `list` ask of a holder whose recorded expiry has passed.

use std::time::SystemTime;

use etcd_client::{Txn, TxnOp};
use leader_core::LeaderState;
use leader_core::kit::calls;

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::acquire::held_on;
use crate::ops::answer::Answer;
use crate::ops::txn::LockKeys;
use crate::record::decode_fence;

impl Op for calls::State {
    /// The holder record, while its keys exist and its lease is not [`lapsed`]. The lock
    /// key and the fencing counter are read with it: a value of another shape at any of
    /// the three is an error, never a "free" lock that nobody could take.
    async fn run(self, conn: Conn) -> Result<LeaderState, OpError> {
        let keys = LockKeys::of(&conn.keys, self.key.as_str());
        let mut reads = keys.read_holder();
        reads.push(TxnOp::get(keys.fence.clone(), None));
        let txn = Txn::new().and_then(reads);
        let mut answer = Answer::read(conn.client.kv_client().txn(txn).await?);
        if let Some(fence) = answer.got(2)? {
            decode_fence(&keys.fence, &fence.value)?;
        }
        Ok(match held_on(answer, &keys)? {
            Some((holder, lease)) if !lapsed(&conn, &holder, lease).await? => {
                LeaderState::occupied(self.key.as_str(), holder)
            }
            _ => LeaderState::empty(self.key.as_str()),
        })
    }
}

/// Whether a holder whose keys still exist (on the etcd lease `lease`) is over all the
/// same: its recorded expiry has passed on this host's clock **and** etcd gives its lease
/// less than a second more (its TTL answer counts whole seconds, 0 in the last one and
/// after it, until its keys are removed up to half a second later).
///
/// A lock is held while its keys exist: they hang on the holder's etcd lease, which the
/// cluster ends on its own clock. Only in that lease's last second, which etcd cannot
/// tell apart from its first half second after it, does the record's expiry decide, so
/// that a lease is not reported past its end. A record's times are the holder's clock: a
/// holder whose clock is behind this host's looks over by its record long before its
/// lease is, and its lease's remaining TTL says it is not. So the extra round trip is
/// made only for a record that looks over, and a renewed lease is never reported free
/// whatever the hosts' clocks.
pub(crate) async fn lapsed(
    conn: &Conn,
    holder: &leader_core::LeaderLease,
    lease: i64,
) -> Result<bool, OpError> {
    if holder.expires_at > SystemTime::now() {
        return Ok(false);
    }
    match conn.client.lease_client().time_to_live(lease, None).await {
        Ok(answer) => Ok(answer.ttl() < 1),
        Err(err) if crate::error::is_lease_not_found(&err) => Ok(true),
        Err(err) => Err(err.into()),
    }
}
