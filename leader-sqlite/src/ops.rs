//! The four primitives, each one short transaction on a connection. Plain functions with
//! no knowledge of threads or runtimes: the blocking and the async paths both call them.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, ExtendOutcome, LeaderLease, LeaderState, Lease, LockName, OwnerToken,
    ReleaseOutcome,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::error::OpFailure;
use crate::time::{micros, now_micros, time};

/// The `owner` of a lock released before its minimum lease ran out: held, by nobody.
const RELEASED: &str = "released";

/// `try_acquire`'s arguments, owned: the one type every backend moves to its worker.
pub(crate) use leader_core::__private::OwnedAcquire as Acquire;

/// A live lock row.
pub(crate) struct Holder {
    owner: Option<String>,
    leader_id: String,
    fencing_token: i64,
    acquired_at: i64,
    expires_at: i64,
}

impl Holder {
    pub(crate) fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Holder {
            owner: row.get(0)?,
            leader_id: row.get(1)?,
            fencing_token: row.get(2)?,
            acquired_at: row.get(3)?,
            expires_at: row.get(4)?,
        })
    }

    pub(crate) fn snapshot(&self) -> Result<LeaderLease, OpFailure> {
        Ok(LeaderLease::new(
            self.leader_id.clone(),
            time(self.acquired_at)?,
            time(self.expires_at)?,
            token(self.fencing_token)?,
        ))
    }
}

fn token(stored: i64) -> Result<u64, OpFailure> {
    u64::try_from(stored).map_err(|_| OpFailure::Corrupt("a negative fencing token"))
}

/// The lock's row while someone holds it (a released-but-minimum-lease row included).
pub(crate) fn live_holder(
    conn: &Connection,
    key: &LockName,
    now: i64,
) -> Result<Option<Holder>, OpFailure> {
    Ok(conn
        .query_row(
            "SELECT owner, leader_id, fencing_token, acquired_at, expires_at FROM leader_locks
             WHERE name = ?1 AND owner IS NOT NULL AND expires_at > ?2",
            params![key.as_str(), now],
            Holder::read,
        )
        .optional()?)
}

/// Takes the lock if it is free, expired or already `request.owner`'s. A new holder's
/// fencing token is `max(last + 1, now in µs)`, from the counter table.
pub(crate) fn acquire(
    conn: &mut Connection,
    request: &Acquire,
) -> Result<AcquireOutcome, OpFailure> {
    // IMMEDIATE: the write lock is taken up front, so two processes never both read the
    // lock free and then both try to write (which SQLite would fail with SQLITE_BUSY).
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_micros()?;
    let expires_at = now.saturating_add(micros(request.lease_time));
    let owner = request.owner.to_string();
    let outcome = match live_holder(&tx, &request.key, now)? {
        Some(holder) if holder.owner.as_deref() == Some(owner.as_str()) => {
            // The same owner again: a renewal that keeps the fencing token.
            tx.execute(
                "UPDATE leader_locks SET expires_at = ?2 WHERE name = ?1",
                params![request.key.as_str(), expires_at],
            )?;
            AcquireOutcome::Acquired(Lease::new(
                request.key.clone(),
                request.owner,
                holder.leader_id,
                token(holder.fencing_token)?,
                time(holder.acquired_at)?,
                time(expires_at)?,
            ))
        }
        Some(holder) => AcquireOutcome::Held(Some(holder.snapshot()?)),
        None => {
            let last: Option<i64> = tx
                .query_row(
                    "SELECT last_token FROM leader_fences WHERE name = ?1",
                    params![request.key.as_str()],
                    |row| row.get(0),
                )
                .optional()?;
            let next = match last {
                Some(last) => last
                    .checked_add(1)
                    .ok_or(OpFailure::Corrupt("the fencing counter is at its maximum"))?,
                None => 1,
            };
            let fencing_token = next.max(now);
            tx.execute(
                "INSERT INTO leader_fences (name, last_token) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET last_token = excluded.last_token",
                params![request.key.as_str(), fencing_token],
            )?;
            tx.execute(
                "INSERT INTO leader_locks (name, owner, leader_id, fencing_token, acquired_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,
                     leader_id = excluded.leader_id, fencing_token = excluded.fencing_token,
                     acquired_at = excluded.acquired_at, expires_at = excluded.expires_at",
                params![
                    request.key.as_str(),
                    owner,
                    request.leader_id,
                    fencing_token,
                    now,
                    expires_at
                ],
            )?;
            AcquireOutcome::Acquired(Lease::new(
                request.key.clone(),
                request.owner,
                request.leader_id.clone(),
                token(fencing_token)?,
                time(now)?,
                time(expires_at)?,
            ))
        }
    };
    tx.commit()?;
    Ok(outcome)
}

/// Renews `lease` for `lease_time` from now if its owner still holds it.
pub(crate) fn extend(
    conn: &Connection,
    key: &LockName,
    owner: OwnerToken,
    lease_time: Duration,
) -> Result<ExtendOutcome, OpFailure> {
    let now = now_micros()?;
    let expires_at = now.saturating_add(micros(lease_time));
    let changed = conn.execute(
        "UPDATE leader_locks SET expires_at = ?3
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?4",
        params![key.as_str(), owner.to_string(), expires_at, now],
    )?;
    Ok(match changed {
        0 => ExtendOutcome::NotHeld,
        _ => ExtendOutcome::Extended {
            expires_at: time(expires_at)?,
        },
    })
}

/// What a release did, for the backend to notify waiters when the lock became free.
pub(crate) enum Released {
    /// The lock is free now.
    Freed,
    /// The lock stays taken until the end of its minimum lease.
    Kept,
    /// The caller did not hold it.
    NotHeld,
}

impl Released {
    pub(crate) fn outcome(&self) -> ReleaseOutcome {
        match self {
            Released::Freed | Released::Kept => ReleaseOutcome::Released,
            Released::NotHeld => ReleaseOutcome::NotHeld,
        }
    }
}

/// Frees the lock if `owner` holds it, or keeps it, held by nobody, until
/// `acquired_at + min_lease_time` when that is still ahead.
pub(crate) fn release(
    conn: &mut Connection,
    key: &LockName,
    owner: OwnerToken,
    min_lease_time: Duration,
) -> Result<Released, OpFailure> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_micros()?;
    let row: Option<(i64, i64)> = tx
        .query_row(
            "SELECT acquired_at, expires_at FROM leader_locks WHERE name = ?1 AND owner = ?2",
            params![key.as_str(), owner.to_string()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let released = match row {
        None => Released::NotHeld,
        Some((acquired_at, expires_at)) => {
            let keep_until = acquired_at.saturating_add(micros(min_lease_time));
            if !min_lease_time.is_zero() && keep_until > now && expires_at > now {
                tx.execute(
                    "UPDATE leader_locks SET owner = ?2, expires_at = ?3 WHERE name = ?1",
                    params![key.as_str(), RELEASED, expires_at.min(keep_until)],
                )?;
                Released::Kept
            } else {
                tx.execute(
                    "UPDATE leader_locks SET owner = NULL, expires_at = ?2 WHERE name = ?1",
                    params![key.as_str(), now],
                )?;
                Released::Freed
            }
        }
    };
    tx.commit()?;
    Ok(released)
}

/// Who holds the lock now, never an expired holder.
pub(crate) fn state(conn: &Connection, key: &LockName) -> Result<LeaderState, OpFailure> {
    let now = now_micros()?;
    Ok(match live_holder(conn, key, now)? {
        Some(holder) => LeaderState::occupied(key.as_str(), holder.snapshot()?),
        None => LeaderState::empty(key.as_str()),
    })
}
