//! The four primitives, each one short transaction on a connection. Plain functions with
//! no knowledge of threads or runtimes: the blocking and the async paths both call them.
//!
//! Times are read after the transaction has the write lock (`BEGIN IMMEDIATE`), so a wait
//! for another process never makes them stale.

use std::time::Duration;

use leader_core::kit::Released;
use leader_core::{
    AcquireOutcome, ExtendOutcome, LeaderLease, LeaderState, Lease, LockName, OwnerToken,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::error::OpError;
use crate::time::{HostClock, Now, micros};

/// The `owner` of a lock released before its minimum lease ran out: held, by nobody.
const RELEASED: &str = "released";

/// `try_acquire`'s arguments, owned (a call may move to a pool thread).
pub(crate) use leader_core::kit::calls::{self, Acquire};

/// The condition of a live row: held (a released-but-minimum-lease row included), written
/// in this boot, and not expired on this boot's monotonic clock. `?2` is the boot id,
/// `?3` the monotonic clock now. (A macro, so that the statements below are constants.)
macro_rules! live {
    () => {
        "owner IS NOT NULL AND boot_id = ?2 AND expires_us > ?3"
    };
}

/// [`live!`] as a string, for statements built at run time.
pub(crate) const LIVE: &str = live!();

// Every statement of a primitive is prepared once per connection and kept in its cache
// (`prepare_cached`): parsing and planning them again on every call cost more than the
// rows they touch.

/// The live holder of `?1`.
const LIVE_HOLDER: &str = concat!(
    "SELECT owner, leader_id, fencing_token, acquired_us, expires_us
     FROM leader_locks WHERE name = ?1 AND ",
    live!()
);
/// Renews the live holder `?4` of `?1` to `?5`.
const EXTEND: &str = concat!(
    "UPDATE leader_locks SET expires_us = ?5 WHERE name = ?1 AND owner = ?4 AND ",
    live!()
);
const RENEW_OWN: &str = "UPDATE leader_locks SET expires_us = ?2 WHERE name = ?1";
const LAST_TOKEN: &str = "SELECT last_token FROM leader_fences WHERE name = ?1";
const SET_TOKEN: &str = "INSERT INTO leader_fences (name, last_token) VALUES (?1, ?2)
     ON CONFLICT (name) DO UPDATE SET last_token = excluded.last_token";
const TAKE: &str = "INSERT INTO leader_locks
         (name, owner, leader_id, fencing_token, boot_id, acquired_us, expires_us)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,
         leader_id = excluded.leader_id, fencing_token = excluded.fencing_token,
         boot_id = excluded.boot_id, acquired_us = excluded.acquired_us,
         expires_us = excluded.expires_us";
const OWNED: &str = "SELECT acquired_us, expires_us, boot_id = ?3 FROM leader_locks
     WHERE name = ?1 AND owner = ?2";
const KEEP: &str = "UPDATE leader_locks SET owner = ?2, expires_us = ?3 WHERE name = ?1";
const FREE: &str = "UPDATE leader_locks SET owner = NULL, boot_id = ?2, expires_us = ?3
     WHERE name = ?1";

/// A live lock row.
pub(crate) struct Holder {
    owner: Option<String>,
    leader_id: String,
    fencing_token: i64,
    acquired_us: i64,
    expires_us: i64,
}

impl Holder {
    /// The columns `owner, leader_id, fencing_token, acquired_us, expires_us`, in order.
    pub(crate) fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Holder {
            owner: row.get(0)?,
            leader_id: row.get(1)?,
            fencing_token: row.get(2)?,
            acquired_us: row.get(3)?,
            expires_us: row.get(4)?,
        })
    }

    /// The holder as callers see it: its times on the wall clock, read at `now`.
    pub(crate) fn snapshot(&self, now: &Now) -> Result<LeaderLease, OpError> {
        Ok(LeaderLease::new(
            self.leader_id.clone(),
            now.wall_time(self.acquired_us)?,
            now.wall_time(self.expires_us)?,
            token(self.fencing_token)?,
        ))
    }
}

fn token(stored: i64) -> Result<u64, OpError> {
    u64::try_from(stored).map_err(|_| OpError::Corrupt("a negative fencing token"))
}

/// The lock's row while someone holds it (a released-but-minimum-lease row included).
pub(crate) fn live_holder(
    conn: &Connection,
    key: &LockName,
    clock: &HostClock,
    now: &Now,
) -> Result<Option<Holder>, OpError> {
    Ok(conn
        .prepare_cached(LIVE_HOLDER)?
        .query_row(params![key.as_str(), clock.boot(), now.at], Holder::read)
        .optional()?)
}

