//! The background side of [`Grant`](crate::lease::Grant): what [`Settle`] decided for a
//! lease, carried out on the backend's runtime — voiding it first when a cut call may
//! still put a lock on it, revoking it now or when a kept lock's minimum lease ends —
//! each call tried again as [`Tries`] says while the cluster does not answer. Nothing
//! waits for these tasks; a lease whose revoke never succeeds ends with its TTL.

use std::time::Instant;

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use tokio::runtime::Handle;

use crate::error::OpError;
use crate::lease::{OnLease, Settle, Tried, Tries};

/// Carries out `settle` for `lease`, on which the cut call may have put `locks`; the
/// lease ends on its own by `ends` at the latest.
pub(crate) async fn settle(
    client: Client,
    lease: OnLease,
    locks: Vec<Vec<u8>>,
    settle: Settle,
    ends: Instant,
) {
    match settle {
        Settle::Keep => {}
        Settle::Revoke { granted } => revoke(&client, lease.id, granted, ends).await,
        Settle::RevokeAt(at) => {
            tokio::time::sleep_until(at.into()).await;
            revoke(&client, lease.id, true, ends).await;
        }
        Settle::VoidThenRevoke { free_at } => match void(&client, &lease, &locks, ends).await {
            Voided::Void => revoke(&client, lease.id, true, ends).await,
            Voided::InUse => {
                if let Some(at) = free_at {
                    tokio::time::sleep_until(at.into()).await;
                    revoke(&client, lease.id, true, ends).await;
                }
            }
            Voided::Gone => {}
        },
    }
}

/// Revokes the etcd lease `id` in the background, with the tries of a lease whose grant
/// answered: one its lock keys no longer hang on (an extend moved them, a release deleted
/// them), ending on its own by `ends` at the latest.
pub(crate) fn revoke_later(client: &Client, runtime: &Handle, id: i64, ends: Instant) {
    if id == 0 {
        return;
    }
    let client = client.clone();
    drop(runtime.spawn(async move { revoke(&client, id, true, ends).await }));
}

/// Revokes the etcd lease `id` at `at` in the background: the lease of a read/write hold
/// released and kept until its minimum lease ends then; it ends on its own by `ends` at
/// the latest.
pub(crate) fn revoke_at(client: &Client, runtime: &Handle, id: i64, at: Instant, ends: Instant) {
    if id == 0 {
        return;
    }
    let client = client.clone();
    drop(runtime.spawn(async move {
        tokio::time::sleep_until(at.into()).await;
        revoke(&client, id, true, ends).await;
    }));
}

/// Revokes the lease `id`, trying again as [`Tries`] says.
async fn revoke(client: &Client, id: i64, granted: bool, ends: Instant) {
    let mut tries = Tries::new(ends, granted);
    loop {
        let tried = match client.lease_client().revoke(id).await {
            Ok(_) => Tried::Done,
            Err(err) => tried(&err),
        };
        let Some(pause) = tries.after(tried, Instant::now()) else {
            if matches!(tried, Tried::Failed { .. }) {
                tracing::debug!(
                    lease = id,
                    "etcd lease revoke given up; it ends with its TTL"
                );
            }
            return;
        };
        tokio::time::sleep(pause).await;
    }
}

/// What voiding a lease came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Voided {
    /// Void: no lock is on it, and no transaction can put one on it any more.
    Void,
    /// One of the call's locks is on it: it is in use.
    InUse,
    /// The lease is gone (it ended), or the cluster never answered while it could exist.
    Gone,
}

/// Puts the void key on `lease` while none of `locks` is on it (one transaction).
async fn void(client: &Client, lease: &OnLease, locks: &[Vec<u8>], ends: Instant) -> Voided {
    let txn = Txn::new()
        .when(
            locks
                .iter()
                .map(|lock| Compare::lease(lock.clone(), CompareOp::NotEqual, lease.id))
                .collect::<Vec<_>>(),
        )
        .and_then([TxnOp::put(
            lease.void.clone(),
            Vec::new(),
            Some(PutOptions::new().with_lease(lease.id)),
        )]);
    let mut tries = Tries::new(ends, true);
    loop {
        let tried = match client.kv_client().txn(txn.clone()).await {
            Ok(answer) if answer.succeeded() => return Voided::Void,
            Ok(_) => return Voided::InUse,
            Err(err) => tried(&err),
        };
        let Some(pause) = tries.after(tried, Instant::now()) else {
            if matches!(tried, Tried::Failed { .. }) {
                tracing::debug!(
                    lease = lease.id,
                    "etcd lease void given up; it ends with its TTL"
                );
            }
            return Voided::Gone;
        };
        tokio::time::sleep(pause).await;
    }
}

/// A failed call's answer, for [`Tries`].
fn tried(err: &etcd_client::Error) -> Tried {
    if crate::error::is_lease_not_found(err) {
        return Tried::NotFound;
    }
    let kind = OpError::kind_of(err);
    Tried::Failed {
        transient: kind == leader_core::BackendErrorKind::Transient,
    }
}
