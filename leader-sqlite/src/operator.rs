//! The operator's calls: listing the held locks under a prefix, and freeing a lock whoever
//! holds it. Plain functions on a connection, like `ops`.

use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage, ListRequest, LockName};
use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::OpFailure;
use crate::ops::{Holder, live_holder};
use crate::time::now_micros;

/// The statement of [`list`]: `?1` prefix, `?2` the name to list after (or `NULL`), `?3`
/// now, `?4` how many rows, `?5` the prefix's upper bound (`ListRequest::prefix_end`).
/// The names under the prefix are exactly those in `[?1, ?5)` (SQLite compares text
/// byte-wise, and UTF-8's byte order is code point order), one range of the primary key:
/// a listing reads the rows under its prefix, not every row that sorts after it.
const LIST: &str =
    "SELECT owner, leader_id, fencing_token, acquired_at, expires_at, name FROM leader_locks
     WHERE name >= ?1 AND name < ?5
       AND (?2 IS NULL OR name > ?2)
       AND owner IS NOT NULL AND expires_at > ?3
     ORDER BY name LIMIT ?4";

/// [`LIST`] for a prefix without an upper bound (the empty prefix), without `?5`.
const LIST_UNBOUNDED: &str =
    "SELECT owner, leader_id, fencing_token, acquired_at, expires_at, name FROM leader_locks
     WHERE name >= ?1 AND substr(name, 1, length(?1)) = ?1
       AND (?2 IS NULL OR name > ?2)
       AND owner IS NOT NULL AND expires_at > ?3
     ORDER BY name LIMIT ?4";

/// One page of the live rows whose name starts with the prefix, in name order, after the
/// cursor's name. The primary key's order serves the range (see [`LIST`]); `limit + 1`
/// rows tell whether another page follows.
pub(crate) fn list(conn: &Connection, request: &ListRequest) -> Result<ListPage, OpFailure> {
    let now = now_micros()?;
    let after = request.cursor.as_ref().map(ListCursor::as_str);
    let limit = i64::try_from(request.page_size().saturating_add(1)).unwrap_or(i64::MAX);
    let end = request.prefix_end();
    let mut statement = conn.prepare_cached(if end.is_some() { LIST } else { LIST_UNBOUNDED })?;
    let mut rows = match &end {
        Some(end) => statement.query(params![request.prefix, after, now, limit, end])?,
        None => statement.query(params![request.prefix, after, now, limit])?,
    };
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

/// Frees `key` whoever holds it (a row kept for a minimum lease included). The fencing
/// counter is in its own table and stays.
pub(crate) fn force_release(
    conn: &mut Connection,
    key: &LockName,
) -> Result<ForceReleaseOutcome, OpFailure> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_micros()?;
    let outcome = match live_holder(&tx, key, now)? {
        Some(holder) => {
            tx.execute(
                "UPDATE leader_locks SET owner = NULL, expires_at = ?2 WHERE name = ?1",
                params![key.as_str(), now],
            )?;
            ForceReleaseOutcome::Released(holder.snapshot()?)
        }
        None => ForceReleaseOutcome::NotHeld,
    };
    tx.commit()?;
    Ok(outcome)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use rusqlite::StatementStatus;

    use super::*;
    use crate::config::SqliteConfig;

    /// A ranked campaign's survey (`<name>#rank:`) reads the rows of its prefix, not every
    /// row that sorts after it: one range of the primary key, bounded on both sides.
    #[test]
    fn a_listing_reads_one_bounded_range_of_the_primary_key() {
        let conn = crate::schema::open(Path::new(":memory:"), &SqliteConfig::default()).unwrap();
        let far = now_micros().unwrap() + 60_000_000;
        let mut insert = conn
            .prepare(
                "INSERT INTO leader_locks
                 (name, owner, leader_id, fencing_token, acquired_at, expires_at)
                 VALUES (?1, 'owner', 'node', 1, 0, ?2)",
            )
            .unwrap();
        for name in ["job#rank:1", "job#rank:2"] {
            insert.execute(params![name, far]).unwrap();
        }
        // Many other locks that sort after the prefix (`job#s...`, `tenant:...`).
        for i in 0..20_000 {
            insert
                .execute(params![format!("tenant:t{i}:job"), far])
                .unwrap();
        }
        let page = list(&conn, &ListRequest::new("job#rank:")).unwrap();
        let names: Vec<&str> = page.locks.iter().map(LeaderState::lock_name).collect();
        assert_eq!(names, ["job#rank:1", "job#rank:2"]);

        let statement = conn.prepare_cached(LIST).unwrap();
        let steps = statement.get_status(StatementStatus::VmStep);
        assert!(
            steps < 1_000,
            "{steps} VM steps for two rows: the scan went past the prefix"
        );
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {LIST}"))
            .unwrap()
            .query_map(
                params!["job#rank:", None::<String>, 0, 10, "job#rank;"],
                |row| row.get::<_, String>(3),
            )
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("PRIMARY KEY (name>? AND name<?)")),
            "{plan:?}"
        );
        eprintln!("a survey among 20,002 rows: {steps} VM steps, plan {plan:?}");
    }
}
