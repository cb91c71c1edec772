//! The statements, as text built from the table name: no I/O here.
//!
//! Every time is the server's `clock_timestamp()`, read once per statement (the `clock`
//! CTE or subquery), so expiry never depends on a client's clock. Lease lengths travel
//! as microseconds (`bigint`).

use std::sync::Arc;

use crate::shared_sql::SharedSql;
use crate::table::Table;

/// The `owner` of a lock released before its minimum lease ran out: held, by nobody, so
/// the releaser can neither extend nor re-acquire it. Owner tokens are 32 hex digits.
pub(crate) const RELEASED: &str = "released";

/// The statements of one table.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// The channel a release's `NOTIFY` goes to (`<table>_released`): the `$4` of
    /// `release` and `release_batch`, the `$2` of `force_release`.
    pub(crate) channel: String,
    /// Creates the table when it is missing.
    pub(crate) create: String,
    /// `$1` name, `$2` owner, `$3` leader id, `$4` lease µs → the new lease, or no row
    /// when someone else holds the lock.
    pub(crate) acquire: String,
    /// `$1` names, `$2` owners, `$3` leader ids, `$4` lease µs (arrays, one request per
    /// index, no name twice) → per request in order: the lease taken (leader id, token,
    /// acquired, expires), or NULLs when it is held.
    pub(crate) acquire_batch: String,
    /// `$1` name → the live holder (a released lock in its minimum lease included).
    pub(crate) holder: String,
    /// `$1` names → the live holders among them: leader id, token, acquired, expires, name.
    pub(crate) holders: String,
    /// `$1` name, `$2` owner, `$3` lease µs → the new expiry, or no row when not held.
    pub(crate) extend: String,
    /// `$1` names, `$2` owners, `$3` lease µs (arrays, one renewal per index) → per
    /// renewal in order: its new expiry (NULL when not renewed) and whether its row was
    /// skipped because another session had it locked.
    pub(crate) extend_batch: String,
    /// `$1` names, `$2` owners, `$3` minimum leases µs (arrays, no name twice), `$4`
    /// channel → per release in order: `freed`, or NULL when not held. Notifies `$4` for
    /// each lock it freed, as `release` does.
    pub(crate) release_batch: String,
    /// `$1` name, `$2` owner, `$3` minimum lease µs, `$4` channel → `freed`, or no row
    /// when not held. Notifies `$4` with the name when it freed the lock.
    pub(crate) release: String,
    /// `$1` prefix, `$2` the name to list after (`''` on the first page), `$3` the
    /// prefix's upper bound, `$4` how many rows → the live holders under the prefix, in
    /// name order: leader id, token, acquired, expires, name.
    pub(crate) list: String,
    /// [`list`](Self::list) for a prefix without an upper bound (the empty prefix):
    /// `$1` prefix, `$2` after, `$3` how many rows.
    pub(crate) list_unbounded: String,
    /// `$1` name, `$2` channel, `$3` any holder, `$4` else the holder's token → the live
    /// holder (leader id, token, acquired, expires) and whether it was freed, or no row
    /// when nobody held the lock. Notifies `$2` with the name when it freed it.
    pub(crate) force_release: String,
    /// Creates the records' table when it is missing.
    pub(crate) create_records: String,
    /// `$1` name → the record's version and value, or no row.
    pub(crate) read_record: String,
    /// `$1` name, `$2` the version expected (NULL: no record), `$3` value → the new
    /// version (NULL when nothing was written) and the version and value found (NULLs
    /// when there was no record).
    pub(crate) write_record: String,
    /// The read/write locks' tables, function and call.
    pub(crate) shared: Arc<SharedSql>,
}

/// The six columns, with the type `format_type` gives each, in table order.
pub(crate) const COLUMNS: [(&str, &str); 6] = [
    ("name", "text"),
    ("owner", "text"),
    ("leader_id", "text"),
    ("fencing_token", "bigint"),
    ("acquired_at", "timestamp with time zone"),
    ("expires_at", "timestamp with time zone"),
];

/// The records' table's three columns, as [`COLUMNS`] lists the lock table's.
pub(crate) const RECORD_COLUMNS: [(&str, &str); 3] =
    [("name", "text"), ("version", "bigint"), ("value", "text")];

/// `$1` the quoted table name → whether it exists.
pub(crate) const EXISTS: &str = "SELECT to_regclass($1) IS NOT NULL";

/// `$1` the quoted table name → each column's name and type, and whether it is the whole
/// primary key.
pub(crate) const SHAPE: &str = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod),
        EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary
                AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum)
    FROM pg_attribute a
    WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum";

