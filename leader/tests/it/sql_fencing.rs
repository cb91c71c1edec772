//! The SQL pattern of `src/fencing.md`, run on SQLite: the statements executed are the
//! ```sql blocks of that file, found by their first comment line, so the documentation
//! cannot drift from what is tested.

use rusqlite::{Connection, types::ToSqlOutput};

const DOC: &str = include_str!("../../src/fencing.md");

/// Holder A's token, then holder B's: B acquired the lock after A's lease ran out.
const TA: i64 = 1_786_000_000_000_017;
const TB: i64 = 1_786_000_000_000_018;

/// The ```sql block of the documentation whose first line is `-- {label}`.
fn statement(label: &str) -> String {
    let mut blocks = DOC.split("```sql\n").skip(1);
    let block = blocks
        .find(|block| block.lines().next() == Some(&format!("-- {label}")))
        .unwrap_or_else(|| panic!("fencing.md has no ```sql block labelled `-- {label}`"));
    let end = block.find("```").expect("an unclosed ```sql block");
    block[..end].to_owned()
}

/// A connection with the documented table.
fn database() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&statement("schema")).unwrap();
    conn
}

/// Binds whichever of `$id`, `$value`, `$token` the statement uses.
fn prepare<'c>(
    conn: &'c Connection,
    label: &str,
    id: &str,
    value: &str,
    token: i64,
) -> rusqlite::Statement<'c> {
    let mut stmt = conn.prepare(&statement(label)).unwrap();
    let params: [(&str, ToSqlOutput<'_>); 3] = [
        ("$id", id.into()),
        ("$value", value.into()),
        ("$token", token.into()),
    ];
    for (name, value) in params {
        if let Some(index) = stmt.parameter_index(name).unwrap() {
            stmt.raw_bind_parameter(index, value).unwrap();
        }
    }
    stmt
}

/// Runs a documented write; the number of rows it changed.
fn write(conn: &Connection, label: &str, id: &str, value: &str, token: i64) -> usize {
    prepare(conn, label, id, value, token)
        .raw_execute()
        .unwrap()
}

/// The documented "rejected or missing" read: the row's fence, or `None` when missing.
fn fence_of(conn: &Connection, id: &str) -> Option<i64> {
    let mut stmt = prepare(conn, "rejected or missing", id, "", 0);
    let mut rows = stmt.raw_query();
    rows.next().unwrap().map(|row| row.get(0).unwrap())
}

fn value_of(conn: &Connection, id: &str) -> Option<String> {
    conn.query_row("SELECT value FROM reports WHERE id = ?1", [id], |row| {
        row.get(0)
    })
    .ok()
}

#[test]
fn a_stale_holders_update_is_rejected_and_the_newer_value_stays() {
    let conn = database();
    // A fresh resource accepts the first write; the same holder writes again.
    assert_eq!(write(&conn, "fenced upsert", "r1", "a-1", TA), 1);
    assert_eq!(write(&conn, "fenced update", "r1", "a-2", TA), 1);
    // B, with a newer token, writes.
    assert_eq!(write(&conn, "fenced update", "r1", "b-1", TB), 1);
    // A's late writes, as an update and as an upsert: nothing changes.
    assert_eq!(write(&conn, "fenced update", "r1", "a-late", TA), 0);
    assert_eq!(write(&conn, "fenced upsert", "r1", "a-late", TA), 0);
    assert_eq!(value_of(&conn, "r1").as_deref(), Some("b-1"));
    // The documented read says it was a rejection: the row's fence is the newer token.
    assert_eq!(fence_of(&conn, "r1"), Some(TB));
    // B keeps writing, through either statement.
    assert_eq!(write(&conn, "fenced upsert", "r1", "b-2", TB), 1);
    assert_eq!(value_of(&conn, "r1").as_deref(), Some("b-2"));
}

#[test]
fn a_stale_first_insert_loses_to_a_newer_one() {
    let conn = database();
    assert_eq!(write(&conn, "fenced upsert", "r2", "newer", TB), 1);
    assert_eq!(write(&conn, "fenced upsert", "r2", "older", TA), 0);
    assert_eq!(value_of(&conn, "r2").as_deref(), Some("newer"));
}

#[test]
fn a_missing_row_is_told_apart_from_a_rejection() {
    let conn = database();
    assert_eq!(write(&conn, "fenced update", "nowhere", "x", TA), 0);
    assert_eq!(fence_of(&conn, "nowhere"), None);
}

#[test]
fn a_row_written_before_fencing_takes_the_first_fenced_write() {
    let conn = database();
    conn.execute(
        "INSERT INTO reports (id, value) VALUES ('legacy', 'old')",
        [],
    )
    .unwrap();
    assert_eq!(fence_of(&conn, "legacy"), Some(0));
    assert_eq!(write(&conn, "fenced update", "legacy", "new", TA), 1);
    assert_eq!(fence_of(&conn, "legacy"), Some(TA));
}
