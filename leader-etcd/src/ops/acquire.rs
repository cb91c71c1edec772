//! `try_acquire`: one lease grant, then one transaction that takes a free lock, renews the
//! caller's own, or reads the holder.

use std::time::SystemTime;

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use leader_core::{AcquireOutcome, LeaderLease, OwnerToken};

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::answer::Answer;
use crate::ops::txn::LockKeys;
use crate::record::{RELEASED, Record, decode_fence, is_lock_value};
use crate::time::{later, micros, ttl_secs};

/// `try_acquire`'s arguments, owned: the one type every backend moves to its worker.
pub(crate) use leader_core::__private::OwnedAcquire as Acquire;

/// How many times a take is tried again with a token above a counter that was ahead of
/// this client's clock, before the call fails (transient).
const FENCE_ATTEMPTS: usize = 4;

impl Op for Acquire {
    type Output = AcquireOutcome;
    const NAME: &'static str = "acquire";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    async fn run(self, conn: Conn) -> Result<AcquireOutcome, OpError> {
        let ttl = ttl_secs(self.lease_time)?;
        let sent = SystemTime::now();
        let (lease, granted) = conn.grant(ttl).await?;
        let expires_at = later(sent, granted);
        let result = attempt(&conn, &self, lease, sent, expires_at).await;
        if !matches!(result, Ok(AcquireOutcome::Acquired(_))) {
            conn.revoke_later(lease);
        }
        result
    }

    fn outcome(output: &AcquireOutcome) -> &'static str {
        output.as_str()
    }
}

/// What the one lock's transaction came to.
pub(crate) enum Took {
    /// Taken, a new acquisition with this record.
    Taken(Record),
    /// Already the caller's: moved to the new lease; the old lease and the stored record.
    Mine { old_lease: i64, record: Record },
    /// Held by someone else.
    Held(Option<LeaderLease>),
    /// Released by its holder and kept for its minimum lease: the lock key's revision and
    /// the etcd lease it is kept on.
    Kept {
        holder: LeaderLease,
        revision: i64,
        lease: i64,
    },
    /// Free, but the fencing counter is at or above the token tried.
    Behind(u64),
}

async fn attempt(
    conn: &Conn,
    request: &Acquire,
    lease: i64,
    sent: SystemTime,
    expires_at: SystemTime,
) -> Result<AcquireOutcome, OpError> {
    let keys = LockKeys::of(&conn.keys, request.key.as_str());
    let mut token = conn.next_token(micros(sent));
    for _ in 0..FENCE_ATTEMPTS {
        let record = Record {
            fencing_token: token,
            acquired_at: sent,
            expires_at,
            owner: request.owner,
            leader_id: request.leader_id.clone(),
        };
        let txn = keys.acquire(&record, lease);
        let answer = Answer::read(conn.client.kv_client().txn(txn).await?);
        match read(answer, &keys, record.clone())? {
            Took::Taken(record) => {
                conn.saw_token(record.fencing_token);
                return Ok(AcquireOutcome::Acquired(record.lease(request.key.clone())));
            }
            Took::Mine { old_lease, record } => {
                if old_lease != lease {
                    conn.revoke_later(old_lease);
                }
                return Ok(
                    match renewed(conn, &keys, request.owner, record, expires_at).await? {
                        Some(record) => AcquireOutcome::Acquired(record.lease(request.key.clone())),
                        None => AcquireOutcome::Held(None),
                    },
                );
            }
            Took::Held(holder) => return Ok(AcquireOutcome::Held(holder)),
            Took::Kept {
                holder,
                revision,
                lease: kept,
            } => {
                if holder.expires_at > SystemTime::now() {
                    return Ok(AcquireOutcome::Held(Some(holder)));
                }
                match take_over(conn, &keys, revision, record, lease).await? {
                    Some(Took::Taken(record)) => {
                        conn.saw_token(record.fencing_token);
                        conn.revoke_later(kept);
                        return Ok(AcquireOutcome::Acquired(record.lease(request.key.clone())));
                    }
                    Some(Took::Behind(stored)) => {
                        conn.saw_token(stored);
                        token = conn.next_token(micros(sent));
                    }
                    // Changed since it was read: look again.
                    _ => {}
                }
            }
            Took::Behind(stored) => {
                conn.saw_token(stored);
                token = conn.next_token(micros(sent));
            }
        }
    }
    Err(OpError::FenceContended)
}

