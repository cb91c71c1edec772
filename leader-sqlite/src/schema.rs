//! Opening a database file: what is in it, checked before anything is written, then the
//! connection settings and the tables of the current schema version.
//!
//! Versions: 1 (no `leader_schema` table) kept times in microseconds of the host's wall
//! clock in `acquired_at` / `expires_at`. 2 keeps them on the monotonic clock of a boot
//! (`boot_id`, `acquired_us`, `expires_us`) and records its number in `leader_schema`. A
//! version 1 file is migrated in one transaction: each row keeps the time it had left, and
//! the old columns are gone, so a process still running version 1 on the file fails
//! closed ("no such column") instead of reading the new rows as expired.
//!
//! Tables added within version 2 (the records, the read/write locks) are created with
//! `IF NOT EXISTS` when a file lacks them: a release that does not know them ignores them,
//! and no table it knows changes.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::config::SqliteConfig;
use crate::error::{ConnectError, OpError};
use crate::time::HostClock;

/// The schema version this crate writes, and the newest it reads.
pub(crate) const VERSION: i64 = 2;

/// The lock table: one row per lock that was ever taken. `owner` is the holder's owner
/// token in hex, `released` after a release that keeps the minimum lease, `NULL` once the
/// lock is free. `acquired_us` / `expires_us` are microseconds on the host's monotonic
/// clock of the boot `boot_id`.
const LOCKS: &str = "CREATE TABLE leader_locks (
    name TEXT PRIMARY KEY NOT NULL,
    owner TEXT,
    leader_id TEXT NOT NULL,
    fencing_token INTEGER NOT NULL,
    boot_id TEXT NOT NULL,
    acquired_us INTEGER NOT NULL,
    expires_us INTEGER NOT NULL
) WITHOUT ROWID";

/// The fencing counters, apart from the lock rows, so that they survive whatever
/// happens to a lock row (release, expiry, deletion by hand). The same in every version.
const FENCES: &str = "CREATE TABLE IF NOT EXISTS leader_fences (
    name TEXT PRIMARY KEY NOT NULL,
    last_token INTEGER NOT NULL
) WITHOUT ROWID";

/// The records (the compare-and-set register per name), apart from the locks: no lock
/// statement reads or writes them, and nothing expires them. Added within version 2: a
/// file of an earlier release gets the table when opened.
const RECORDS: &str = "CREATE TABLE IF NOT EXISTS leader_records (
    name TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID";

/// The read/write locks (`leader_core::SharedLockBackend`), apart from the exclusive
/// locks and their counters (a name may be both): one row per name that was ever taken in
/// either role, keeping its fencing counter (`last_token`, one for both roles) and a
/// waiting writer's intent (`intent_*`, all three `NULL` when there is none). Every time
/// of the name (the intent's, its holders') is on the monotonic clock of boot `boot_id`.
/// Added within version 2, with [`RW_HOLDERS`]: a file of an earlier release gets both
/// tables when opened.
const RW: &str = "CREATE TABLE IF NOT EXISTS leader_rw (
    name TEXT PRIMARY KEY NOT NULL,
    last_token INTEGER NOT NULL,
    boot_id TEXT NOT NULL,
    intent_owner TEXT,
    intent_leader_id TEXT,
    intent_expires_us INTEGER
) WITHOUT ROWID";

/// The holders of the read/write locks: a row per reader or writer (`role`), keyed by its
/// fencing token, which is unique per name and grows with each grant, so readers read in
/// token order are in the order they came. `released` (0 or 1) marks a hold released
/// before its minimum lease ran out.
const RW_HOLDERS: &str = "CREATE TABLE IF NOT EXISTS leader_rw_holders (
    name TEXT NOT NULL,
    fencing_token INTEGER NOT NULL,
    role TEXT NOT NULL,
    owner TEXT NOT NULL,
    leader_id TEXT NOT NULL,
    acquired_us INTEGER NOT NULL,
    expires_us INTEGER NOT NULL,
    released INTEGER NOT NULL,
    PRIMARY KEY (name, fencing_token)
) WITHOUT ROWID";