impl Sql {
    /// The statements of `table`, and of its records' table.
    pub(crate) fn new(table: &Table) -> Sql {
        let t = table.quoted();
        let records = table.records();
        let r = records.quoted();
        Sql {
            channel: table.channel(),
            create: create(t),
            create_records: create_records(r),
            read_record: read_record(r),
            write_record: write_record(r),
            acquire: acquire(t),
            acquire_batch: acquire_batch(t),
            holder: holder(t),
            holders: holders(t),
            extend: extend(t),
            extend_batch: extend_batch(t),
            release: release(t),
            release_batch: release_batch(t),
            list: list(t, " AND name COLLATE \"C\" < $3::text", "$4"),
            list_unbounded: list(t, "", "$3"),
            force_release: force_release(t),
            shared: Arc::new(SharedSql::new(table)),
        }
    }
}

/// Whether an acquire's conflicting row is the caller's own live lease, which a renewal
/// keeps with its token, leader id and acquisition time.
const RENEWAL: &str = "(held.owner = excluded.owner AND held.expires_at > excluded.acquired_at)";

/// `name` sorts byte-wise (`C`) whatever the database's collation, so the primary
/// key's index serves a listing's prefix as one range, in the order it pages by.
fn create(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t} (
            name text COLLATE \"C\" PRIMARY KEY,
            owner text,
            leader_id text NOT NULL,
            fencing_token bigint NOT NULL,
            acquired_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL
        )"
    )
}

/// One statement, one round trip. A missing row is inserted with a token seeded
/// from the clock; an existing one is taken only when free, expired or ours (the
/// conflict update's WHERE), and a new owner's token is max(stored + 1, clock µs).
/// A renewal (ours, unexpired) keeps token, leader id and acquisition time.
fn acquire(t: &str) -> String {
    format!(
        "WITH clock AS (SELECT clock_timestamp() AS now)
        INSERT INTO {t} AS held (name, owner, leader_id, fencing_token, acquired_at, expires_at)
        SELECT $1::text, $2::text, $3::text,
            (extract(epoch FROM clock.now) * 1000000)::bigint,
            clock.now, clock.now + $4::bigint * interval '1 microsecond'
        FROM clock
        ON CONFLICT (name) DO UPDATE SET
            owner = excluded.owner,
            leader_id = CASE WHEN {renewal} THEN held.leader_id ELSE excluded.leader_id END,
            fencing_token = CASE WHEN {renewal} THEN held.fencing_token
                ELSE GREATEST(held.fencing_token + 1, excluded.fencing_token) END,
            acquired_at = CASE WHEN {renewal} THEN held.acquired_at ELSE excluded.acquired_at END,
            expires_at = excluded.expires_at
        WHERE held.owner IS NULL OR held.owner = excluded.owner
            OR held.expires_at <= excluded.acquired_at
        RETURNING held.leader_id, held.fencing_token, held.acquired_at, held.expires_at",
        renewal = RENEWAL
    )
}

/// The batch form: one row per request, inserted in name order, so that batches of
/// several nodes over the same locks take the row locks in one order and never
/// deadlock. The requests it does not take come back as NULLs.
fn acquire_batch(t: &str) -> String {
    format!(
        "WITH clock AS (SELECT clock_timestamp() AS now),
        wanted AS (
            SELECT w.name, w.owner, w.leader_id, w.micros, w.i
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
                WITH ORDINALITY AS w(name, owner, leader_id, micros, i)
        ),
        taken AS (
            INSERT INTO {t} AS held (name, owner, leader_id, fencing_token, acquired_at, expires_at)
            SELECT wanted.name, wanted.owner, wanted.leader_id,
                (extract(epoch FROM clock.now) * 1000000)::bigint,
                clock.now, clock.now + wanted.micros * interval '1 microsecond'
            FROM wanted, clock
            ORDER BY wanted.name
            ON CONFLICT (name) DO UPDATE SET
                owner = excluded.owner,
                leader_id = CASE WHEN {renewal} THEN held.leader_id ELSE excluded.leader_id END,
                fencing_token = CASE WHEN {renewal} THEN held.fencing_token
                    ELSE GREATEST(held.fencing_token + 1, excluded.fencing_token) END,
                acquired_at = CASE WHEN {renewal} THEN held.acquired_at ELSE excluded.acquired_at END,
                expires_at = excluded.expires_at
            WHERE held.owner IS NULL OR held.owner = excluded.owner
                OR held.expires_at <= excluded.acquired_at
            RETURNING held.name, held.leader_id, held.fencing_token, held.acquired_at,
                held.expires_at
        )
        SELECT taken.leader_id, taken.fencing_token, taken.acquired_at, taken.expires_at
        FROM wanted LEFT JOIN taken ON taken.name = wanted.name
        ORDER BY wanted.i",
        renewal = RENEWAL
    )
}

