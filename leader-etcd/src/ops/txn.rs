//! The transactions, as etcd requests: the pieces every call that changes a lock is built
//! from, so each rule is written once.
//!
//! - **Take** (a free lock): put the lock key (the owner token) and the holder key (the
//!   record) on the new etcd lease, and the fencing counter to the new token, but only if
//!   the token is above the stored counter: etcd compares values byte-wise, and the
//!   counter's 20 zero-padded digits compare as numbers (a second compare keeps values
//!   of another shape that sort below every token from being taken for a counter). A lock whose counter does not
//!   exist yet takes any token; one whose counter is at or above the token takes
//!   nothing and reads the counter, so the caller tries again above it.
//! - **Mine** (a lock whose owner token is the caller's): move both keys to the new lease,
//!   values kept, and read the record.
//! - **Ownership**: every change to a held lock compares the lock key's value with the
//!   caller's owner token, so only the owner extends or releases it.
//! - **Not void**: every transaction that puts a lock on a lease holds only while that
//!   lease is not void ([`OnLease::not_void`]), so a transaction that lands after its call
//!   was cut and its lease voided puts nothing on it (see [`lease`](crate::lease)).

use etcd_client::{Compare, CompareOp, DeleteOptions, PutOptions, Txn, TxnOp};
use leader_core::OwnerToken;

use crate::keys::Keys;
use crate::lease::OnLease;
use crate::record::{HolderRecord, RELEASED, fence_value, owner_value};

/// Below every counter this backend writes (20 digits sort above 19 zeros byte-wise), and
/// above every value that starts with a byte below `0` or is empty: a value of another
/// shape there fails the take's compare, and is read (and refused) instead of replaced.
const FENCE_FLOOR: &[u8] = b"0000000000000000000";

/// The keys of one lock.
pub(crate) struct LockKeys {
    pub(crate) lock: Vec<u8>,
    pub(crate) holder: Vec<u8>,
    pub(crate) fence: Vec<u8>,
}

impl LockKeys {
    /// The keys of `name` in `keys`' layout.
    pub(crate) fn of(keys: &Keys, name: &str) -> Self {
        LockKeys {
            lock: keys.lock(name),
            holder: keys.holder(name),
            fence: keys.fence(name),
        }
    }

    /// The compares that hold while nobody holds the lock: neither its lock key nor its
    /// holder key exists (this backend writes and deletes them together, so a holder key
    /// alone is someone else's, and must be read and refused, never overwritten).
    pub(crate) fn is_free(&self) -> [Compare; 2] {
        [
            Compare::create_revision(self.lock.clone(), CompareOp::Equal, 0),
            Compare::create_revision(self.holder.clone(), CompareOp::Equal, 0),
        ]
    }

    /// The compare that holds while `owner` holds the lock.
    pub(crate) fn is_held_by(&self, owner: OwnerToken) -> Compare {
        Compare::value(self.lock.clone(), CompareOp::Equal, owner_value(owner))
    }

    /// The compares that hold while `owner` holds the lock and `lease` may take it: what
    /// every change that moves the caller's lock onto `lease` holds under.
    pub(crate) fn is_held_by_on(&self, owner: OwnerToken, lease: &OnLease) -> [Compare; 2] {
        [self.is_held_by(owner), lease.not_void()]
    }

    /// Takes a free lock for `record` on the etcd lease `lease`, if the record's token is
    /// above the lock's fencing counter (see the module docs). In the answer: `succeeded`,
    /// or a nested transaction (op 0) that `succeeded` (first token), or whose op 0 read
    /// the counter. The caller's transaction compares [`is_free`](Self::is_free) and
    /// `lease`'s [`not_void`](OnLease::not_void).
    pub(crate) fn take(&self, record: &HolderRecord, lease: i64) -> Txn {
        let token = fence_value(record.fencing_token);
        Txn::new()
            .when([
                Compare::value(self.fence.clone(), CompareOp::Greater, FENCE_FLOOR),
                Compare::value(self.fence.clone(), CompareOp::Less, token),
            ])
            .and_then(self.take_ops(record, lease))
            .or_else([TxnOp::txn(
                Txn::new()
                    .when([Compare::create_revision(
                        self.fence.clone(),
                        CompareOp::Equal,
                        0,
                    )])
                    .and_then(self.take_ops(record, lease))
                    .or_else([TxnOp::get(self.fence.clone(), None)]),
            )])
    }

