//! Read/write locks: each call is one `BEGIN IMMEDIATE` transaction that reads the name's
//! record (`leader_rw` and its holders in `leader_rw_holders`), runs the kit's rules
//! ([`SharedRecord`]) on it at the host's monotonic clock, and writes back what changed.
//! Plain functions on a connection, like `ops`.
//!
//! Times are on the monotonic clock of the boot the row names (as the exclusive locks'):
//! a record written under another boot has no live holder and no intent, only its counter.
//! A refused acquire, extend or release writes nothing.

use std::time::Duration;

use leader_core::kit::{Intent, Released, SharedAnswer, SharedAsk, SharedHolder, SharedRecord};
use leader_core::{
    ExtendOutcome, LeaderLease, Lease, LockName, OwnerToken, Role, SharedOutcome, SharedState,
    WriterIntent,
};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::OpError;
use crate::time::{HostClock, Micros, Now};

/// `try_acquire_shared`'s arguments, owned (a call may move to a pool thread).
#[derive(Debug)]
pub struct AcquireShared {
    /// The lock, the owner, the node, the lease.
    pub(crate) acquire: leader_core::kit::calls::Acquire,
    /// Read or write.
    pub(crate) role: Role,
    /// For a read: the most readers with this one.
    pub(crate) max_readers: u32,
}

const PARENT: &str = "SELECT last_token, boot_id, intent_owner, intent_leader_id,
         intent_expires_us
     FROM leader_rw WHERE name = ?1";
const HOLDERS: &str = "SELECT fencing_token, role, owner, leader_id, acquired_us, expires_us,
         released
     FROM leader_rw_holders WHERE name = ?1 ORDER BY fencing_token";
const SAVE_PARENT: &str = "INSERT INTO leader_rw
         (name, last_token, boot_id, intent_owner, intent_leader_id, intent_expires_us)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (name) DO UPDATE SET last_token = excluded.last_token,
         boot_id = excluded.boot_id, intent_owner = excluded.intent_owner,
         intent_leader_id = excluded.intent_leader_id,
         intent_expires_us = excluded.intent_expires_us";
const SAVE_HOLDER: &str = "INSERT INTO leader_rw_holders
         (name, fencing_token, role, owner, leader_id, acquired_us, expires_us, released)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
     ON CONFLICT (name, fencing_token) DO UPDATE SET role = excluded.role,
         owner = excluded.owner, leader_id = excluded.leader_id,
         acquired_us = excluded.acquired_us, expires_us = excluded.expires_us,
         released = excluded.released";
const DROP_HOLDER: &str = "DELETE FROM leader_rw_holders WHERE name = ?1 AND fencing_token = ?2";

/// A name's record as stored, and as it stands now (holders of another boot dropped).
struct Loaded {
    /// The holders' rows as stored: (role, holder).
    stored: Vec<(Role, SharedHolder<Micros>)>,
    /// The record at this boot (not yet pruned).
    record: SharedRecord<Micros>,
}

fn corrupt(what: &'static str) -> OpError {
    OpError::Corrupt(what)
}

fn int(value: ValueRef<'_>, what: &'static str) -> Result<i64, OpError> {
    match value {
        ValueRef::Integer(value) => Ok(value),
        _ => Err(corrupt(what)),
    }
}

fn text(value: ValueRef<'_>, what: &'static str) -> Result<String, OpError> {
    match value {
        ValueRef::Text(bytes) => std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| corrupt(what)),
        _ => Err(corrupt(what)),
    }
}

fn owner(value: ValueRef<'_>) -> Result<OwnerToken, OpError> {
    let what = "a read/write lock's owner that is no owner token";
    text(value, what)?.parse().map_err(|_| corrupt(what))
}

fn token(value: i64) -> Result<u64, OpError> {
    u64::try_from(value).map_err(|_| corrupt("a negative fencing token"))
}

fn stored_token(value: u64) -> Result<i64, OpError> {
    i64::try_from(value).map_err(|_| corrupt("the fencing counter is at its maximum"))
}

/// One `leader_rw_holders` row, checked: any value this backend never writes is an error.
fn holder(row: &rusqlite::Row<'_>) -> Result<(Role, SharedHolder<Micros>), OpError> {
    let role = match text(row.get_ref(1)?, "a read/write lock's role that is not text")?.as_str() {
        "read" => Role::Read,
        "write" => Role::Write,
        _ => return Err(corrupt("a read/write lock's role other than read or write")),
    };
    let released = match int(row.get_ref(6)?, "a released flag that is not 0 or 1")? {
        0 => false,
        1 => true,
        _ => return Err(corrupt("a released flag that is not 0 or 1")),
    };
    let holder = SharedHolder {
        owner: owner(row.get_ref(2)?)?,
        node: text(row.get_ref(3)?, "a node id that is not text")?,
        token: token(int(
            row.get_ref(0)?,
            "a fencing token that is not an integer",
        )?)?,
        acquired: Micros(int(row.get_ref(4)?, "a time that is not an integer")?),
        expires: Micros(int(row.get_ref(5)?, "a time that is not an integer")?),
        released,
    };
    Ok((role, holder))
}