/// Takes a released lock whose minimum lease is over (on this host's clock) while its lock
/// key is still at `revision`: `None` when it changed in between.
///
/// etcd's leases count whole seconds, so the lease a released lock is kept on may outlast
/// its minimum lease by up to a second; the holder record says when the minimum lease
/// ends, and the next acquirer frees it then. Nobody acts on a released lock, so this
/// decides no holder's lease, only when the releaser's courtesy ends: a job released
/// with "keep until the cycle ends" can run again in the next cycle.
async fn take_over(
    conn: &Conn,
    keys: &LockKeys,
    revision: i64,
    record: Record,
    lease: i64,
) -> Result<Option<Took>, OpError> {
    let txn = Txn::new()
        .when([Compare::mod_revision(
            keys.lock.clone(),
            CompareOp::Equal,
            revision,
        )])
        .and_then([TxnOp::txn(keys.take(&record, lease))]);
    let answer = Answer::read(conn.client.kv_client().txn(txn).await?);
    if !answer.succeeded {
        return Ok(None);
    }
    read_take(answer.txn(0)?, keys, record).map(Some)
}

/// Reads the answer of the transaction [`attempt`] sends, for the lock `keys` and the
/// record it tried to take it with.
pub(crate) fn read(answer: Answer, keys: &LockKeys, record: Record) -> Result<Took, OpError> {
    if answer.succeeded {
        return read_take(answer.txn(0)?, keys, record);
    }
    let mut mine = answer.txn(0)?;
    if mine.succeeded {
        let old_lease = mine.put_before(0)?.map(|kv| kv.lease).unwrap_or(0);
        let stored = mine.got(2)?.ok_or_else(|| {
            OpError::corrupt(&keys.holder, "a held lock without its holder record")
        })?;
        let stored = Record::decode(&stored.key, &stored.value)?;
        return Ok(Took::Mine {
            old_lease,
            record: stored,
        });
    }
    held(mine, keys)
}

/// Reads the answer of [`LockKeys::take`].
pub(crate) fn read_take(answer: Answer, keys: &LockKeys, record: Record) -> Result<Took, OpError> {
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

/// The holder a refused acquire read ([`LockKeys::read_holder`]): [`Took::Held`], or
/// [`Took::Kept`] for a lock released and kept for its minimum lease.
pub(crate) fn held(mut answer: Answer, keys: &LockKeys) -> Result<Took, OpError> {
    let lock = answer.got(1)?;
    if lock
        .as_ref()
        .is_some_and(|lock| !is_lock_value(&lock.value))
    {
        return Err(OpError::corrupt(&keys.lock, "not an owner token"));
    }
    match answer.got(0)? {
        Some(holder) => {
            let holder = Record::decode(&holder.key, &holder.value)?.holder();
            Ok(match lock {
                Some(lock) if lock.value == RELEASED => Took::Kept {
                    holder,
                    revision: lock.mod_revision,
                    lease: lock.lease,
                },
                _ => Took::Held(Some(holder)),
            })
        }
        // The lock expired between the compare and the reads: impossible inside one
        // transaction, so a lock key without a holder record is not this backend's.
        None if lock.is_some() => Err(OpError::corrupt(
            &keys.holder,
            "a held lock without its holder record",
        )),
        None => Ok(Took::Held(None)),
    }
}

/// A re-acquired lock's record, its expiry brought up to the new lease, written back
/// while the caller still holds it; `None` when it was freed in between (force-released:
/// the caller does not hold it, and is told so).
pub(crate) async fn renewed(
    conn: &Conn,
    keys: &LockKeys,
    owner: OwnerToken,
    stored: Record,
    expires_at: SystemTime,
) -> Result<Option<Record>, OpError> {
    let record = Record {
        expires_at,
        ..stored
    };
    let txn = Txn::new()
        .when([keys.is_held_by(owner)])
        .and_then(keys.rewrite_record(&record));
    let answer = Answer::read(conn.client.kv_client().txn(txn).await?);
    Ok(answer.succeeded.then_some(record))
}
