//! `release`: one transaction that frees the caller's lock, or, while its minimum lease
//! is still ahead, keeps it until then on a lease of its own and marks it released.
//!
//! etcd leases count whole seconds, so the lease a kept lock hangs on is rounded up and
//! would free it up to a second (and etcd's half-second expiry sweep) after its minimum
//! lease. The releaser frees it on time instead: it revokes that lease when the minimum
//! lease ends, by a timer on its own clock (the clock that measured the lease), in the
//! background. The lease's own end is the backstop when the releaser is gone by then.

use std::time::{Duration, Instant, SystemTime};

use etcd_client::Txn;
use leader_core::Lease;
use leader_core::kit::Released;
use leader_core::kit::calls;

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::answer::Answer;
use crate::ops::txn::LockKeys;
use crate::record::HolderRecord;
use crate::time::ttl_secs;

impl Op for calls::Release {
    async fn run(self, conn: Conn) -> Result<Released, OpError> {
        let keys = LockKeys::of(&conn.keys, self.lease.key.as_str());
        let keep_until = self.lease.acquired_at.checked_add(self.min_lease_time);
        let now = SystemTime::now();
        // A minimum lease that no time can reach keeps the lock until its lease ends:
        // nothing to change but the owner's hold on it (never stretched past its lease).
        let keep_until = keep_until
            .unwrap_or(self.lease.expires_at)
            .min(self.lease.expires_at);
        match keep_until.duration_since(now) {
            Ok(left) if !left.is_zero() => keep(&conn, &keys, &self.lease, keep_until, left).await,
            _ => free(&conn, &keys, &self.lease).await,
        }
    }
}

/// Deletes both keys if the caller holds the lock; the lease they hung on is revoked.
async fn free(conn: &Conn, keys: &LockKeys, lease: &Lease) -> Result<Released, OpError> {
    let txn = keys.release(lease.owner);
    let mut answer = Answer::read(conn.client.kv_client().txn(txn).await?);
    if !answer.succeeded {
        return Ok(Released::NotHeld);
    }
    if let Some(lock) = answer.deleted(0)? {
        conn.revoke_later(lock.lease);
    }
    Ok(Released::Freed)
}

/// Keeps the lock until `until` (`left` from now) on a lease of that length, the record
/// saying so, and the lock key no longer the owner's: the owner can neither renew nor
/// re-acquire a lock it released. That lease is revoked when `left` has passed (the lock
/// is then free), or at once if the lock did not move onto it.
async fn keep(
    conn: &Conn,
    keys: &LockKeys,
    lease: &Lease,
    until: SystemTime,
    left: Duration,
) -> Result<Released, OpError> {
    let ttl = ttl_secs(left)?;
    let free_at = Instant::now().checked_add(left);
    let (mut grant, _) = conn.grant(ttl, vec![keys.lock.clone()]).await?;
    if let Some(at) = free_at {
        grant.free_at(at);
    }
    let record = HolderRecord {
        fencing_token: lease.fencing_token,
        acquired_at: lease.acquired_at,
        expires_at: until,
        owner: lease.owner,
        leader_id: lease.leader_id.clone(),
    };
    let txn = Txn::new()
        .when(keys.is_held_by_on(lease.owner, grant.on()))
        .and_then(keys.keep(&record, grant.on().id));
    let mut answer = grant.send(txn).await?;
    grant.answered(answer.succeeded);
    if !answer.succeeded {
        return Ok(Released::NotHeld);
    }
    if let Some(old) = answer.put_before(0)? {
        conn.revoke_later(old.lease);
    }
    Ok(Released::Kept)
}