/// The parent row: (counter, boot, intent).
type Parent = (u64, String, Option<Intent<Micros>>);

fn parent(row: &rusqlite::Row<'_>) -> Result<Parent, OpError> {
    let counter = token(int(
        row.get_ref(0)?,
        "a fencing counter that is not an integer",
    )?)?;
    let boot = text(row.get_ref(1)?, "a boot id that is not text")?;
    let intent = match (row.get_ref(2)?, row.get_ref(3)?, row.get_ref(4)?) {
        (ValueRef::Null, ValueRef::Null, ValueRef::Null) => None,
        (who, node, expires) => Some(Intent {
            owner: owner(who)?,
            node: text(node, "an intent's node id that is not text")?,
            expires: Micros(int(expires, "an intent's expiry that is not an integer")?),
        }),
    };
    Ok((counter, boot, intent))
}

/// The record of `key`, checked, at this boot.
fn load(tx: &Connection, key: &LockName, clock: &HostClock) -> Result<Loaded, OpError> {
    let parent = {
        let mut statement = tx.prepare_cached(PARENT)?;
        let mut rows = statement.query(params![key.as_str()])?;
        match rows.next()? {
            Some(row) => Some(parent(row)?),
            None => None,
        }
    };
    let mut stored = Vec::new();
    {
        let mut statement = tx.prepare_cached(HOLDERS)?;
        let mut rows = statement.query(params![key.as_str()])?;
        while let Some(row) = rows.next()? {
            stored.push(holder(row)?);
        }
    }
    let Some((counter, boot, intent)) = parent else {
        if !stored.is_empty() {
            return Err(corrupt("read/write lock holders without their lock's row"));
        }
        return Ok(Loaded {
            stored,
            record: SharedRecord::default(),
        });
    };
    let mut record = SharedRecord {
        counter,
        ..SharedRecord::default()
    };
    for (role, holder) in &stored {
        if holder.token > counter {
            return Err(corrupt("a holder's fencing token above the lock's counter"));
        }
        match role {
            Role::Read => record.readers.push(holder.clone()),
            Role::Write if record.writer.is_none() => record.writer = Some(holder.clone()),
            Role::Write => return Err(corrupt("a read/write lock with two writers")),
        }
    }
    record.intent = intent;
    if boot != clock.boot() {
        // Written under another boot: its holders and intent did not survive the reboot.
        record.writer = None;
        record.readers.clear();
        record.intent = None;
    }
    Ok(Loaded { stored, record })
}

/// Writes `record` back over `loaded`: the row, and the holders that changed.
fn save(
    tx: &Connection,
    key: &LockName,
    clock: &HostClock,
    loaded: &Loaded,
    record: &SharedRecord<Micros>,
) -> Result<(), OpError> {
    let intent = record.intent.as_ref();
    tx.prepare_cached(SAVE_PARENT)?.execute(params![
        key.as_str(),
        stored_token(record.counter)?,
        clock.boot(),
        intent.map(|i| i.owner.to_string()),
        intent.map(|i| i.node.as_str()),
        intent.map(|i| i.expires.0),
    ])?;
    let now: Vec<(Role, &SharedHolder<Micros>)> = record
        .writer
        .iter()
        .map(|w| (Role::Write, w))
        .chain(record.readers.iter().map(|r| (Role::Read, r)))
        .collect();
    for (_, gone) in &loaded.stored {
        if !now.iter().any(|(_, h)| h.token == gone.token) {
            tx.prepare_cached(DROP_HOLDER)?
                .execute(params![key.as_str(), stored_token(gone.token)?])?;
        }
    }
    for (role, holder) in now {
        let same = loaded.stored.iter().any(|(r, h)| *r == role && h == holder);
        if !same {
            tx.prepare_cached(SAVE_HOLDER)?.execute(params![
                key.as_str(),
                stored_token(holder.token)?,
                role.as_str(),
                holder.owner.to_string(),
                holder.node,
                holder.acquired.0,
                holder.expires.0,
                holder.released,
            ])?;
        }
    }
    Ok(())
}

fn lease(holder: &SharedHolder<Micros>, now: &Now) -> Result<LeaderLease, OpError> {
    Ok(LeaderLease::new(
        holder.node.clone(),
        now.wall_time(holder.acquired.0)?,
        now.wall_time(holder.expires.0)?,
        holder.token,
    ))
}