/// The schema version, in its one row.
const SCHEMA: &str = "CREATE TABLE leader_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
)";

const LOCK_COLUMNS: &[&str] = &[
    "name",
    "owner",
    "leader_id",
    "fencing_token",
    "boot_id",
    "acquired_us",
    "expires_us",
];
const V1_LOCK_COLUMNS: &[&str] = &[
    "name",
    "owner",
    "leader_id",
    "fencing_token",
    "acquired_at",
    "expires_at",
];
const FENCE_COLUMNS: &[&str] = &["name", "last_token"];
const SCHEMA_COLUMNS: &[&str] = &["id", "version"];
const RECORD_COLUMNS: &[&str] = &["name", "version", "value"];
const RW_COLUMNS: &[&str] = &[
    "name",
    "last_token",
    "boot_id",
    "intent_owner",
    "intent_leader_id",
    "intent_expires_us",
];
const RW_HOLDER_COLUMNS: &[&str] = &[
    "name",
    "fencing_token",
    "role",
    "owner",
    "leader_id",
    "acquired_us",
    "expires_us",
    "released",
];

/// What a file holds, as far as this crate is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// The current tables.
    Current,
    /// The current lock tables, but some of the tables added within version 2 (the
    /// records, the read/write locks) are missing (a file of an earlier release): they
    /// are created.
    Additions,
    /// No lock table (perhaps the fences of an earlier one): the tables are created.
    Missing,
    /// Version 1's lock table: it is migrated.
    Version1,
}

/// The first pause between two tries of an open that found the file locked, and the
/// longest: doubled from the first up to the second.
const OPEN_PAUSES: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(50));

/// Opens (creating if needed) the database at `path`, in WAL mode with `config`'s busy
/// timeout, with the current tables in place. The file is inspected before the first
/// write, so every refusal leaves it as it was.
///
/// Processes started together open a new file together, and SQLite answers some steps of
/// such an open "database is locked" at once, without waiting on the busy handler (it
/// does not wait where waiting could deadlock, as when a connection that reads asks to
/// write, or to switch the file to WAL). So an open that finds the file locked is tried
/// again from the start, every step being safe to repeat, until the busy timeout has
/// passed; only then is it [`ConnectError::Locked`].
pub(crate) fn open(
    path: &Path,
    config: &SqliteConfig,
    clock: &HostClock,
) -> Result<Connection, ConnectError> {
    let started = Instant::now();
    let (mut pause, longest) = OPEN_PAUSES;
    loop {
        match open_once(path, config, clock) {
            Err(ConnectError::Locked { .. })
                if started.elapsed() + pause < config.busy_timeout() =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(longest);
            }
            opened => return opened,
        }
    }
}

/// One try of [`open`].
fn open_once(
    path: &Path,
    config: &SqliteConfig,
    clock: &HostClock,
) -> Result<Connection, ConnectError> {
    let fail = |source| ConnectError::classify(path.to_owned(), source);
    let mut conn = Connection::open(path).map_err(fail)?;
    if conn.path().is_some_and(str::is_empty) {
        return Err(ConnectError::NotShared {
            path: path.to_owned(),
            reason: "it opens an in-memory or temporary database",
        });
    }
    conn.busy_timeout(config.busy_timeout()).map_err(fail)?;
    if conn.is_readonly("main").map_err(fail)? {
        return Err(ConnectError::ReadOnly {
            path: path.to_owned(),
            source: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                Some("opened read-only".to_owned()),
            ),
        });
    }
    // Read in one transaction: another process may create the tables meanwhile, and
    // tables read one at a time around its commit look like somebody else's.
    let found = {
        let tx = conn.transaction().map_err(fail)?;
        let found = inspect(&tx, path)?;
        tx.commit().map_err(fail)?;
        found
    };
    // WAL: readers never wait for the writer. NORMAL sync: a commit survives a crash of
    // the process; a power cut may lose the last ones, which for lock rows loses nothing (a
    // reboot expires them) and for fencing counters is covered by the wall clock (every
    // token is at least it, in microseconds). Record writes, whose loss would rerun a tick,
    // commit with FULL (`durability`).
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(fail)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(fail)?;
    if found != Found::Current {
        prepare(conn, path, clock)
    } else {
        Ok(conn)
    }
}

