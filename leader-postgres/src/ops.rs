//! The four primitives as [`Op`]s: the arguments they own, the statement each runs on a
//! session, and the decoding of its rows. Nothing here knows about threads or runtimes:
//! the blocking and the async paths both run these.

use std::future::Future;
use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, ExtendOutcome, LeaderLease, LeaderState, Lease, LockName, OwnerToken,
    ReleaseOutcome,
};
use tokio_postgres::Row;

use crate::conn::Conn;
use crate::error::OpError;
use crate::time::{lease_micros, min_lease_micros};

/// One call: what it needs, owned (it runs on the backend's runtime), and how it runs.
pub(crate) trait Op: Send + 'static {
    /// What the call gives.
    type Output: Send + 'static;
    /// Its name in traces.
    const NAME: &'static str;
    /// The lock it is about (for a listing, the prefix): named in traces and errors.
    fn key(&self) -> &str;
    /// Runs it on `conn`.
    fn run(self, conn: &Conn) -> impl Future<Output = Result<Self::Output, OpError>> + Send;
    /// A short label of `output` for traces.
    fn outcome(output: &Self::Output) -> &'static str;
}

/// How many times an acquire that lost to a holder who left before we could read them
/// is tried again before it reports the lock held by someone unknown.
const ACQUIRE_ATTEMPTS: usize = 2;

/// `try_acquire`'s arguments, owned: the one type every backend moves to its worker.
pub(crate) use leader_core::__private::OwnedAcquire as Acquire;

/// A lease as the statements return it: leader id, token, acquired, expires.
pub(crate) struct LeaseRow {
    leader_id: String,
    fencing_token: u64,
    acquired_at: SystemTime,
    expires_at: SystemTime,
}

impl LeaseRow {
    /// Reads the first four columns of `row`.
    pub(crate) fn read(row: &Row) -> Result<Self, OpError> {
        let token: i64 = row.try_get(1).map_err(OpError::Decode)?;
        Ok(LeaseRow {
            leader_id: row.try_get(0).map_err(OpError::Decode)?,
            fencing_token: u64::try_from(token)
                .map_err(|_| OpError::Corrupt("a negative fencing token"))?,
            acquired_at: row.try_get(2).map_err(OpError::Decode)?,
            expires_at: row.try_get(3).map_err(OpError::Decode)?,
        })
    }

    /// The lease `request` was granted, as this row describes it.
    pub(crate) fn into_lease(self, request: &Acquire) -> Lease {
        Lease::new(
            request.key.clone(),
            request.owner,
            self.leader_id,
            self.fencing_token,
            self.acquired_at,
            self.expires_at,
        )
    }

    /// The holder it describes.
    pub(crate) fn snapshot(self) -> LeaderLease {
        LeaderLease::new(
            self.leader_id,
            self.acquired_at,
            self.expires_at,
            self.fencing_token,
        )
    }
}

impl Op for Acquire {
    type Output = AcquireOutcome;
    const NAME: &'static str = "acquire";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    /// The upsert; when it takes nothing (the conflict update's WHERE was false, so
    /// RETURNING gave no row), a second statement reads the holder, in a snapshot taken
    /// after the upsert. If the holder is gone by then, the upsert is tried again.
    async fn run(self, conn: &Conn) -> Result<AcquireOutcome, OpError> {
        let owner = self.owner.to_string();
        let lease_micros = lease_micros(self.lease_time)?;
        for _ in 0..ACQUIRE_ATTEMPTS {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                [&self.key.as_str(), &owner, &self.leader_id, &lease_micros];
            if let Some(row) = conn
                .client
                .query_opt(&conn.statements.acquire, &params)
                .await?
            {
                let taken = LeaseRow::read(&row)?;
                return Ok(AcquireOutcome::Acquired(Lease::new(
                    self.key,
                    self.owner,
                    taken.leader_id,
                    taken.fencing_token,
                    taken.acquired_at,
                    taken.expires_at,
                )));
            }
            if let Some(holder) = holder(conn, &self.key).await? {
                return Ok(AcquireOutcome::Held(Some(holder)));
            }
        }
        Ok(AcquireOutcome::Held(None))
    }

