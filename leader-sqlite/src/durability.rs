//! How long a commit lasts, and the transactions that must outlast a power cut.
//!
//! The file runs in WAL mode with `synchronous = NORMAL` (set when it is opened, in
//! `schema`): a commit survives a crash of the process, but the WAL is synced only before
//! a checkpoint, so a power cut (or a crash of the host's kernel) can lose the last
//! commits. For the lock rows that loses nothing: every row carries the id of the boot it
//! was written in, and a row of an earlier boot has expired. A record is another matter: a
//! scheduler's tick claim lost that way lets the node that starts after the reboot run the
//! tick again. So the transactions that write records run [`durably`], with
//! `synchronous = FULL`: the commit syncs the WAL before it returns (one `fsync`, which
//! `--bench sqlite_durability` measures against `NORMAL`), making every earlier commit in
//! the WAL durable with it; the connection goes back to `NORMAL` for everything else.

use rusqlite::Connection;

use crate::error::OpError;

/// The setting of a transaction that must survive a power cut.
const FULL: &str = "PRAGMA synchronous = FULL";
/// The setting of every other transaction (the one `schema` opens the file with).
const NORMAL: &str = "PRAGMA synchronous = NORMAL";

/// Runs `body`, which begins and commits its own transaction, with `synchronous = FULL`,
/// then sets `NORMAL` again.
///
/// SQLite applies the setting when the `PRAGMA` statement is prepared and refuses it
/// inside a transaction, so it is set before `body` begins, each time from a statement
/// prepared anew (a cached one would change nothing). Should setting `NORMAL` again fail,
/// the connection stays on `FULL` — every commit synced, slower, never less durable — until
/// the next durable write tries again; `body`'s answer stands.
pub(crate) fn durably<T>(
    conn: &mut Connection,
    body: impl FnOnce(&mut Connection) -> Result<T, OpError>,
) -> Result<T, OpError> {
    conn.execute_batch(FULL)?;
    let answer = body(conn);
    if let Err(err) = conn.execute_batch(NORMAL) {
        tracing::warn!(error = %err, "sqlite: synchronous stays FULL after a durable write");
    }
    answer
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rusqlite::TransactionBehavior;

    use super::*;

    fn synchronous(conn: &Connection) -> i64 {
        conn.query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn the_body_commits_with_full_and_normal_follows() {
        let dir = std::env::temp_dir().join(format!(
            "leader-sqlite-durably-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut conn = Connection::open(dir.join("locks.db")).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (x)",
        )
        .unwrap();
        assert_eq!(synchronous(&conn), 1);
        let inside = durably(&mut conn, |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("INSERT INTO t (x) VALUES (1)", [])?;
            let inside = synchronous(&tx);
            tx.commit()?;
            Ok(inside)
        })
        .unwrap();
        assert_eq!(inside, 2, "FULL while the body runs");
        assert_eq!(synchronous(&conn), 1, "NORMAL after it");
        // And after a body that failed.
        let failed = durably(&mut conn, |_| Err::<(), _>(OpError::Corrupt("test")));
        assert!(failed.is_err());
        assert_eq!(synchronous(&conn), 1);
        drop(conn);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