/// Takes the lock if it is free, expired or already `request.owner`'s. A new holder's
/// fencing token is `max(last + 1, wall clock in µs)`, from the counter table.
pub(crate) fn acquire(
    conn: &mut Connection,
    clock: &HostClock,
    request: &Acquire,
) -> Result<AcquireOutcome, OpError> {
    in_transaction(conn, |tx| acquire_in(tx, clock, request))
}

/// [`acquire`] inside a transaction that has the write lock.
fn acquire_in(
    tx: &Connection,
    clock: &HostClock,
    request: &Acquire,
) -> Result<AcquireOutcome, OpError> {
    let now = clock.now()?;
    let expires_us = now.after(request.lease_time)?;
    let owner = request.owner.to_string();
    let outcome = match live_holder(tx, &request.key, clock, &now)? {
        Some(holder) if holder.owner.as_deref() == Some(owner.as_str()) => {
            // The same owner again: a renewal that keeps the fencing token.
            tx.prepare_cached(RENEW_OWN)?
                .execute(params![request.key.as_str(), expires_us])?;
            AcquireOutcome::Acquired(Lease::new(
                request.key.clone(),
                request.owner,
                holder.leader_id,
                token(holder.fencing_token)?,
                now.wall_time(holder.acquired_us)?,
                now.wall_time(expires_us)?,
            ))
        }
        Some(holder) => AcquireOutcome::Held(Some(holder.snapshot(&now)?)),
        None => {
            let last: Option<i64> = tx
                .prepare_cached(LAST_TOKEN)?
                .query_row(params![request.key.as_str()], |row| row.get(0))
                .optional()?;
            let next = match last {
                Some(last) => last
                    .checked_add(1)
                    .ok_or(OpError::Corrupt("the fencing counter is at its maximum"))?,
                None => 1,
            };
            let fencing_token = next.max(now.token_floor()?);
            tx.prepare_cached(SET_TOKEN)?
                .execute(params![request.key.as_str(), fencing_token])?;
            tx.prepare_cached(TAKE)?.execute(params![
                request.key.as_str(),
                owner,
                request.leader_id,
                fencing_token,
                clock.boot(),
                now.at,
                expires_us
            ])?;
            AcquireOutcome::Acquired(Lease::new(
                request.key.clone(),
                request.owner,
                request.leader_id.clone(),
                token(fencing_token)?,
                now.wall_time(now.at)?,
                now.wall_time(expires_us)?,
            ))
        }
    };
    Ok(outcome)
}

/// Renews `lease` for `lease_time` from now if its owner still holds it.
pub(crate) fn extend(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
    owner: OwnerToken,
    lease_time: Duration,
) -> Result<ExtendOutcome, OpError> {
    in_transaction(conn, |tx| extend_in(tx, clock, key, owner, lease_time))
}

/// [`extend`] inside a transaction that has the write lock.
fn extend_in(
    tx: &Connection,
    clock: &HostClock,
    key: &LockName,
    owner: OwnerToken,
    lease_time: Duration,
) -> Result<ExtendOutcome, OpError> {
    let now = clock.now()?;
    let expires_us = now.after(lease_time)?;
    let changed = tx.prepare_cached(EXTEND)?.execute(params![
        key.as_str(),
        clock.boot(),
        now.at,
        owner.to_string(),
        expires_us
    ])?;
    Ok(match changed {
        0 => ExtendOutcome::NotHeld,
        _ => ExtendOutcome::Extended {
            expires_at: now.wall_time(expires_us)?,
        },
    })
}

/// Frees the lock if `owner` holds it, or keeps it, held by nobody, until
/// `acquired_at + min_lease_time` when that is still ahead (a minimum lease beyond what
/// the tables hold keeps it until its expiry).
pub(crate) fn release(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
    owner: OwnerToken,
    min_lease_time: Duration,
) -> Result<Released, OpError> {
    in_transaction(conn, |tx| release_in(tx, clock, key, owner, min_lease_time))
}

