//! The read/write locks' SQL, as text built from the table name: the two tables, the one
//! PL/pgSQL function that runs every call, and the statement that calls it. No I/O here.
//!
//! Why a function: a call reads the name's holders, decides by the rules of
//! `leader_core::kit::SharedRecord` (prune what ran out, renew the caller's hold, count
//! the readers, weigh a waiting writer's intent, grant with the next token) and writes
//! back, all under the name's row lock. Written as one statement of CTEs, each rule
//! would be a `CASE` over aggregates of the holders, read again by every later CTE; as a
//! function it reads as the record's rules do, step by step, and each call is still one
//! statement and one round trip (`SELECT … FROM <table>_rw_v2(…)`). Nor could one
//! statement read the holders after taking the row lock: it reads them as of its start
//! (`READ COMMITTED`), so a call that waited for the lock would decide on holders as they
//! were before the call it waited for; each of the function's statements reads them anew.
//! The function is made
//! by the schema setup (`schema::ensure`) beside the tables; its name carries its
//! version, so a release that changes it makes a new one and never replaces the function
//! an older node still calls.

use crate::table::Table;

/// The SQLSTATE the function raises for a record in a shape this backend never writes.
pub(crate) const CORRUPT: &str = "LR001";

/// The argument types of the function, as `to_regprocedure` names them.
const SIGNATURE: &str = "(text, text, text, text, text, bigint, integer, text)";

/// The parent table's columns, with the type `format_type` gives each, in table order.
pub(crate) const RW_COLUMNS: [(&str, &str); 5] = [
    ("name", "text"),
    ("last_token", "bigint"),
    ("intent_owner", "text"),
    ("intent_leader_id", "text"),
    ("intent_expires_at", "timestamp with time zone"),
];

/// The holders' table's columns.
pub(crate) const HOLD_COLUMNS: [(&str, &str); 8] = [
    ("name", "text"),
    ("fencing_token", "bigint"),
    ("role", "text"),
    ("owner", "text"),
    ("leader_id", "text"),
    ("acquired_at", "timestamp with time zone"),
    ("expires_at", "timestamp with time zone"),
    ("released", "boolean"),
];

/// The read/write locks' statements of one table.
#[derive(Debug, Clone)]
pub(crate) struct SharedSql {
    /// `<table>_rw`.
    pub(crate) rw: Table,
    /// `<table>_rw_hold`.
    pub(crate) hold: Table,
    /// Creates `<table>_rw` when it is missing.
    pub(crate) create_rw: String,
    /// Creates `<table>_rw_hold` when it is missing.
    pub(crate) create_hold: String,
    /// The function's name and argument types, for `to_regprocedure`.
    pub(crate) function: String,
    /// Creates the function (fails when it exists).
    pub(crate) create_function: String,
    /// `$1` call (`acquire`, `extend`, `release`, `state`), `$2` name, `$3` owner, `$4`
    /// leader id, `$5` role, `$6` lease µs (a release: minimum lease µs), `$7` most
    /// readers, `$8` channel → rows in order: the answer (`acquired`, `held`, `queued`,
    /// `extended`, `freed`, `kept`, `not_held`, `state`) with the lease it concerns, then
    /// for `held`, `queued` and `state` the live holders (`write`, then each `read` in
    /// token order) and a live `intent`: kind, leader id, token, acquired, expires.
    pub(crate) call: String,
}

impl SharedSql {
    /// The statements of `table`'s read/write locks.
    pub(crate) fn new(table: &Table) -> SharedSql {
        let (rw_table, hold_table) = (table.rw(), table.rw_holders());
        let function = table.rw_function();
        let (rw, hold, f) = (rw_table.quoted(), hold_table.quoted(), function.quoted());
        SharedSql {
            create_rw: create_rw(rw),
            create_hold: create_hold(hold),
            function: format!("{f}{SIGNATURE}"),
            create_function: create_function(f, rw, hold),
            rw: rw_table.clone(),
            hold: hold_table.clone(),
            call: format!(
                "SELECT o_kind, o_leader, o_token, o_acquired, o_expires
                FROM {f}($1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint,
                    $7::integer, $8::text)
                ORDER BY o_i"
            ),
        }
    }
}

