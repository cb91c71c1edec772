//! Read/write locks as [`Op`]s: each call is one statement, the call of the table's
//! read/write function (`shared_sql`), and the decoding of its rows. Like `ops`, nothing
//! here knows about threads or runtimes.

use std::time::SystemTime;

use leader_core::kit::{Call, Released, calls};
use leader_core::{
    ExtendOutcome, LeaderLease, Lease, LockName, Role, SharedOutcome, SharedState, WriterIntent,
};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::schema;
use crate::shared_sql::CORRUPT;
use crate::time::{lease_micros, min_lease_micros};

/// `try_acquire_shared`'s arguments, owned (the call runs on the backend's runtime).
#[derive(Debug)]
pub struct AcquireShared {
    pub(crate) acquire: calls::Acquire,
    pub(crate) role: Role,
    pub(crate) max_readers: u32,
}

impl Call for AcquireShared {
    type Output = SharedOutcome;
    const NAME: &'static str = "acquire_shared";

    fn outcome(output: &SharedOutcome) -> &'static str {
        output.as_str()
    }
}

/// `extend_shared`'s arguments, owned.
#[derive(Debug)]
pub struct ExtendShared(pub(crate) calls::Extend, pub(crate) Role);

impl Call for ExtendShared {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend_shared";
}

/// `release_shared`'s arguments, owned.
#[derive(Debug)]
pub struct ReleaseShared(pub(crate) calls::Release, pub(crate) Role);

impl Call for ReleaseShared {
    type Output = Released;
    const NAME: &'static str = "release_shared";
}

/// `state_shared`'s arguments, owned.
#[derive(Debug)]
pub struct StateShared(pub(crate) LockName);

impl Call for StateShared {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";
}

/// The function's arguments, but for the channel.
struct Args<'a> {
    op: &'static str,
    key: &'a LockName,
    owner: String,
    leader_id: &'a str,
    role: Role,
    micros: i64,
    max_readers: i32,
}

/// One row of the function's answer.
struct Answer {
    kind: String,
    leader_id: Option<String>,
    token: Option<i64>,
    acquired_at: Option<SystemTime>,
    expires_at: Option<SystemTime>,
}

impl Answer {
    fn read(row: &Row) -> Result<Self, OpError> {
        Ok(Answer {
            kind: row.try_get(0).map_err(OpError::Decode)?,
            leader_id: row.try_get(1).map_err(OpError::Decode)?,
            token: row.try_get(2).map_err(OpError::Decode)?,
            acquired_at: row.try_get(3).map_err(OpError::Decode)?,
            expires_at: row.try_get(4).map_err(OpError::Decode)?,
        })
    }

    fn token(&self) -> Result<u64, OpError> {
        let token = self
            .token
            .ok_or(OpError::Corrupt("a holder without a token"))?;
        u64::try_from(token).map_err(|_| OpError::Corrupt("a negative fencing token"))
    }

    fn expires_at(&self) -> Result<SystemTime, OpError> {
        self.expires_at
            .ok_or(OpError::Corrupt("a hold without an expiry"))
    }

    fn holder(&self) -> Result<LeaderLease, OpError> {
        Ok(LeaderLease::new(
            self.leader_id
                .clone()
                .ok_or(OpError::Corrupt("a holder without a node id"))?,
            self.acquired_at
                .ok_or(OpError::Corrupt("a holder without an acquisition time"))?,
            self.expires_at()?,
            self.token()?,
        ))
    }
}

/// Runs the function: the first row (the answer) and the rest (the lock, for `held`,
/// `queued` and `state`).
async fn call(conn: &Conn, args: Args<'_>) -> Result<(Answer, Vec<Answer>), OpError> {
    let channel: &str = &conn.statements.channel;
    let params: [&(dyn ToSql + Sync); 8] = [
        &args.op,
        &args.key.as_str(),
        &args.owner,
        &args.leader_id,
        &args.role.as_str(),
        &args.micros,
        &args.max_readers,
        &channel,
    ];
    let Some(statement) = &conn.statements.shared else {
        return Err(missing(conn).await);
    };
    let rows = conn.client.query(statement, &params).await.map_err(|err| {
        if err.code().is_some_and(|code| code.code() == CORRUPT) {
            OpError::Corrupt("a read/write lock record in a shape this backend never writes")
        } else {
            OpError::Driver(err)
        }
    })?;
    let mut answers = rows.iter().map(Answer::read);
    let first = answers.next().ok_or(OpError::Corrupt(
        "no answer from the read/write lock function",
    ))??;
    let rest = answers.collect::<Result<Vec<_>, _>>()?;
    Ok((first, rest))
}

