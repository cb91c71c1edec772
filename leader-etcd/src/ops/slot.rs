//! `try_acquire_slot`: a group's slots tried in one transaction — the caller's own slot
//! first, then the first free one in the request's order — after one lease grant.
//!
//! The transaction nests one level per slot and pass, so a group of more than
//! [`MAX_SLOTS_IN_ONE_TXN`] slots is walked one slot's transaction at a time instead
//! (etcd bounds the operations of a transaction and its answer's nesting).

use leader_core::kit::Call;
use std::time::SystemTime;

use etcd_client::{Txn, TxnOp};
use leader_core::{LockName, OwnerToken, SlotOutcome};

use crate::conn::Conn;
use crate::error::OpError;
use crate::lease::{Grant, OnLease};
use crate::ops::Op;
use crate::ops::acquire::{Took, held, read_take, renewed};
use crate::ops::answer::Answer;
use crate::ops::txn::LockKeys;
use crate::record::HolderRecord;
use crate::time::{later, micros, ttl_secs};

/// The largest group tried in one transaction.
pub(crate) const MAX_SLOTS_IN_ONE_TXN: usize = 16;

/// Whether `request`'s group is tried in one transaction (else slot by slot).
pub(crate) fn slot_fits_one_txn(request: &leader_core::SlotRequest<'_>) -> bool {
    request.len() <= MAX_SLOTS_IN_ONE_TXN
}

/// How many times the transaction is tried again with a token above a counter that was
/// ahead of this client's clock, before the call fails (transient).
const FENCE_ATTEMPTS: usize = 4;

/// `try_acquire_slot`'s arguments, owned.
#[derive(Debug, Clone)]
pub struct AcquireSlot {
    /// The slots, in the order to try them: slot number and key.
    pub(crate) slots: Vec<(u32, LockName)>,
    pub(crate) owner: OwnerToken,
    pub(crate) leader_id: String,
    pub(crate) lease_time: std::time::Duration,
}

impl From<leader_core::SlotRequest<'_>> for AcquireSlot {
    fn from(request: leader_core::SlotRequest<'_>) -> Self {
        AcquireSlot {
            slots: request
                .slots()
                .map(|(slot, key)| (slot, key.clone()))
                .collect(),
            owner: request.request.owner,
            leader_id: request.request.leader_id.to_owned(),
            lease_time: request.request.lease_time,
        }
    }
}

impl Call for AcquireSlot {
    type Output = SlotOutcome;

    const NAME: &'static str = "acquire_slot";