/// The record as callers see it (pruned by the caller), times on the wall clock.
fn snapshot(
    record: &SharedRecord<Micros>,
    key: &LockName,
    now: &Now,
) -> Result<SharedState, OpError> {
    let intent = match &record.intent {
        Some(i) => Some(WriterIntent::new(
            i.node.clone(),
            now.wall_time(i.expires.0)?,
        )),
        None => None,
    };
    Ok(SharedState::new(
        key.as_str(),
        record.writer.as_ref().map(|w| lease(w, now)).transpose()?,
        record
            .readers
            .iter()
            .map(|r| lease(r, now))
            .collect::<Result<_, _>>()?,
        intent,
    ))
}

/// Runs `body` in one `BEGIN IMMEDIATE` transaction (as `ops` does): commits what it did,
/// or rolls it all back on its error.
fn in_transaction<T>(
    conn: &mut Connection,
    body: impl FnOnce(&Connection) -> Result<T, OpError>,
) -> Result<T, OpError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let answer = body(&tx)?;
    tx.commit()?;
    Ok(answer)
}

/// Acquires (or renews) `request`'s hold, or records a writer's intent. A grant's token
/// is `max(last + 1, wall clock in µs)`, as for the exclusive locks.
pub(crate) fn acquire(
    conn: &mut Connection,
    clock: &HostClock,
    request: &AcquireShared,
) -> Result<SharedOutcome, OpError> {
    in_transaction(conn, |tx| {
        let ask = &request.acquire;
        let now = clock.now()?;
        let expires = Micros(now.after(ask.lease_time)?);
        let floor = u64::try_from(now.token_floor()?).map_err(|_| OpError::Clock)?;
        let loaded = load(tx, &ask.key, clock)?;
        let mut record = loaded.record.clone();
        let answer = record.acquire(
            SharedAsk {
                role: request.role,
                owner: ask.owner,
                node: &ask.leader_id,
                expires,
                max_readers: request.max_readers,
                token_floor: floor,
            },
            Micros(now.at),
        );
        // A refusal changes nothing worth writing (only expired holds went).
        if answer != SharedAnswer::Held {
            save(tx, &ask.key, clock, &loaded, &record)?;
        }
        Ok(match answer {
            SharedAnswer::Acquired(holder) => SharedOutcome::Acquired(Lease::new(
                ask.key.clone(),
                ask.owner,
                holder.node.clone(),
                holder.token,
                now.wall_time(holder.acquired.0)?,
                now.wall_time(holder.expires.0)?,
            )),
            SharedAnswer::Held => SharedOutcome::Held(snapshot(&record, &ask.key, &now)?),
            SharedAnswer::Queued => SharedOutcome::Queued(snapshot(&record, &ask.key, &now)?),
        })
    })
}

/// Renews `owner`'s hold in `role` for `lease_time` from now.
pub(crate) fn extend(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
    owner: OwnerToken,
    role: Role,
    lease_time: Duration,
) -> Result<ExtendOutcome, OpError> {
    in_transaction(conn, |tx| {
        let now = clock.now()?;
        let expires = Micros(now.after(lease_time)?);
        let loaded = load(tx, key, clock)?;
        let mut record = loaded.record.clone();
        if record
            .extend(role, owner, expires, Micros(now.at))
            .is_none()
        {
            return Ok(ExtendOutcome::NotHeld);
        }
        save(tx, key, clock, &loaded, &record)?;
        Ok(ExtendOutcome::Extended {
            expires_at: now.wall_time(expires.0)?,
        })
    })
}

/// Ends `owner`'s hold in `role` (a writer with none: its intent), keeping a hold until
/// `acquired_at + min_lease_time`.
pub(crate) fn release(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
    owner: OwnerToken,
    role: Role,
    min_lease_time: Duration,
) -> Result<Released, OpError> {
    in_transaction(conn, |tx| {
        let now = clock.now()?;
        let loaded = load(tx, key, clock)?;
        let mut record = loaded.record.clone();
        record.prune(Micros(now.at));
        let mine = |h: &&SharedHolder<Micros>| h.owner == owner && !h.released;
        let held = match role {
            Role::Read => record.readers.iter().find(mine),
            Role::Write => record.writer.iter().find(mine),
        }
        .map(|h| h.token);
        if !record.release(role, owner, min_lease_time, Micros(now.at)) {
            return Ok(Released::NotHeld);
        }
        save(tx, key, clock, &loaded, &record)?;
        let kept = held.is_some_and(|token| {
            record
                .writer
                .iter()
                .chain(&record.readers)
                .any(|h| h.token == token)
        });
        Ok(if kept {
            Released::Kept
        } else {
            Released::Freed
        })
    })
}

/// A snapshot of `key`, never an expired hold; read in one (read) transaction.
pub(crate) fn state(
    conn: &mut Connection,
    clock: &HostClock,
    key: &LockName,
) -> Result<SharedState, OpError> {
    let tx = conn.transaction()?;
    let now = clock.now()?;
    let mut record = load(&tx, key, clock)?.record;
    record.prune(Micros(now.at));
    let state = snapshot(&record, key, &now)?;
    tx.commit()?;
    Ok(state)
}