    /// The acquire: [`take`](Self::take) a free lock; or [`renew_mine`](Self::renew_mine)
    /// the caller's own (a retried acquire, `record.owner`'s); or
    /// [`read_holder`](Self::read_holder). Op 0 of the answer is the nested transaction of
    /// the branch that ran. Nothing is put on a void `lease`: the holder is read.
    pub(crate) fn acquire(&self, record: &HolderRecord, lease: &OnLease) -> Txn {
        let [lock_free, holder_free] = self.is_free();
        Txn::new()
            .when([lock_free, holder_free, lease.not_void()])
            .and_then([TxnOp::txn(self.take(record, lease.id))])
            .or_else([TxnOp::txn(
                Txn::new()
                    .when(self.is_held_by_on(record.owner, lease))
                    .and_then(self.renew_mine(lease.id))
                    .or_else(self.read_holder()),
            )])
    }

    /// The release of a lock no minimum lease keeps: [`free`](Self::free) while `owner`
    /// holds it (`succeeded` says it did).
    pub(crate) fn release(&self, owner: OwnerToken) -> Txn {
        Txn::new()
            .when([self.is_held_by(owner)])
            .and_then(self.free())
    }

    fn take_ops(&self, record: &HolderRecord, lease: i64) -> Vec<TxnOp> {
        let on_lease = Some(PutOptions::new().with_lease(lease));
        vec![
            TxnOp::put(
                self.lock.clone(),
                owner_value(record.owner),
                on_lease.clone(),
            ),
            TxnOp::put(self.holder.clone(), record.encode(), on_lease),
            TxnOp::put(self.fence.clone(), fence_value(record.fencing_token), None),
        ]
    }

    /// For a lock the caller already holds: both keys onto `lease`, values kept; then
    /// reads the record (op 2) and the old lease is in op 0's previous value.
    pub(crate) fn renew_mine(&self, lease: i64) -> Vec<TxnOp> {
        let moved = PutOptions::new()
            .with_lease(lease)
            .with_ignore_value()
            .with_prev_key();
        vec![
            TxnOp::put(self.lock.clone(), Vec::new(), Some(moved)),
            TxnOp::put(
                self.holder.clone(),
                Vec::new(),
                Some(PutOptions::new().with_lease(lease).with_ignore_value()),
            ),
            TxnOp::get(self.holder.clone(), None),
        ]
    }

    /// Reads the holder (op 0) and the lock key (op 1): what a refused acquire reports.
    pub(crate) fn read_holder(&self) -> Vec<TxnOp> {
        vec![
            TxnOp::get(self.holder.clone(), None),
            TxnOp::get(self.lock.clone(), None),
        ]
    }

    /// Both keys onto `lease` with the record rewritten: an extend, or a release that
    /// keeps the lock for its minimum lease. The old lease is in op 0's previous value.
    pub(crate) fn rewrite(&self, record: &HolderRecord, lease: i64) -> Vec<TxnOp> {
        vec![
            TxnOp::put(
                self.lock.clone(),
                owner_value(record.owner),
                Some(PutOptions::new().with_lease(lease).with_prev_key()),
            ),
            TxnOp::put(
                self.holder.clone(),
                record.encode(),
                Some(PutOptions::new().with_lease(lease)),
            ),
        ]
    }

    /// A released lock kept for its minimum lease: both keys onto `lease`, the lock key's
    /// value [`RELEASED`] (no owner's any more), the record rewritten. The old lease is in
    /// op 0's previous value.
    pub(crate) fn keep(&self, record: &HolderRecord, lease: i64) -> Vec<TxnOp> {
        vec![
            TxnOp::put(
                self.lock.clone(),
                RELEASED.to_vec(),
                Some(PutOptions::new().with_lease(lease).with_prev_key()),
            ),
            TxnOp::put(
                self.holder.clone(),
                record.encode(),
                Some(PutOptions::new().with_lease(lease)),
            ),
        ]
    }

    /// The record rewritten on the lease it is on: after a re-acquire moved the keys.
    pub(crate) fn rewrite_record(&self, record: &HolderRecord) -> Vec<TxnOp> {
        vec![TxnOp::put(
            self.holder.clone(),
            record.encode(),
            Some(PutOptions::new().with_ignore_lease()),
        )]
    }

    /// Deletes both keys, the deleted values in the answer (the lock key in op 0, the
    /// holder in op 1). The fencing counter stays.
    pub(crate) fn free(&self) -> Vec<TxnOp> {
        vec![
            TxnOp::delete(
                self.lock.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            ),
            TxnOp::delete(
                self.holder.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_sorts_above_the_floor_and_foreign_values_below_it() {
        for token in [0, 1, 1_796_197_387_525_989, u64::MAX] {
            assert!(fence_value(token).as_slice() > FENCE_FLOOR, "{token}");
        }
        for foreign in [&b""[..], b"\"quoted\"", b" 42", b"-1", b"000"] {
            assert!(foreign < FENCE_FLOOR, "{foreign:?}");
        }
    }
}
