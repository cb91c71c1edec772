//! The operator's calls: listing the held locks under a prefix, and freeing a lock whoever
//! holds it (or only while its holder has a given fencing token). Plain functions on a
//! connection, like `ops`.

use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage, ListRequest, LockName};
use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::{BACKEND, OpError};
use crate::ops::{Holder, LIVE, live_holder};
use crate::time::HostClock;

/// The statement of [`list`]: `?1` prefix, `?2` boot id and `?3` now (for [`LIVE`]), `?4`
/// the name to list after (or `NULL`), `?5` how many rows, and, when `bounded`, `?6` the
/// prefix's end ([`ListRequest::prefix_end`]; the empty prefix has none).
fn list_statement(bounded: bool) -> String {
    let upper = if bounded {
        "name < ?6"
    } else {
        "substr(name, 1, length(?1)) = ?1"
    };
    format!(
        "SELECT owner, leader_id, fencing_token, acquired_us, expires_us, name FROM leader_locks
         WHERE name >= ?1 AND {upper}
           AND (?4 IS NULL OR name > ?4)
           AND {LIVE}
         ORDER BY name LIMIT ?5"
    )
}

/// One page of the live rows whose name starts with the prefix, in name order, after the
/// cursor's name. The names under the prefix are exactly those in `[prefix,
/// prefix_end)` (SQLite compares text byte-wise, and UTF-8's byte order is code point
/// order): one range of the primary key, so a listing reads the rows under its prefix, not
/// every row that sorts after it. `limit + 1` rows tell whether another page follows. The
/// cursor is the last name shown, tagged with this backend and the prefix, so a cursor of
/// another listing is refused.
pub(crate) fn list(
    conn: &Connection,
    clock: &HostClock,
    request: &ListRequest,
) -> Result<ListPage, OpError> {
    let after = ListCursor::resume(BACKEND, request)?;
    let now = clock.now()?;
    let limit = i64::try_from(request.page_size().saturating_add(1)).unwrap_or(i64::MAX);
    let end = request.prefix_end();
    let mut statement = conn.prepare_cached(&list_statement(end.is_some()))?;
    let (prefix, boot) = (&request.prefix, clock.boot());
    let mut rows = match &end {
        Some(end) => statement.query(params![prefix, boot, now.at, after, limit, end])?,
        None => statement.query(params![prefix, boot, now.at, after, limit])?,
    };
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

/// Frees `key` whoever holds it (a row kept for a minimum lease included), or, with `only`,
/// only while its holder has that fencing token; one IMMEDIATE transaction reads and frees,
/// so no other writer comes between. The fencing counter is in its own table and stays.
pub(crate) fn force_release(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
    only: Option<u64>,
) -> Result<ForceReleaseOutcome, OpError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = clock.now()?;
    let holder = match live_holder(&tx, key, clock, &now)? {
        Some(holder) => Some(holder.snapshot(&now)?),
        None => None,
    };
    let freed = holder
        .as_ref()
        .is_some_and(|holder| only.is_none_or(|token| token == holder.fencing_token));
    if freed {
        tx.execute(
            "UPDATE leader_locks SET owner = NULL, expires_us = ?2 WHERE name = ?1",
            params![key.as_str(), now.at],
        )?;
    }
    tx.commit()?;
    Ok(ForceReleaseOutcome::conditional(holder, freed))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use rusqlite::StatementStatus;

    use super::*;
    use crate::config::SqliteConfig;

    /// A ranked campaign's survey (`<name>#rank:`) reads the rows of its prefix, not every
    /// row that sorts after it: one range of the primary key, bounded on both sides.
    #[test]
    fn a_listing_reads_one_bounded_range_of_the_primary_key() {
        let dir = std::env::temp_dir().join(format!(
            "leader-sqlite-list-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let clock = HostClock::new().unwrap();
        let conn =
            crate::schema::open(&dir.join("locks.db"), &SqliteConfig::default(), &clock).unwrap();
        let far = clock.now().unwrap().after(Duration::from_secs(60)).unwrap();
        let mut insert = conn
            .prepare(
                "INSERT INTO leader_locks
                 (name, owner, leader_id, fencing_token, boot_id, acquired_us, expires_us)
                 VALUES (?1, 'owner', 'node', 1, ?2, 0, ?3)",
            )
            .unwrap();
        for name in ["job#rank:1", "job#rank:2"] {
            insert.execute(params![name, clock.boot(), far]).unwrap();
        }
        // Many other locks that sort after the prefix (`tenant:...`).
        for i in 0..20_000 {
            insert
                .execute(params![format!("tenant:t{i}:job"), clock.boot(), far])
                .unwrap();
        }
        let page = list(&conn, &clock, &ListRequest::new("job#rank:")).unwrap();
        let names: Vec<&str> = page.locks.iter().map(LeaderState::lock_name).collect();
        assert_eq!(names, ["job#rank:1", "job#rank:2"]);

        let statement = conn.prepare_cached(&list_statement(true)).unwrap();
        let steps = statement.get_status(StatementStatus::VmStep);
        assert!(
            steps < 1_000,
            "{steps} VM steps for two rows: the scan went past the prefix"
        );
        let now = clock.now().unwrap().at;
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", list_statement(true)))
            .unwrap()
            .query_map(
                params![
                    "job#rank:",
                    clock.boot(),
                    now,
                    None::<String>,
                    10,
                    "job#rank;"
                ],
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
        drop(statement);
        drop(insert);
        drop(conn);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