/// The live holders among `$1` names.
fn holders(t: &str) -> String {
    format!(
        "SELECT leader_id, fencing_token, acquired_at, expires_at, name FROM {t}
        WHERE name = ANY($1::text[]) AND owner IS NOT NULL AND expires_at > clock_timestamp()"
    )
}

/// The live holder of `$1`.
fn holder(t: &str) -> String {
    format!(
        "SELECT leader_id, fencing_token, acquired_at, expires_at FROM {t}
        WHERE name = $1::text AND owner IS NOT NULL AND expires_at > clock_timestamp()"
    )
}

/// Renews `$1` for owner `$2` by `$3` µs from the server's clock, while it is live.
fn extend(t: &str) -> String {
    format!(
        "UPDATE {t} AS held SET expires_at = clock.now + $3::bigint * interval '1 microsecond'
        FROM (SELECT clock_timestamp() AS now) AS clock
        WHERE held.name = $1::text AND held.owner = $2::text AND held.expires_at > clock.now
        RETURNING held.expires_at"
    )
}

/// One statement for a whole batch, so that 1,000 renewals are one round trip.
/// A row another session holds locked is skipped, not waited for: the driver
/// sends a batch whole, and one stuck row must not hold up every other lease's
/// renewal (the single `extend` waits, up to the statement timeout). The rows it
/// did not lock are told apart from missing ones, so a skipped renewal is a
/// transient error and the others answer as `extend` would.
fn extend_batch(t: &str) -> String {
    format!(
        "WITH clock AS (SELECT clock_timestamp() AS now),
        wanted AS (
            SELECT w.name, w.owner, w.micros, w.i
            FROM unnest($1::text[], $2::text[], $3::bigint[])
                WITH ORDINALITY AS w(name, owner, micros, i)
        ),
        locked AS (
            SELECT held.name FROM {t} AS held
            WHERE held.name = ANY($1::text[])
            FOR UPDATE SKIP LOCKED
        ),
        renewed AS (
            UPDATE {t} AS held
            SET expires_at = clock.now + wanted.micros * interval '1 microsecond'
            FROM clock, wanted
            WHERE held.name = wanted.name AND held.owner = wanted.owner
                AND held.expires_at > clock.now
                AND held.name IN (SELECT name FROM locked)
            RETURNING wanted.i, held.expires_at
        )
        SELECT wanted.i, renewed.expires_at,
            renewed.i IS NULL AND wanted.name NOT IN (SELECT name FROM locked)
                AND EXISTS (SELECT 1 FROM {t} AS other WHERE other.name = wanted.name)
                AS skipped
        FROM wanted LEFT JOIN renewed ON renewed.i = wanted.i
        ORDER BY wanted.i"
    )
}

/// Kept for the minimum lease when it is still ahead (and the lease is live):
/// owner `released`, expiry at acquired_at + min. Else freed: owner NULL, expiry
/// now. The row stays either way, and with it the fencing counter. The NOTIFY is
/// sent when the transaction commits, only for a freed lock; its payload is the name,
/// a newline and the freed lease's fencing token (`ReleaseNotice::message`'s form).
fn release(t: &str) -> String {
    format!(
        "WITH clock AS (SELECT clock_timestamp() AS now),
        released AS (
            UPDATE {t} AS held SET
                owner = CASE WHEN {keep} THEN '{RELEASED}' END,
                expires_at = CASE WHEN {keep}
                    THEN LEAST(held.expires_at, held.acquired_at + $3::bigint * interval '1 microsecond')
                    ELSE clock.now END
            FROM clock
            WHERE held.name = $1::text AND held.owner = $2::text
            RETURNING held.owner IS NULL AS freed, held.fencing_token
        )
        SELECT freed, CASE WHEN freed THEN (SELECT 1 FROM pg_notify($4::text,
            $1::text || E'\\n' || fencing_token::text)) END
        FROM released",
        keep = "($3::bigint > 0 AND held.expires_at > clock.now
            AND held.acquired_at + $3::bigint * interval '1 microsecond' > clock.now)"
    )
}