    fn outcome(output: &SlotOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for AcquireSlot {
    /// The lease granted is revoked in the background unless a slot is taken on it, also
    /// when the call is cut (see [`Grant`]).
    async fn run(self, conn: Conn) -> Result<SlotOutcome, OpError> {
        let ttl = ttl_secs(self.lease_time)?;
        let keys: Vec<LockKeys> = self
            .slots
            .iter()
            .map(|(_, key)| LockKeys::of(&conn.keys, key.as_str()))
            .collect();
        if keys.is_empty() {
            return Ok(SlotOutcome::Held(None));
        }
        let locks = keys.iter().map(|slot| slot.lock.clone()).collect();
        let sent = SystemTime::now();
        let (mut grant, granted) = conn.grant(ttl, locks).await?;
        let expires_at = later(sent, granted);
        self.attempt(&conn, &keys, &mut grant, sent, expires_at)
            .await
    }
}

impl AcquireSlot {
    async fn attempt(
        &self,
        conn: &Conn,
        keys: &[LockKeys],
        grant: &mut Grant,
        sent: SystemTime,
        expires_at: SystemTime,
    ) -> Result<SlotOutcome, OpError> {
        let mut token = conn.next_token(micros(sent));
        for _ in 0..FENCE_ATTEMPTS {
            let record = HolderRecord {
                fencing_token: token,
                acquired_at: sent,
                expires_at,
                owner: self.owner,
                leader_id: self.leader_id.clone(),
            };
            let txn = mine_first(keys, 0, self.owner, &record, grant.on());
            let answer = grant.send(txn).await?;
            let (index, took) = read(answer, keys, &record)?;
            grant.answered(matches!(took, Took::Taken(_) | Took::Mine { .. }));
            let (slot, key) = self
                .slots
                .get(index)
                .ok_or(OpError::Protocol("an answer for a slot not asked for"))?;
            match took {
                Took::Taken(record) => {
                    conn.saw_token(record.fencing_token);
                    return Ok(SlotOutcome::Acquired {
                        slot: *slot,
                        lease: record.lease(key.clone()),
                    });
                }
                Took::Mine { old_lease, record } => {
                    if old_lease != grant.on().id {
                        conn.revoke_later(old_lease);
                    }
                    let slot_keys = &keys[index];
                    return Ok(
                        match renewed(conn, slot_keys, self.owner, record, expires_at).await? {
                            Some(record) => SlotOutcome::Acquired {
                                slot: *slot,
                                lease: record.lease(key.clone()),
                            },
                            None => SlotOutcome::Held(None),
                        },
                    );
                }
                // A released slot kept for its minimum lease is held until its releaser
                // frees it, or etcd ends its lease.
                Took::Held(holder) => return Ok(SlotOutcome::Held(holder)),
                Took::Behind(stored) => {
                    conn.saw_token(stored);
                    token = conn.next_token(micros(sent));
                }
            }
        }
        Err(OpError::FenceContended)
    }
}

/// The first pass: slot `i` if the caller holds it, else the next; after the last, the
/// second pass.
fn mine_first(
    keys: &[LockKeys],
    i: usize,
    owner: OwnerToken,
    record: &HolderRecord,
    lease: &OnLease,
) -> Txn {
    let next = match i + 1 < keys.len() {
        true => mine_first(keys, i + 1, owner, record, lease),
        false => free_first(keys, 0, record, lease),
    };
    Txn::new()
        .when(keys[i].is_held_by_on(owner, lease))
        .and_then(keys[i].renew_mine(lease.id))
        .or_else([TxnOp::txn(next)])
}

/// The second pass: slot `i` if it is free, else the next; after the last, the first
/// slot's holder is read.
fn free_first(keys: &[LockKeys], i: usize, record: &HolderRecord, lease: &OnLease) -> Txn {
    let otherwise = match i + 1 < keys.len() {
        true => vec![TxnOp::txn(free_first(keys, i + 1, record, lease))],
        false => keys[0].read_holder(),
    };
    let [lock_free, holder_free] = keys[i].is_free();
    Txn::new()
        .when([lock_free, holder_free, lease.not_void()])
        .and_then([TxnOp::txn(keys[i].take(record, lease.id))])
        .or_else(otherwise)
}

/// Follows the answer down the two passes to the slot that was taken (or the holder read).
fn read(
    mut answer: Answer,
    keys: &[LockKeys],
    record: &HolderRecord,
) -> Result<(usize, Took), OpError> {
    for (i, slot) in keys.iter().enumerate() {
        if answer.succeeded {
            let old_lease = answer.put_before(0)?.map(|kv| kv.lease).unwrap_or(0);
            let stored = answer.got(2)?.ok_or_else(|| {
                OpError::corrupt(&slot.holder, "a held lock without its holder record")
            })?;
            let stored = HolderRecord::decode(&stored.key, &stored.value)?;
            return Ok((
                i,
                Took::Mine {
                    old_lease,
                    record: stored,
                },
            ));
        }
        answer = answer.txn(0)?;
    }
    for (i, slot) in keys.iter().enumerate() {
        if answer.succeeded {
            return Ok((i, read_take(answer.txn(0)?, slot, record.clone())?));
        }
        if i + 1 < keys.len() {
            answer = answer.txn(0)?;
        }
    }
    Ok((0, Took::Held(held(answer, &keys[0])?)))
}