/// Why a session opened without the read/write function cannot call it: the error of
/// making the tables and function now (a role without `CREATE`, a table of another
/// shape), or, once they are made, a transient error that drops this session for one that
/// prepares the call.
async fn missing(conn: &Conn) -> OpError {
    match schema::ensure_shared(&conn.client, &conn.statements.shared_sql).await {
        Ok(()) => OpError::SharedUnprepared,
        Err(err) => err,
    }
}

/// The lock `key` as the rows after the answer show it.
fn state(key: &LockName, rows: &[Answer]) -> Result<SharedState, OpError> {
    let mut writer = None;
    let mut readers = Vec::new();
    let mut intent = None;
    for row in rows {
        match row.kind.as_str() {
            "write" if writer.is_none() => writer = Some(row.holder()?),
            "read" => readers.push(row.holder()?),
            "intent" if intent.is_none() => {
                let node = row
                    .leader_id
                    .clone()
                    .ok_or(OpError::Corrupt("an intent without a node id"))?;
                intent = Some(WriterIntent::new(node, row.expires_at()?));
            }
            _ => return Err(OpError::Corrupt("a read/write lock row of an unknown kind")),
        }
    }
    Ok(SharedState::new(key.as_str(), writer, readers, intent))
}

fn unexpected() -> OpError {
    OpError::Corrupt("an answer of the read/write lock function this call never gets")
}

impl Op for AcquireShared {
    async fn run(self, conn: &Conn) -> Result<SharedOutcome, OpError> {
        let ask = &self.acquire;
        let args = Args {
            op: "acquire",
            key: &ask.key,
            owner: ask.owner.to_string(),
            leader_id: &ask.leader_id,
            role: self.role,
            micros: lease_micros(ask.lease_time)?,
            max_readers: i32::try_from(self.max_readers).unwrap_or(i32::MAX),
        };
        let (answer, rest) = call(conn, args).await?;
        match answer.kind.as_str() {
            "acquired" => {
                let holder = answer.holder()?;
                Ok(SharedOutcome::Acquired(Lease::new(
                    ask.key.clone(),
                    ask.owner,
                    holder.leader_id,
                    holder.fencing_token,
                    holder.acquired_at,
                    holder.expires_at,
                )))
            }
            "held" => Ok(SharedOutcome::Held(state(&ask.key, &rest)?)),
            "queued" => Ok(SharedOutcome::Queued(state(&ask.key, &rest)?)),
            _ => Err(unexpected()),
        }
    }
}

impl Op for ExtendShared {
    async fn run(self, conn: &Conn) -> Result<ExtendOutcome, OpError> {
        let lease = &self.0.lease;
        let args = Args {
            op: "extend",
            key: &lease.key,
            owner: lease.owner.to_string(),
            leader_id: "",
            role: self.1,
            micros: lease_micros(self.0.lease_time)?,
            max_readers: 0,
        };
        let (answer, _) = call(conn, args).await?;
        match answer.kind.as_str() {
            "extended" => Ok(ExtendOutcome::Extended {
                expires_at: answer.expires_at()?,
            }),
            "not_held" => Ok(ExtendOutcome::NotHeld),
            _ => Err(unexpected()),
        }
    }
}

impl Op for ReleaseShared {
    /// Notifies the table's channel (with the name) when it frees a hold or an intent.
    async fn run(self, conn: &Conn) -> Result<Released, OpError> {
        let lease = &self.0.lease;
        let args = Args {
            op: "release",
            key: &lease.key,
            owner: lease.owner.to_string(),
            leader_id: "",
            role: self.1,
            micros: min_lease_micros(self.0.min_lease_time),
            max_readers: 0,
        };
        let (answer, _) = call(conn, args).await?;
        match answer.kind.as_str() {
            "freed" => Ok(Released::Freed),
            "kept" => Ok(Released::Kept),
            "not_held" => Ok(Released::NotHeld),
            _ => Err(unexpected()),
        }
    }
}

impl Op for StateShared {
    async fn run(self, conn: &Conn) -> Result<SharedState, OpError> {
        let args = Args {
            op: "state",
            key: &self.0,
            owner: String::new(),
            leader_id: "",
            role: Role::Read,
            micros: 0,
            max_readers: 0,
        };
        let (answer, rest) = call(conn, args).await?;
        match answer.kind.as_str() {
            "state" => state(&self.0, &rest),
            _ => Err(unexpected()),
        }
    }
}