    fn outcome(output: &AcquireOutcome) -> &'static str {
        output.as_str()
    }
}

/// The live holder of `key` (a lock kept for its minimum lease included).
async fn holder(conn: &Conn, key: &LockName) -> Result<Option<LeaderLease>, OpError> {
    let row = conn
        .client
        .query_opt(&conn.statements.holder, &[&key.as_str()])
        .await?;
    row.map(|row| LeaseRow::read(&row).map(LeaseRow::snapshot))
        .transpose()
}

/// `extend`'s arguments.
#[derive(Debug, Clone)]
pub(crate) struct Extend {
    pub(crate) key: LockName,
    pub(crate) owner: OwnerToken,
    pub(crate) lease_time: Duration,
}

impl Op for Extend {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    async fn run(self, conn: &Conn) -> Result<ExtendOutcome, OpError> {
        let lease_micros = lease_micros(self.lease_time)?;
        let row = conn
            .client
            .query_opt(
                &conn.statements.extend,
                &[&self.key.as_str(), &self.owner.to_string(), &lease_micros],
            )
            .await?;
        Ok(match row {
            Some(row) => ExtendOutcome::Extended {
                expires_at: row.try_get(0).map_err(OpError::Decode)?,
            },
            None => ExtendOutcome::NotHeld,
        })
    }

    fn outcome(output: &ExtendOutcome) -> &'static str {
        output.as_str()
    }
}

/// `release`'s arguments, and the channel its `NOTIFY` goes to.
#[derive(Debug, Clone)]
pub(crate) struct Release {
    pub(crate) key: LockName,
    pub(crate) owner: OwnerToken,
    pub(crate) min_lease_time: Duration,
    pub(crate) channel: String,
}

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// The lock is free now (and waiters were notified).
    Freed,
    /// The lock stays taken, by nobody, until the end of its minimum lease.
    Kept,
    /// The caller did not hold it.
    NotHeld,
}

impl Released {
    pub(crate) fn outcome(self) -> ReleaseOutcome {
        match self {
            Released::Freed | Released::Kept => ReleaseOutcome::Released,
            Released::NotHeld => ReleaseOutcome::NotHeld,
        }
    }
}

impl Op for Release {
    type Output = Released;
    const NAME: &'static str = "release";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    async fn run(self, conn: &Conn) -> Result<Released, OpError> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
            &self.key.as_str(),
            &self.owner.to_string(),
            &min_lease_micros(self.min_lease_time),
            &self.channel,
        ];
        let row = conn
            .client
            .query_opt(&conn.statements.release, &params)
            .await?;
        Ok(match row {
            None => Released::NotHeld,
            Some(row) => match row.try_get::<_, bool>(0).map_err(OpError::Decode)? {
                true => Released::Freed,
                false => Released::Kept,
            },
        })
    }

    fn outcome(output: &Released) -> &'static str {
        match output {
            Released::Freed => "freed",
            Released::Kept => "kept_for_min_lease",
            Released::NotHeld => "not_held",
        }
    }
}

/// `state`'s argument.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) key: LockName,
}

impl Op for State {
    type Output = LeaderState;
    const NAME: &'static str = "state";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    async fn run(self, conn: &Conn) -> Result<LeaderState, OpError> {
        Ok(match holder(conn, &self.key).await? {
            Some(holder) => LeaderState::occupied(self.key.as_str(), holder),
            None => LeaderState::empty(self.key.as_str()),
        })
    }

    fn outcome(output: &LeaderState) -> &'static str {
        match output.leader() {
            Some(_) => "occupied",
            None => "empty",
        }
    }
}