/// [`release`] inside a transaction that has the write lock.
fn release_in(
    tx: &Connection,
    clock: &HostClock,
    key: &LockName,
    owner: OwnerToken,
    min_lease_time: Duration,
) -> Result<Released, OpError> {
    let now = clock.now()?;
    let row: Option<(i64, i64, bool)> = tx
        .prepare_cached(OWNED)?
        .query_row(
            params![key.as_str(), owner.to_string(), clock.boot()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let released = match row {
        None => Released::NotHeld,
        Some((acquired_us, expires_us, this_boot)) => {
            let keep_until = micros(min_lease_time)
                .and_then(|min| acquired_us.checked_add(min))
                .unwrap_or(i64::MAX);
            let live = this_boot && expires_us > now.at;
            if !min_lease_time.is_zero() && live && keep_until > now.at {
                tx.prepare_cached(KEEP)?.execute(params![
                    key.as_str(),
                    RELEASED,
                    expires_us.min(keep_until)
                ])?;
                Released::Kept
            } else {
                tx.prepare_cached(FREE)?
                    .execute(params![key.as_str(), clock.boot(), now.at])?;
                Released::Freed
            }
        }
    };
    Ok(released)
}

/// Runs `body` in one transaction that takes the write lock up front (`BEGIN
/// IMMEDIATE`), so two processes never both read a lock free and then both try to write
/// (which SQLite would fail with `SQLITE_BUSY`); commits what it did, or rolls it all
/// back on its error. `body` reads the clocks itself, once it has the lock.
fn in_transaction<T>(
    conn: &mut Connection,
    body: impl FnOnce(&Connection) -> Result<T, OpError>,
) -> Result<T, OpError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let answer = body(&tx)?;
    tx.commit()?;
    Ok(answer)
}

/// The most requests one batch transaction carries. It holds the file's write lock (and
/// this process's connection) throughout, so other calls wait for one chunk at most.
pub(crate) const CHUNK: usize = 500;

/// One chunk of a batch form: one transaction, each request's primitive run inside it as
/// its single call runs it, under a savepoint of its own, so that a request answered with
/// its own error leaves nothing behind (as its single call would). A failure of SQLite
/// itself (the disk, the lock) is the `Err` of the whole chunk, and nothing of it is
/// written. The answers are in the order of `chunk`.
fn chunk_in_transaction<I, T>(
    conn: &mut Connection,
    chunk: &[I],
    body: impl Fn(&Connection, &I) -> Result<T, OpError>,
) -> Result<Vec<Result<T, OpError>>, OpError> {
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut answers = Vec::with_capacity(chunk.len());
    for item in chunk {
        let savepoint = tx.savepoint()?;
        match body(&savepoint, item) {
            Ok(answer) => {
                savepoint.commit()?;
                answers.push(Ok(answer));
            }
            // SQLite itself failed: the transaction may be gone already.
            Err(OpError::Sqlite(err)) => return Err(OpError::Sqlite(err)),
            // The request's own error (a corrupted row, a lease too long): its savepoint
            // is rolled back as it is dropped.
            Err(failure) => answers.push(Err(failure)),
        }
    }
    tx.commit()?;
    Ok(answers)
}

/// [`acquire`] for each of `requests`, in one transaction (see
/// [`chunk_in_transaction`]).
pub(crate) fn acquire_chunk(
    conn: &mut Connection,
    clock: &HostClock,
    requests: &[Acquire],
) -> Result<Vec<Result<AcquireOutcome, OpError>>, OpError> {
    chunk_in_transaction(conn, requests, |tx, request| acquire_in(tx, clock, request))
}

/// [`extend`] for each of `renewals`, in one transaction (see [`chunk_in_transaction`]).
pub(crate) fn extend_chunk(
    conn: &mut Connection,
    clock: &HostClock,
    renewals: &[calls::Extend],
) -> Result<Vec<Result<ExtendOutcome, OpError>>, OpError> {
    chunk_in_transaction(conn, renewals, |tx, r| {
        extend_in(tx, clock, &r.lease.key, r.lease.owner, r.lease_time)
    })
}

/// [`release`] for each of `releases`, in one transaction (see [`chunk_in_transaction`]).
pub(crate) fn release_chunk(
    conn: &mut Connection,
    clock: &HostClock,
    releases: &[calls::Release],
) -> Result<Vec<Result<Released, OpError>>, OpError> {
    chunk_in_transaction(conn, releases, |tx, r| {
        release_in(tx, clock, &r.lease.key, r.lease.owner, r.min_lease_time)
    })
}

/// Who holds the lock now, never an expired holder.
pub(crate) fn state(
    conn: &Connection,
    clock: &HostClock,
    key: &LockName,
) -> Result<LeaderState, OpError> {
    let now = clock.now()?;
    Ok(match live_holder(conn, key, clock, &now)? {
        Some(holder) => LeaderState::occupied(key.as_str(), holder.snapshot(&now)?),
        None => LeaderState::empty(key.as_str()),
    })
}
