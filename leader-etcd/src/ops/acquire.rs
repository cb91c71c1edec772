//! `try_acquire`: one lease grant, then one transaction that takes a free lock, renews the
//! caller's own, or reads the holder.

use std::time::SystemTime;

use etcd_client::Txn;
use leader_core::kit::calls;
use leader_core::{AcquireOutcome, LeaderLease, OwnerToken};

use crate::conn::Conn;
use crate::error::OpError;
use crate::lease::Grant;
use crate::ops::Op;
use crate::ops::answer::Answer;
use crate::ops::txn::LockKeys;
use crate::record::{HolderRecord, decode_fence, is_lock_value};
use crate::time::{later, micros, ttl_secs};

/// How many times a take is tried again with a token above a counter that was ahead of
/// this client's clock, before the call fails (transient).
const FENCE_ATTEMPTS: usize = 4;

impl Op for calls::Acquire {
    /// The lease granted is revoked in the background unless the lock is taken on it,
    /// also when the call is cut (see [`Grant`]).
    async fn run(self, conn: Conn) -> Result<AcquireOutcome, OpError> {
        let request = self;
        let ttl = ttl_secs(request.lease_time)?;
        let keys = LockKeys::of(&conn.keys, request.key.as_str());
        let sent = SystemTime::now();
        let (mut grant, granted) = conn.grant(ttl, vec![keys.lock.clone()]).await?;
        let expires_at = later(sent, granted);
        attempt(&conn, &request, &keys, &mut grant, sent, expires_at).await
    }
}

/// What the one lock's transaction came to.
pub(crate) enum Took {
    /// Taken, a new acquisition with this record.
    Taken(HolderRecord),
    /// Already the caller's: moved to the new lease; the old lease and the stored record.
    Mine {
        old_lease: i64,
        record: HolderRecord,
    },
    /// Held by someone else (or released and kept for its minimum lease).
    Held(Option<LeaderLease>),
    /// Free, but the fencing counter is at or above the token tried.
    Behind(u64),
}

async fn attempt(
    conn: &Conn,
    request: &calls::Acquire,
    keys: &LockKeys,
    grant: &mut Grant,
    sent: SystemTime,
    expires_at: SystemTime,
) -> Result<AcquireOutcome, OpError> {
    let mut token = conn.next_token(micros(sent));
    for _ in 0..FENCE_ATTEMPTS {
        let record = HolderRecord {
            fencing_token: token,
            acquired_at: sent,
            expires_at,
            owner: request.owner,
            leader_id: request.leader_id.clone(),
        };
        let txn = keys.acquire(&record, grant.on());
        let answer = grant.send(txn).await?;
        let took = read(answer, keys, record)?;
        grant.answered(matches!(took, Took::Taken(_) | Took::Mine { .. }));
        match took {
            Took::Taken(record) => {
                conn.saw_token(record.fencing_token);
                return Ok(AcquireOutcome::Acquired(record.lease(request.key.clone())));
            }
            Took::Mine { old_lease, record } => {
                if old_lease != grant.on().id {
                    conn.revoke_later(old_lease);
                }
                return Ok(
                    match renewed(conn, keys, request.owner, record, expires_at).await? {
                        Some(record) => AcquireOutcome::Acquired(record.lease(request.key.clone())),
                        None => AcquireOutcome::Held(None),
                    },
                );
            }
            // A released lock kept for its minimum lease is held until its releaser frees
            // it, or etcd ends its lease: nobody's clock is compared with its record.
            Took::Held(holder) => return Ok(AcquireOutcome::Held(holder)),
            Took::Behind(stored) => {
                conn.saw_token(stored);
                token = conn.next_token(micros(sent));
            }
        }
    }
    Err(OpError::FenceContended)
}

/// Reads the answer of the transaction [`attempt`] sends, for the lock `keys` and the
/// record it tried to take it with.
pub(crate) fn read(answer: Answer, keys: &LockKeys, record: HolderRecord) -> Result<Took, OpError> {
    if answer.succeeded {
        return read_take(answer.txn(0)?, keys, record);
    }
    let mut mine = answer.txn(0)?;
    if mine.succeeded {
        let old_lease = mine.put_before(0)?.map(|kv| kv.lease).unwrap_or(0);
        let stored = mine.got(2)?.ok_or_else(|| {
            OpError::corrupt(&keys.holder, "a held lock without its holder record")
        })?;
        let stored = HolderRecord::decode(&stored.key, &stored.value)?;
        return Ok(Took::Mine {
            old_lease,
            record: stored,
        });
    }
    held(mine, keys).map(Took::Held)
}

/// Reads the answer of [`LockKeys::take`].
pub(crate) fn read_take(
    answer: Answer,
    keys: &LockKeys,
    record: HolderRecord,
) -> Result<Took, OpError> {
    if answer.succeeded {
        return Ok(Took::Taken(record));
    }
    let mut first = answer.txn(0)?;
    if first.succeeded {
        return Ok(Took::Taken(record));
    }
    let fence = first.got(0)?.ok_or(OpError::Protocol(
        "the fencing counter vanished inside a transaction",
    ))?;
    Ok(Took::Behind(decode_fence(&keys.fence, &fence.value)?))
}

/// The holder a refused acquire read ([`LockKeys::read_holder`]), if any: a lock released
/// and kept for its minimum lease (its lock key `released`) is still held.
pub(crate) fn held(answer: Answer, keys: &LockKeys) -> Result<Option<LeaderLease>, OpError> {
    Ok(held_on(answer, keys)?.map(|(holder, _)| holder))
}

/// [`held`], with the etcd lease the holder's keys hang on.
pub(crate) fn held_on(
    mut answer: Answer,
    keys: &LockKeys,
) -> Result<Option<(LeaderLease, i64)>, OpError> {
    let lock = answer.got(1)?;
    if lock
        .as_ref()
        .is_some_and(|lock| !is_lock_value(&lock.value))
    {
        return Err(OpError::corrupt(&keys.lock, "not an owner token"));
    }
    match answer.got(0)? {
        Some(holder) => {
            let record = HolderRecord::decode(&holder.key, &holder.value)?;
            Ok(Some((record.holder(), holder.lease)))
        }
        // The lock expired between the compare and the reads: impossible inside one
        // transaction, so a lock key without a holder record is not this backend's.
        None if lock.is_some() => Err(OpError::corrupt(
            &keys.holder,
            "a held lock without its holder record",
        )),
        None => Ok(None),
    }
}

/// A re-acquired lock's record, its expiry brought up to the new lease, written back
/// while the caller still holds it; `None` when it was freed in between (force-released:
/// the caller does not hold it, and is told so).
pub(crate) async fn renewed(
    conn: &Conn,
    keys: &LockKeys,
    owner: OwnerToken,
    stored: HolderRecord,
    expires_at: SystemTime,
) -> Result<Option<HolderRecord>, OpError> {
    let record = HolderRecord {
        expires_at,
        ..stored
    };
    let txn = Txn::new()
        .when([keys.is_held_by(owner)])
        .and_then(keys.rewrite_record(&record));
    let answer = Answer::read(conn.client.kv_client().txn(txn).await?);
    Ok(answer.succeeded.then_some(record))
}