/// Creates or migrates the tables under the write lock, after looking again: another
/// process may have done it meanwhile.
fn prepare(
    mut conn: Connection,
    path: &Path,
    clock: &HostClock,
) -> Result<Connection, ConnectError> {
    let fail = |source| ConnectError::classify(path.to_owned(), source);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    match inspect(&tx, path)? {
        Found::Current => {}
        Found::Additions => tx
            .execute_batch(&format!("{RECORDS}; {RW}; {RW_HOLDERS};"))
            .map_err(fail)?,
        Found::Missing => create(&tx).map_err(fail)?,
        Found::Version1 => migrate(&tx, path, clock)?,
    }
    tx.commit().map_err(fail)?;
    Ok(conn)
}

fn create(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "{LOCKS}; {FENCES}; {RECORDS}; {RW}; {RW_HOLDERS}; {SCHEMA};"
    ))?;
    conn.execute(
        "INSERT INTO leader_schema (id, version) VALUES (1, ?1)",
        [VERSION],
    )?;
    Ok(())
}

/// Version 1 to 2: each row's wall-clock times become instants on this boot's monotonic
/// clock that lie as far from now as they did, so a live lease keeps exactly the time it
/// had left (offsets beyond about 70,000 years are cut to that: still forever). A value
/// that is not a number is copied as it is, to fail as it did. The fences are untouched.
fn migrate(conn: &Connection, path: &Path, clock: &HostClock) -> Result<(), ConnectError> {
    let clock_failed = |err: OpError| ConnectError::HostClock {
        path: path.to_owned(),
        source: std::io::Error::other(err.to_string()),
    };
    let now = clock.now().map_err(clock_failed)?;
    let wall = now.token_floor().map_err(clock_failed)?;
    copy(conn, clock.boot(), now.at, wall)
        .map_err(|source| ConnectError::classify(path.to_owned(), source))
}

/// The copy of [`migrate`]: rows moved to the clock reading `now` (monotonic, of `boot`)
/// from the wall clock reading `wall`.
fn copy(conn: &Connection, boot: &str, now: i64, wall: i64) -> rusqlite::Result<()> {
    let v2 = LOCKS.replacen("leader_locks (", "leader_locks_v2 (", 1);
    conn.execute_batch(&v2)?;
    // ?2 + (t - ?3), with t first kept within ?4 of ?3 so that nothing overflows.
    let moved = |column: &str| {
        format!(
            "CASE WHEN typeof({column}) = 'integer'
                THEN ?2 + (max(min({column}, ?3 + ?4), ?3 - ?4) - ?3)
                ELSE {column} END"
        )
    };
    conn.execute(
        &format!(
            "INSERT INTO leader_locks_v2
                 (name, owner, leader_id, fencing_token, boot_id, acquired_us, expires_us)
             SELECT name, owner, leader_id, fencing_token, ?1, {}, {} FROM leader_locks",
            moved("acquired_at"),
            moved("expires_at")
        ),
        params![boot, now, wall, i64::MAX / 4],
    )?;
    conn.execute_batch(&format!(
        "DROP TABLE leader_locks;
         ALTER TABLE leader_locks_v2 RENAME TO leader_locks;
         {FENCES}; {RECORDS}; {RW}; {RW_HOLDERS}; {SCHEMA};"
    ))?;
    conn.execute(
        "INSERT INTO leader_schema (id, version) VALUES (1, ?1)",
        [VERSION],
    )?;
    Ok(())
}