/// The batch form, its rows locked in name order first (as the batch acquire takes
/// them, so the two never deadlock); a NOTIFY per freed lock.
fn release_batch(t: &str) -> String {
    format!(
        "WITH clock AS (SELECT clock_timestamp() AS now),
        wanted AS (
            SELECT w.name, w.owner, w.min, w.i
            FROM unnest($1::text[], $2::text[], $3::bigint[])
                WITH ORDINALITY AS w(name, owner, min, i)
        ),
        locked AS (
            SELECT held.name FROM {t} AS held
            WHERE held.name = ANY($1::text[])
            ORDER BY held.name
            FOR UPDATE
        ),
        released AS (
            UPDATE {t} AS held SET
                owner = CASE WHEN {keep} THEN '{RELEASED}' END,
                expires_at = CASE WHEN {keep}
                    THEN LEAST(held.expires_at, held.acquired_at + wanted.min * interval '1 microsecond')
                    ELSE clock.now END
            FROM clock, wanted
            WHERE held.name = wanted.name AND held.owner = wanted.owner
                AND held.name IN (SELECT name FROM locked)
            RETURNING wanted.i, held.owner IS NULL AS freed, held.name, held.fencing_token
        ),
        notified AS (
            SELECT pg_notify($4::text, name || E'\n' || fencing_token::text)
            FROM released WHERE freed
        )
        SELECT released.freed, (SELECT count(*) FROM notified) AS notified
        FROM wanted LEFT JOIN released ON released.i = wanted.i
        ORDER BY wanted.i",
        keep = "(wanted.min > 0 AND held.expires_at > clock.now
            AND held.acquired_at + wanted.min * interval '1 microsecond' > clock.now)"
    )
}

/// Byte-wise (`C`) bounds and order: the strings under a prefix are one range of
/// them, `[prefix, upper)`, and the cursor compares as the pages are ordered. Each
/// bound is an index condition even in a generic plan (no `$n IS NULL OR`), so
/// the scan reads the prefix's range only. `starts_with` rechecks the prefix.
fn list(t: &str, upper: &str, limit: &str) -> String {
    format!(
        "SELECT leader_id, fencing_token, acquired_at, expires_at, name FROM {t}
        WHERE name COLLATE \"C\" >= $1::text AND name COLLATE \"C\" > $2::text{upper}
            AND starts_with(name COLLATE \"C\", $1::text)
            AND owner IS NOT NULL AND expires_at > clock_timestamp()
        ORDER BY name COLLATE \"C\" LIMIT {limit}::bigint"
    )
}

/// Frees the live holder's row (a lock kept for its minimum lease included) as a
/// release without minimum lease does: owner NULL, expiry now; the row, and with it
/// the fencing counter, stays. `$3` true frees whoever holds it; false only a holder
/// whose token is `$4` (NULL: none). `prior` locks the row and reads the holder
/// (RETURNING only has the new values), so the check and the update are one step
/// on one version of the row; the NOTIFY, sent at commit, goes out once per freed
/// row, so never for a free lock or a holder kept.
fn force_release(t: &str) -> String {
    format!(
        "WITH clock AS (SELECT clock_timestamp() AS now),
        prior AS (
            SELECT cur.name, cur.leader_id, cur.fencing_token, cur.acquired_at,
                cur.expires_at
            FROM {t} AS cur, clock
            WHERE cur.name = $1::text AND cur.owner IS NOT NULL
                AND cur.expires_at > clock.now
            FOR UPDATE OF cur
        ),
        forced AS (
            UPDATE {t} AS held SET owner = NULL, expires_at = clock.now
            FROM clock, prior
            WHERE held.name = prior.name
                AND ($3::boolean OR prior.fencing_token = $4::bigint)
            RETURNING held.name, held.fencing_token
        )
        SELECT leader_id, fencing_token, acquired_at, expires_at,
            EXISTS (SELECT 1 FROM forced, pg_notify($2::text,
                forced.name || E'\\n' || forced.fencing_token::text)) AS freed
        FROM prior"
    )
}

/// The records' table.
fn create_records(r: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {r} (
            name text COLLATE \"C\" PRIMARY KEY,
            version bigint NOT NULL,
            value text NOT NULL
        )"
    )
}

/// The record `$1`.
fn read_record(r: &str) -> String {
    format!("SELECT version, value FROM {r} WHERE name = $1::text")
}

/// One statement, the compare-and-set: `prior` locks and reads the record as it is
/// (the latest committed version, as a locking read sees it); a new record is
/// inserted only when none was expected (a racing insert makes it do nothing), an
/// existing one updated only while it has the version expected, which is never
/// below 1, so a corrupted row is never written over. The caller tells written
/// from conflict by `written`, and reads the conflict's record from `prior`.
fn write_record(r: &str) -> String {
    format!(
        "WITH prior AS (
            SELECT version, value FROM {r} WHERE name = $1::text FOR UPDATE
        ),
        created AS (
            INSERT INTO {r} (name, version, value)
            SELECT $1::text, 1, $3::text WHERE $2::bigint IS NULL
            ON CONFLICT (name) DO NOTHING
            RETURNING version
        ),
        updated AS (
            UPDATE {r} SET version = version + 1, value = $3::text
            WHERE name = $1::text AND version = $2::bigint AND version > 0
            RETURNING version
        )
        SELECT (SELECT version FROM created UNION ALL SELECT version FROM updated LIMIT 1)
                AS written,
            (SELECT version FROM prior) AS version,
            (SELECT value FROM prior) AS value"
    )
}