/// One row per name ever taken in either role: its fencing counter (one for both roles,
/// kept when the holders leave) and a waiting writer's intent.
fn create_rw(rw: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {rw} (
            name text COLLATE \"C\" PRIMARY KEY,
            last_token bigint NOT NULL,
            intent_owner text,
            intent_leader_id text,
            intent_expires_at timestamptz
        )"
    )
}

/// One row per reader or writer, keyed by its token (unique per name, growing with each
/// grant, so readers in token order are in the order they came).
fn create_hold(hold: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {hold} (
            name text COLLATE \"C\" NOT NULL,
            fencing_token bigint NOT NULL,
            role text NOT NULL,
            owner text NOT NULL,
            leader_id text NOT NULL,
            acquired_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            released boolean NOT NULL,
            PRIMARY KEY (name, fencing_token)
        )"
    )
}

/// The function: `SharedRecord`'s rules on the server's clock (`clock_timestamp()`, read
/// once), under the name's row lock (`FOR UPDATE`; an acquire of a name without a row
/// makes it with `INSERT … ON CONFLICT DO NOTHING` and locks it then, so concurrent
/// acquires of one name queue on it). `state` takes the row `FOR SHARE`, so its holders
/// and intent are of one moment. Tokens are `max(last + 1, clock µs)`, as the exclusive
/// locks'. A freed hold (or a withdrawn intent) notifies the table's channel with the
/// name alone: a wake-up, with no token an observer of the exclusive lock of the same
/// name could take for its holder's.
///
/// Its cost is its statements and expressions more than their index lookups: each
/// statement's executor state and each PL/pgSQL expression is set up again in every
/// transaction, so on every call. So the usual calls run two statements: the row lock,
/// then one that reads the name's holders and, when they allow it, writes (an
/// uncontended acquire: the hold's insert and the counter's update; a release: the
/// hold's delete and the notification) and returns the answer. When that statement
/// returns no row, nothing was written and the call runs the rules step by step: one
/// read of the holders that gives every count and check (`look`), the pruning of holds
/// that ran out when there are some, the one write the answer needs, and the rewrite of
/// the name's row when it changed. `plan_cache_mode = force_generic_plan` plans each
/// statement once per session (a custom plan, chosen for statements of several
/// `WITH` parts, would plan it again on every call). With sequential and bitmap scans
/// off, the holders are read with plain index scans, which mark the index entries of
/// released holds dead as they pass them, so a busy name's lookups stay short between
/// two vacuums (a bitmap scan marks none, and reads every entry a released hold left).
fn create_function(f: &str, rw: &str, hold: &str) -> String {
    format!(
        r#"CREATE FUNCTION {f}(p_op text, p_name text, p_owner text, p_leader text,
    p_role text, p_micros bigint, p_max integer, p_channel text)
RETURNS TABLE (o_i integer, o_kind text, o_leader text, o_token bigint,
    o_acquired timestamptz, o_expires timestamptz)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $leader$
DECLARE
    t_now timestamptz := clock_timestamp();
    t_exp timestamptz;
    t_created boolean;
    t_parent {rw}%ROWTYPE;
    -- What `look` reads of the name's holders.
    t_holders bigint;
    t_bad boolean;
    t_writers bigint;
    t_expired bigint;
    t_live_writers bigint;
    t_live_readers bigint;
    t_own bigint;
    t_next bigint;
    t_counter bigint;
    t_intent_owner text;
    t_intent_leader text;
    t_intent_expires timestamptz;
    t_result text;
BEGIN
    IF p_op = 'state' THEN
        SELECT * INTO t_parent FROM {rw} AS p WHERE p.name = p_name FOR SHARE;
    ELSE
        SELECT * INTO t_parent FROM {rw} AS p WHERE p.name = p_name FOR UPDATE;
        IF FOUND AND p_op = 'acquire' THEN
            -- The usual acquire, in one statement: the grant on a sound name without a
            -- waiting writer, a hold that ran out or one of the caller's own, when the
            -- role allows (a reader: no writer and fewer readers than the most; a
            -- writer: no holder). Any other case writes nothing and returns no row,
            -- and is decided below. The usual calls evaluate few PL/pgSQL expressions
            -- and small statements: each expression and each statement's plan is set up
            -- again in every transaction, so on every call.
            RETURN QUERY
            WITH look AS (
                SELECT count(*) AS holders,
                    count(*) FILTER (WHERE h.role = 'read') AS readers,
                    coalesce(bool_or(h.role <> 'read' OR h.owner = p_owner
                        OR h.owner !~ '^[0-9a-f]{{32}}$'
                        OR h.fencing_token < 0 OR h.fencing_token > t_parent.last_token
                        OR h.expires_at <= t_now), false) AS busy
                FROM {hold} AS h WHERE h.name = p_name
            ), granted AS (
                INSERT INTO {hold} (name, fencing_token, role, owner, leader_id,
                    acquired_at, expires_at, released)
                SELECT p_name, GREATEST(t_parent.last_token + 1,
                        (extract(epoch FROM t_now) * 1000000)::bigint),
                    p_role, p_owner, p_leader, t_now,
                    t_now + p_micros * interval '1 microsecond', false
                FROM look
                WHERE t_parent.last_token >= 0 AND t_parent.intent_owner IS NULL
                    AND t_parent.intent_leader_id IS NULL
                    AND t_parent.intent_expires_at IS NULL
                    AND CASE p_role
                        WHEN 'read' THEN NOT look.busy AND look.readers < p_max
                        WHEN 'write' THEN look.holders = 0
                        ELSE false
                    END
                RETURNING fencing_token, acquired_at, expires_at
            ), counted AS (
                UPDATE {rw} AS p SET last_token = g.fencing_token
                FROM granted AS g WHERE p.name = p_name
            )
            SELECT 0, 'acquired'::text, p_leader, g.fencing_token, g.acquired_at,
                g.expires_at
            FROM granted AS g;
            IF FOUND THEN
                RETURN;
            END IF;
        ELSIF FOUND AND p_op = 'release' THEN
            -- The usual release, in one statement: the free of the caller's hold held
            -- for its minimum lease, on a sound name without a waiting writer, a hold
            -- that ran out or a holder in the other role. Else as for an acquire.
            RETURN QUERY
            WITH look AS (
                SELECT count(*) AS holders,
                    min(h.fencing_token) FILTER (WHERE h.owner = p_owner
                        AND NOT h.released) AS own,
                    bool_or(h.role <> p_role OR h.owner !~ '^[0-9a-f]{{32}}$'
                        OR h.fencing_token < 0 OR h.fencing_token > t_parent.last_token
                        OR h.expires_at <= t_now) AS odd
                FROM {hold} AS h WHERE h.name = p_name
            ), freed AS (
                DELETE FROM {hold} AS h USING look
                WHERE h.name = p_name AND h.fencing_token = look.own AND NOT look.odd
                    AND (p_role = 'read' OR look.holders = 1)
                    AND t_parent.last_token >= 0 AND t_parent.intent_owner IS NULL
                    AND t_parent.intent_leader_id IS NULL
                    AND t_parent.intent_expires_at IS NULL
                    AND h.acquired_at + p_micros * interval '1 microsecond' <= t_now
                RETURNING pg_notify(p_channel, p_name)
            )
            SELECT 0, 'freed'::text, NULL::text, NULL::bigint, NULL::timestamptz,
                NULL::timestamptz
            FROM freed;
            IF FOUND THEN
                RETURN;
            END IF;
        ELSIF p_op = 'acquire' THEN
            INSERT INTO {rw} (name, last_token) VALUES (p_name, 0)
            ON CONFLICT (name) DO NOTHING;
            t_created := FOUND;
            SELECT * INTO t_parent FROM {rw} AS p WHERE p.name = p_name FOR UPDATE;
        END IF;
    END IF;
    IF t_parent.name IS NULL THEN
        -- No row: nobody ever took it (holders without their row are seen by an acquire,
        -- which makes the row and so takes this path never).
        o_i := 0;
        o_kind := CASE WHEN p_op = 'state' THEN 'state' ELSE 'not_held' END;
        RETURN NEXT;
        RETURN;
    END IF;
    IF t_parent.last_token < 0
        OR (t_parent.intent_owner IS NULL) <> (t_parent.intent_leader_id IS NULL)
        OR (t_parent.intent_owner IS NULL) <> (t_parent.intent_expires_at IS NULL)
        OR t_parent.intent_owner !~ '^[0-9a-f]{{32}}$'
    THEN
        RAISE EXCEPTION 'a read/write lock record in a shape this backend never writes'
            USING ERRCODE = '{CORRUPT}';
    END IF;
    t_counter := t_parent.last_token;
    t_intent_owner := t_parent.intent_owner;
    t_intent_leader := t_parent.intent_leader_id;
    t_intent_expires := t_parent.intent_expires_at;
    IF t_intent_expires <= t_now THEN
        t_intent_owner := NULL;
        t_intent_leader := NULL;
        t_intent_expires := NULL;
    END IF;
    IF p_op IN ('acquire', 'extend') THEN
        t_exp := t_now + p_micros * interval '1 microsecond';
    END IF;
    t_next := GREATEST(t_counter + 1, (extract(epoch FROM t_now) * 1000000)::bigint);
    -- look: every holder of the name, once. A live hold is one that has not run out;
    -- `t_own` is the caller's own live, unreleased hold in the role asked (the oldest).
    SELECT count(*),
        coalesce(bool_or(h.role NOT IN ('read', 'write')
            OR h.owner !~ '^[0-9a-f]{{32}}$'
            OR h.fencing_token < 0 OR h.fencing_token > t_parent.last_token), false),
        count(*) FILTER (WHERE h.role = 'write'),
        count(*) FILTER (WHERE h.expires_at <= t_now),
        count(*) FILTER (WHERE h.role = 'write' AND h.expires_at > t_now),
        count(*) FILTER (WHERE h.role = 'read' AND h.expires_at > t_now),
        min(h.fencing_token) FILTER (WHERE h.role = p_role AND h.owner = p_owner
            AND NOT h.released AND h.expires_at > t_now)
    INTO t_holders, t_bad, t_writers, t_expired, t_live_writers, t_live_readers, t_own
    FROM {hold} AS h WHERE h.name = p_name;
    IF t_bad OR (t_created IS TRUE AND t_holders > 0) OR t_writers > 1 THEN
        RAISE EXCEPTION 'a read/write lock record in a shape this backend never writes'
            USING ERRCODE = '{CORRUPT}';
    END IF;
    IF p_op <> 'state' AND t_expired > 0 THEN
        DELETE FROM {hold} AS h WHERE h.name = p_name AND h.expires_at <= t_now;
    END IF;

    IF p_op = 'acquire' THEN
        IF t_own IS NOT NULL THEN
            -- The caller's own hold in this role: renewed.
            UPDATE {hold} AS h SET expires_at = t_exp
            WHERE h.name = p_name AND h.fencing_token = t_own
            RETURNING h.leader_id, h.fencing_token, h.acquired_at
            INTO o_leader, o_token, o_acquired;
            t_result := 'acquired';
        ELSIF p_role = 'read' THEN
            IF t_live_writers > 0 OR t_intent_owner <> p_owner
                OR t_live_readers >= p_max
            THEN
                t_result := 'held';
            ELSE
                t_result := 'grant';
            END IF;
        ELSIF t_live_writers > 0 OR t_intent_owner <> p_owner THEN
            t_result := 'held';
        ELSIF t_live_readers > 0 THEN
            t_intent_owner := p_owner;
            t_intent_leader := p_leader;
            t_intent_expires := t_exp;
            t_result := 'queued';
        ELSE
            t_intent_owner := NULL;
            t_intent_leader := NULL;
            t_intent_expires := NULL;
            t_result := 'grant';
        END IF;
        IF t_result = 'grant' THEN
            t_counter := t_next;
            INSERT INTO {hold} (name, fencing_token, role, owner, leader_id, acquired_at,
                expires_at, released)
            VALUES (p_name, t_counter, CASE WHEN p_role = 'read' THEN 'read' ELSE 'write' END,
                p_owner, p_leader, t_now, t_exp, false);
            t_result := 'acquired';
            o_leader := p_leader;
            o_token := t_counter;
            o_acquired := t_now;
        END IF;
        IF t_result = 'acquired' THEN
            o_expires := t_exp;
        END IF;
    ELSIF p_op = 'extend' THEN
        UPDATE {hold} AS h SET expires_at = t_exp
        WHERE h.name = p_name AND h.role = p_role AND h.owner = p_owner AND NOT h.released;
        IF FOUND THEN
            t_result := 'extended';
            o_expires := t_exp;
        ELSE
            t_result := 'not_held';
        END IF;
    ELSIF p_op = 'release' THEN
        IF t_own IS NOT NULL THEN
            -- Freed when it was held for the minimum lease (`p_micros`), else kept
            -- until then.
            DELETE FROM {hold} AS h
            WHERE h.name = p_name AND h.fencing_token = t_own
                AND h.acquired_at + p_micros * interval '1 microsecond' <= t_now;
            IF FOUND THEN
                t_result := 'freed';
            ELSE
                UPDATE {hold} AS h SET released = true,
                    expires_at = LEAST(h.expires_at,
                        h.acquired_at + p_micros * interval '1 microsecond')
                WHERE h.name = p_name AND h.fencing_token = t_own;
                t_result := 'kept';
            END IF;
        ELSIF p_role = 'write' AND t_intent_owner = p_owner THEN
            t_intent_owner := NULL;
            t_intent_leader := NULL;
            t_intent_expires := NULL;
            t_result := 'freed';
        ELSE
            t_result := 'not_held';
        END IF;
        IF t_result = 'freed' THEN
            PERFORM pg_notify(p_channel, p_name);
        END IF;
    ELSE
        t_result := 'state';
    END IF;

    IF p_op <> 'state' AND (t_counter, t_intent_owner, t_intent_leader, t_intent_expires)
        IS DISTINCT FROM (t_parent.last_token, t_parent.intent_owner,
            t_parent.intent_leader_id, t_parent.intent_expires_at)
    THEN
        UPDATE {rw} AS p SET last_token = t_counter, intent_owner = t_intent_owner,
            intent_leader_id = t_intent_leader, intent_expires_at = t_intent_expires
        WHERE p.name = p_name;
    END IF;
    o_i := 0;
    o_kind := t_result;
    RETURN NEXT;
    IF t_result IN ('held', 'queued', 'state') THEN
        RETURN QUERY
            SELECT (row_number() OVER (ORDER BY h.role = 'read', h.fencing_token))::integer,
                h.role, h.leader_id, h.fencing_token, h.acquired_at, h.expires_at
            FROM {hold} AS h WHERE h.name = p_name AND h.expires_at > t_now;
        IF t_intent_expires > t_now THEN
            o_i := 2147483647;
            o_kind := 'intent';
            o_leader := t_intent_leader;
            o_token := NULL;
            o_acquired := NULL;
            o_expires := t_intent_expires;
            RETURN NEXT;
        END IF;
    END IF;
    RETURN;
END
$leader$"#
    )
}