/// `found` is exactly the columns `expected`, in order.
fn same(found: Option<&[String]>, expected: &[&str]) -> bool {
    found.is_some_and(|found| {
        found
            .iter()
            .map(String::as_str)
            .eq(expected.iter().copied())
    })
}

/// What the file holds, read without writing anything.
fn inspect(conn: &Connection, path: &Path) -> Result<Found, ConnectError> {
    let foreign = |table| ConnectError::ForeignTable {
        path: path.to_owned(),
        table,
    };
    let schema = columns(conn, path, "leader_schema")?;
    let locks = columns(conn, path, "leader_locks")?;
    let fences = columns(conn, path, "leader_fences")?;
    let records = columns(conn, path, "leader_records")?;
    let rw = columns(conn, path, "leader_rw")?;
    let rw_holders = columns(conn, path, "leader_rw_holders")?;
    for (found, expected, table) in [
        (&fences, FENCE_COLUMNS, "leader_fences"),
        (&records, RECORD_COLUMNS, "leader_records"),
        (&rw, RW_COLUMNS, "leader_rw"),
        (&rw_holders, RW_HOLDER_COLUMNS, "leader_rw_holders"),
    ] {
        if found.is_some() && !same(found.as_deref(), expected) {
            return Err(foreign(table));
        }
    }
    match schema {
        Some(found) if !same(Some(&found), SCHEMA_COLUMNS) => Err(foreign("leader_schema")),
        Some(_) => {
            let version = schema_version(conn, path)?.ok_or(foreign("leader_schema"))?;
            if version > VERSION {
                return Err(ConnectError::NewerSchema {
                    path: path.to_owned(),
                    found: version,
                    supported: VERSION,
                });
            }
            if version < VERSION {
                return Err(foreign("leader_schema"));
            }
            if fences.is_none() {
                Err(foreign("leader_schema"))
            } else if !same(locks.as_deref(), LOCK_COLUMNS) {
                Err(foreign("leader_locks"))
            } else if records.is_none() || rw.is_none() || rw_holders.is_none() {
                Ok(Found::Additions)
            } else {
                Ok(Found::Current)
            }
        }
        None if locks.is_none() => Ok(Found::Missing),
        None if same(locks.as_deref(), V1_LOCK_COLUMNS) => Ok(Found::Version1),
        None => Err(foreign("leader_locks")),
    }
}

/// The columns of `table`, in order, if the database has a table of that name; a view
/// or anything else of that name is refused.
fn columns(
    conn: &Connection,
    path: &Path,
    table: &'static str,
) -> Result<Option<Vec<String>>, ConnectError> {
    let fail = |source| ConnectError::classify(path.to_owned(), source);
    let kind: Option<String> = conn
        .query_row(
            "SELECT type FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE",
            [table],
            |row| row.get(0),
        )
        .optional()
        .map_err(fail)?;
    match kind.as_deref() {
        None => return Ok(None),
        Some("table") => {}
        Some(_) => {
            return Err(ConnectError::ForeignTable {
                path: path.to_owned(),
                table,
            });
        }
    }
    let mut statement = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .map_err(fail)?;
    let columns = statement
        .query_map([table], |row| row.get::<_, String>(0))
        .map_err(fail)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    Ok(Some(columns))
}

/// The version in `leader_schema`'s row, `None` when the row is missing or not a number.
fn schema_version(conn: &Connection, path: &Path) -> Result<Option<i64>, ConnectError> {
    let fail = |source| ConnectError::classify(path.to_owned(), source);
    let version: Option<rusqlite::types::Value> = conn
        .query_row(
            "SELECT version FROM leader_schema WHERE id = 1",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(fail)?;
    Ok(match version {
        Some(rusqlite::types::Value::Integer(version)) => Some(version),
        _ => None,
    })
}
