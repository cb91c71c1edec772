//! The four primitives as [`Op`]s: the arguments they own, the statement each runs on a
//! session, and the decoding of its rows. Nothing here knows about threads or runtimes:
//! the runner (`calls`) sends these, blocking or async.

use std::future::Future;
use std::time::SystemTime;

use leader_core::kit::{Call, Released, calls};
use leader_core::{AcquireOutcome, ExtendOutcome, LeaderLease, LeaderState, Lease, LockName};
use tokio_postgres::Row;

use crate::conn::Conn;
use crate::error::OpError;
use crate::time::{lease_micros, min_lease_micros};

/// One call of the backend kit ([`Call`]: its answer, name and lock), owned (it runs on
/// the backend's runtime), and how it runs on a session.
pub(crate) trait Op: Call + 'static {
    /// Runs it on `conn`.
    fn run(self, conn: &Conn) -> impl Future<Output = Result<Self::Output, OpError>> + Send;
}

/// How many times an acquire that lost to a holder who left before we could read them
/// is tried again before it reports the lock held by someone unknown.
const ACQUIRE_ATTEMPTS: usize = 2;

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
    pub(crate) fn into_lease(self, request: &calls::Acquire) -> Lease {
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

impl Op for calls::Acquire {
    /// The upsert; when it takes nothing (the conflict update's WHERE was false, so
    /// RETURNING gave no row), a second statement reads the holder, in a snapshot taken
    /// after the upsert. If the holder is gone by then, the upsert is tried again.
    async fn run(self, conn: &Conn) -> Result<AcquireOutcome, OpError> {
        let request = self;
        let owner = request.owner.to_string();
        let lease_micros = lease_micros(request.lease_time)?;
        for _ in 0..ACQUIRE_ATTEMPTS {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
                &request.key.as_str(),
                &owner,
                &request.leader_id,
                &lease_micros,
            ];
            if let Some(row) = conn
                .client
                .query_opt(&conn.statements.acquire, &params)
                .await?
            {
                let taken = LeaseRow::read(&row)?;
                return Ok(AcquireOutcome::Acquired(Lease::new(
                    request.key,
                    request.owner,
                    taken.leader_id,
                    taken.fencing_token,
                    taken.acquired_at,
                    taken.expires_at,
                )));
            }
            if let Some(holder) = holder(conn, &request.key).await? {
                return Ok(AcquireOutcome::Held(Some(holder)));
            }
        }
        Ok(AcquireOutcome::Held(None))
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

impl Op for calls::Extend {
    async fn run(self, conn: &Conn) -> Result<ExtendOutcome, OpError> {
        let lease_micros = lease_micros(self.lease_time)?;
        let row = conn
            .client
            .query_opt(
                &conn.statements.extend,
                &[
                    &self.lease.key.as_str(),
                    &self.lease.owner.to_string(),
                    &lease_micros,
                ],
            )
            .await?;
        Ok(match row {
            Some(row) => ExtendOutcome::Extended {
                expires_at: row.try_get(0).map_err(OpError::Decode)?,
            },
            None => ExtendOutcome::NotHeld,
        })
    }
}

impl Op for calls::Release {
    /// Notifies the table's channel when it frees the lock.
    async fn run(self, conn: &Conn) -> Result<Released, OpError> {
        let channel: &str = &conn.statements.channel;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
            &self.lease.key.as_str(),
            &self.lease.owner.to_string(),
            &min_lease_micros(self.min_lease_time),
            &channel,
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
}

impl Op for calls::State {
    async fn run(self, conn: &Conn) -> Result<LeaderState, OpError> {
        Ok(match holder(conn, &self.key).await? {
            Some(holder) => LeaderState::occupied(self.key.as_str(), holder),
            None => LeaderState::empty(self.key.as_str()),
        })
    }
}
