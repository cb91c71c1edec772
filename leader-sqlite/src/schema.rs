//! Opening a database file: connection settings and the two tables.

use std::path::Path;

use rusqlite::Connection;

use crate::config::SqliteConfig;
use crate::error::OpenError;

/// The lock table: one row per lock that was ever taken. Times are microseconds since
/// the Unix epoch on the host's clock; `owner` is the holder's owner token in hex,
/// `released` after a release that keeps the minimum lease, `NULL` once the lock is free.
const LOCKS: &str = "CREATE TABLE IF NOT EXISTS leader_locks (
    name TEXT PRIMARY KEY NOT NULL,
    owner TEXT,
    leader_id TEXT NOT NULL,
    fencing_token INTEGER NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID";

/// The fencing counters, apart from the lock rows, so that they survive whatever
/// happens to a lock row (release, expiry, deletion by hand).
const FENCES: &str = "CREATE TABLE IF NOT EXISTS leader_fences (
    name TEXT PRIMARY KEY NOT NULL,
    last_token INTEGER NOT NULL
) WITHOUT ROWID";

const LOCK_COLUMNS: &[&str] = &[
    "name",
    "owner",
    "leader_id",
    "fencing_token",
    "acquired_at",
    "expires_at",
];
const FENCE_COLUMNS: &[&str] = &["name", "last_token"];

/// Opens (creating if needed) the database at `path`, in WAL mode with `config`'s busy
/// timeout, with both tables in place.
pub(crate) fn open(path: &Path, config: &SqliteConfig) -> Result<Connection, OpenError> {
    let fail = |source| OpenError::classify(path.to_owned(), source);
    let conn = Connection::open(path).map_err(fail)?;
    conn.busy_timeout(config.busy_timeout()).map_err(fail)?;
    // WAL: readers never wait for the writer. NORMAL sync: a commit survives a crash of
    // the process; one lost to a power cut cannot make a fencing token go back, because
    // every token is at least the clock in microseconds.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(fail)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(fail)?;
    conn.execute_batch(&format!("BEGIN IMMEDIATE; {LOCKS}; {FENCES}; COMMIT;"))
        .map_err(fail)?;
    check_columns(&conn, path, "leader_locks", LOCK_COLUMNS)?;
    check_columns(&conn, path, "leader_fences", FENCE_COLUMNS)?;
    Ok(conn)
}

/// A table of the same name made by someone else is refused, not written into.
fn check_columns(
    conn: &Connection,
    path: &Path,
    table: &'static str,
    expected: &[&str],
) -> Result<(), OpenError> {
    let fail = |source| OpenError::classify(path.to_owned(), source);
    let mut statement = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .map_err(fail)?;
    let columns = statement
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(fail)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    if columns
        .iter()
        .map(String::as_str)
        .eq(expected.iter().copied())
    {
        Ok(())
    } else {
        Err(OpenError::ForeignTable {
            path: path.to_owned(),
            table,
        })
    }
}
