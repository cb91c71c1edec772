//! `extend`: a new etcd lease for the new lease time, then one transaction that moves the
//! caller's lock onto it, if the caller still holds it.
//!
//! A new lease rather than a keep-alive of the old one: a keep-alive renews for the TTL
//! the lease was granted with, and a renewal may ask for another lease time. The old
//! lease, with no key left on it, is revoked in the background; so is the new one when the
//! lock did not move onto it, also when the call is cut before the transaction answered
//! (voided first: the lock may have moved onto it, see [`Grant`](crate::lease::Grant)).

use std::time::SystemTime;

use etcd_client::Txn;
use leader_core::ExtendOutcome;
use leader_core::kit::calls;

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::txn::LockKeys;
use crate::record::HolderRecord;
use crate::time::{later, ttl_secs};

impl Op for calls::Extend {
    async fn run(self, conn: Conn) -> Result<ExtendOutcome, OpError> {
        let ttl = ttl_secs(self.lease_time)?;
        let keys = LockKeys::of(&conn.keys, self.lease.key.as_str());
        let sent = SystemTime::now();
        let (mut grant, granted) = conn.grant(ttl, vec![keys.lock.clone()]).await?;
        let expires_at = later(sent, granted);
        let record = HolderRecord {
            fencing_token: self.lease.fencing_token,
            acquired_at: self.lease.acquired_at,
            expires_at,
            owner: self.lease.owner,
            leader_id: self.lease.leader_id.clone(),
        };
        let txn = Txn::new()
            .when(keys.is_held_by_on(self.lease.owner, grant.on()))
            .and_then(keys.rewrite(&record, grant.on().id));
        let mut answer = grant.send(txn).await?;
        grant.answered(answer.succeeded);
        if !answer.succeeded {
            return Ok(ExtendOutcome::NotHeld);
        }
        if let Some(old) = answer.put_before(0)?
            && old.lease != grant.on().id
        {
            conn.revoke_later(old.lease);
        }
        Ok(ExtendOutcome::Extended { expires_at })
    }
}
