//! The operator's calls: listing the held locks under a prefix, and freeing a lock whoever
//! holds it. Plain functions on a connection, like `ops`.

use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage, ListRequest, LockName};
use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::{BACKEND, OpFailure};
use crate::ops::{Holder, LIVE, live_holder};
use crate::time::HostClock;

/// One page of the live rows whose name starts with the prefix, in name order, after the
/// cursor's name. The primary key's order serves the range; `limit + 1` rows tell whether
/// another page follows. The cursor is the last name shown, tagged with this backend and
/// the prefix, so a cursor of another listing is refused.
pub(crate) fn list(
    conn: &Connection,
    clock: &HostClock,
    request: &ListRequest,
) -> Result<ListPage, OpFailure> {
    let after = ListCursor::resume(BACKEND, request)?;
    let now = clock.now()?;
    let limit = i64::try_from(request.page_size().saturating_add(1)).unwrap_or(i64::MAX);
    let mut statement = conn.prepare_cached(&format!(
        "SELECT owner, leader_id, fencing_token, acquired_us, expires_us, name FROM leader_locks
         WHERE name >= ?1 AND substr(name, 1, length(?1)) = ?1
           AND (?4 IS NULL OR name > ?4)
           AND {LIVE}
         ORDER BY name LIMIT ?5"
    ))?;
    let mut rows = statement.query(params![request.prefix, clock.boot(), now.at, after, limit])?;
    let mut locks = Vec::new();
    let mut next = None;
    while let Some(row) = rows.next()? {
        let name: String = row.get(5)?;
        if locks.len() == request.page_size() {
            next = locks
                .last()
                .map(|last: &LeaderState| ListCursor::tagged(BACKEND, request, last.lock_name()));
            break;
        }
        let holder = Holder::read(row)?;
        locks.push(LeaderState::occupied(name, holder.snapshot(&now)?));
    }
    Ok(ListPage::new(locks, next))
}

/// Frees `key` whoever holds it (a row kept for a minimum lease included). The fencing
/// counter is in its own table and stays.
pub(crate) fn force_release(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
) -> Result<ForceReleaseOutcome, OpFailure> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = clock.now()?;
    let outcome = match live_holder(&tx, key, clock, &now)? {
        Some(holder) => {
            tx.execute(
                "UPDATE leader_locks SET owner = NULL, expires_us = ?2 WHERE name = ?1",
                params![key.as_str(), now.at],
            )?;
            ForceReleaseOutcome::Released(holder.snapshot(&now)?)
        }
        None => ForceReleaseOutcome::NotHeld,
    };
    tx.commit()?;
    Ok(outcome)
}
