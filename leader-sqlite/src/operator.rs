//! The operator's calls: listing the held locks under a prefix, and freeing a lock whoever
//! holds it (or only while its holder has a given fencing token). Plain functions on a
//! connection, like `ops`.

use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage, ListRequest, LockName};
use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::OpFailure;
use crate::ops::{Holder, live_holder};
use crate::time::now_micros;

/// One page of the live rows whose name starts with the prefix, in name order, after the
/// cursor's name. The primary key's order serves the range; `limit + 1` rows tell whether
/// another page follows.
pub(crate) fn list(conn: &Connection, request: &ListRequest) -> Result<ListPage, OpFailure> {
    let now = now_micros()?;
    let after = request.cursor.as_ref().map(ListCursor::as_str);
    let limit = i64::try_from(request.page_size().saturating_add(1)).unwrap_or(i64::MAX);
    let mut statement = conn.prepare_cached(
        "SELECT owner, leader_id, fencing_token, acquired_at, expires_at, name FROM leader_locks
         WHERE name >= ?1 AND substr(name, 1, length(?1)) = ?1
           AND (?2 IS NULL OR name > ?2)
           AND owner IS NOT NULL AND expires_at > ?3
         ORDER BY name LIMIT ?4",
    )?;
    let mut rows = statement.query(params![request.prefix, after, now, limit])?;
    let mut locks = Vec::new();
    let mut next = None;
    while let Some(row) = rows.next()? {
        let name: String = row.get(5)?;
        if locks.len() == request.page_size() {
            next = locks
                .last()
                .map(|last: &LeaderState| ListCursor::new(last.lock_name()));
            break;
        }
        let holder = Holder::read(row)?;
        locks.push(LeaderState::occupied(name, holder.snapshot()?));
    }
    Ok(ListPage::new(locks, next))
}

/// Frees `key` whoever holds it (a row kept for a minimum lease included), or, with `only`,
/// only while its holder has that fencing token; one IMMEDIATE transaction reads and frees,
/// so no other writer comes between. The fencing counter is in its own table and stays.
pub(crate) fn force_release(
    conn: &mut Connection,
    key: &LockName,
    only: Option<u64>,
) -> Result<ForceReleaseOutcome, OpFailure> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_micros()?;
    let holder = match live_holder(&tx, key, now)? {
        Some(holder) => Some(holder.snapshot()?),
        None => None,
    };
    let freed = holder
        .as_ref()
        .is_some_and(|holder| only.is_none_or(|token| token == holder.fencing_token));
    if freed {
        tx.execute(
            "UPDATE leader_locks SET owner = NULL, expires_at = ?2 WHERE name = ?1",
            params![key.as_str(), now],
        )?;
    }
    tx.commit()?;
    Ok(ForceReleaseOutcome::conditional(holder, freed))
}
