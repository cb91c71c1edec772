//! The batch forms of acquire, extend and release as [`Op`]s: one statement per
//! [`CHUNK`] requests, the names, owners and durations sent as arrays (`unnest ... WITH
//! ORDINALITY`), the chunks pipelined on one session. Each request is answered on its own,
//! as its single call would answer it; a batch as a whole is not atomic.
//!
//! Row locks are taken in name order (acquire inserts in that order, release locks its
//! rows in that order first), so batches of several nodes over the same locks wait for
//! each other briefly but never deadlock. Extend skips a locked row instead (see
//! `Sql::extend_batch`). A batch naming a lock twice is never planned (one statement
//! cannot update a row twice): the kit makes the single calls then.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::SystemTime;

use leader_core::kit::{Call, Failure, Released, calls};
use leader_core::{
    AcquireOutcome, AcquireRequest, ExtendOutcome, LockName, ReleaseRequest, Renewal,
};
use tokio_postgres::types::{ToSql, Type};

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::{LeaseRow, Op};
use crate::time::{lease_micros, min_lease_micros};

/// The most requests one statement carries: a few milliseconds of the server's time.
pub(crate) const CHUNK: usize = 1000;

/// Whether `names` holds a name twice (such a batch goes as single calls).
fn repeats<'a>(names: impl Iterator<Item = &'a LockName>) -> bool {
    let mut seen = HashSet::new();
    names.into_iter().any(|name| !seen.insert(name.as_str()))
}

/// The plan of a `try_acquire_batch`; `None` when it is empty or names a lock twice (the
/// kit then makes the single calls).
pub(crate) fn plan_acquire(requests: &[AcquireRequest<'_>]) -> Option<AcquireBatch> {
    if requests.is_empty() || repeats(requests.iter().map(|r| r.key)) {
        return None;
    }
    Some(AcquireBatch {
        requests: requests.iter().map(|r| calls::Acquire::from(*r)).collect(),
    })
}

/// The plan of an `extend_batch`, as [`plan_acquire`].
pub(crate) fn plan_extend(renewals: &[Renewal<'_>]) -> Option<ExtendBatch> {
    if renewals.is_empty() || repeats(renewals.iter().map(|r| &r.lease.key)) {
        return None;
    }
    Some(ExtendBatch {
        renewals: renewals.iter().map(|r| calls::Extend::from(*r)).collect(),
    })
}

/// The plan of a `release_batch`, as [`plan_acquire`].
pub(crate) fn plan_release(releases: &[ReleaseRequest<'_>]) -> Option<ReleaseBatch> {
    if releases.is_empty() || repeats(releases.iter().map(|r| &r.lease.key)) {
        return None;
    }
    Some(ReleaseBatch {
        releases: releases.iter().map(|r| calls::Release::from(*r)).collect(),
    })
}

/// The answers of a chunk: a request refused before sending (`Some` error) is answered by
/// its error; the others by `sent`, in order.
fn merge<T>(
    refused: Vec<Option<OpError>>,
    mut sent: impl Iterator<Item = Result<T, OpError>>,
) -> Vec<Result<T, OpError>> {
    refused
        .into_iter()
        .map(|refusal| match refusal {
            Some(err) => Err(err),
            None => sent
                .next()
                .unwrap_or(Err(OpError::Corrupt("a batch request went unanswered"))),
        })
        .collect()
}

/// Runs `chunk_op` over the chunks of `items` on one session, pipelined; the answers in
/// order, each failure the kit's.
async fn chunked<'c, I, T, F, Fut>(
    items: &'c [I],
    chunk_op: F,
) -> Result<Vec<Result<T, Failure>>, OpError>
where
    F: Fn(&'c [I]) -> Fut,
    Fut: Future<Output = Result<Vec<Result<T, OpError>>, OpError>>,
{
    let answers = futures_util::future::try_join_all(items.chunks(CHUNK).map(chunk_op)).await?;
    Ok(answers
        .into_iter()
        .flatten()
        .map(|answer| answer.map_err(OpError::into_failure))
        .collect())
}

/// `try_acquire_batch`'s requests.
#[derive(Debug, Clone)]
pub struct AcquireBatch {
    requests: Vec<calls::Acquire>,
}

impl Call for AcquireBatch {
    type Output = Vec<Result<AcquireOutcome, Failure>>;

    const NAME: &'static str = "acquire_batch";

    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

impl Op for AcquireBatch {
    async fn run(self, conn: &Conn) -> Result<Self::Output, OpError> {
        chunked(&self.requests, |chunk| acquire_chunk(conn, chunk)).await
    }
}

/// One statement over `chunk`; then, for the locks it did not take, one read of their
/// holders (in a snapshot taken after it, as a single acquire reads).
async fn acquire_chunk(
    conn: &Conn,
    chunk: &[calls::Acquire],
) -> Result<Vec<Result<AcquireOutcome, OpError>>, OpError> {
    let mut refused = Vec::with_capacity(chunk.len());
    let (mut names, mut owners, mut leaders, mut micros) = (vec![], vec![], vec![], vec![]);
    let mut sent = Vec::new();
    for request in chunk {
        match lease_micros(request.lease_time) {
            Ok(lease) => {
                names.push(request.key.as_str());
                owners.push(request.owner.to_string());
                leaders.push(request.leader_id.as_str());
                micros.push(lease);
                sent.push(request);
                refused.push(None);
            }
            Err(err) => refused.push(Some(err)),
        }
    }
    if sent.is_empty() {
        return Ok(merge(refused, std::iter::empty()));
    }
    let params: [(&(dyn ToSql + Sync), Type); 4] = [
        (&names, Type::TEXT_ARRAY),
        (&owners, Type::TEXT_ARRAY),
        (&leaders, Type::TEXT_ARRAY),
        (&micros, Type::INT8_ARRAY),
    ];
    let rows = conn
        .client
        .query_typed(&conn.statements.acquire_batch, &params)
        .await?;
    if rows.len() != sent.len() {
        return Err(OpError::Corrupt(
            "a batch acquire answered another number of rows",
        ));
    }
    let mut taken = Vec::with_capacity(rows.len());
    let mut lost = Vec::new();
    for (row, request) in rows.iter().zip(&sent) {
        let leader: Option<String> = row.try_get(0).map_err(OpError::Decode)?;
        taken.push(match leader {
            Some(_) => Some(LeaseRow::read(row)?),
            None => {
                lost.push(request.key.as_str());
                None
            }
        });
    }
    let mut holders = HashMap::new();
    if !lost.is_empty() {
        for row in conn
            .client
            .query_typed(&conn.statements.holders, &[(&lost, Type::TEXT_ARRAY)])
            .await?
        {
            let name: String = row.try_get(4).map_err(OpError::Decode)?;
            holders.insert(name, LeaseRow::read(&row)?.snapshot());
        }
    }
    let answers = taken.into_iter().zip(&sent).map(|(taken, request)| {
        Ok(match taken {
            Some(lease) => AcquireOutcome::Acquired(lease.into_lease(request)),
            // A holder gone by the time we read is "held by someone unknown", as a single
            // acquire answers after its retries.
            None => AcquireOutcome::Held(holders.remove(request.key.as_str())),
        })
    });
    Ok(merge(refused, answers))
}

/// `extend_batch`'s renewals.
#[derive(Debug, Clone)]
pub struct ExtendBatch {
    renewals: Vec<calls::Extend>,
}

impl Call for ExtendBatch {
    /// One answer per renewal, in order; a lease's own failure (its row locked by another
    /// session, a lease too long) is its own.
    type Output = Vec<Result<ExtendOutcome, Failure>>;

    const NAME: &'static str = "extend_batch";

    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

impl Op for ExtendBatch {
    async fn run(self, conn: &Conn) -> Result<Self::Output, OpError> {
        chunked(&self.renewals, |chunk| extend_chunk(conn, chunk)).await
    }
}

/// One statement renewing `chunk`.
async fn extend_chunk(
    conn: &Conn,
    chunk: &[calls::Extend],
) -> Result<Vec<Result<ExtendOutcome, OpError>>, OpError> {
    let mut refused = Vec::with_capacity(chunk.len());
    let (mut names, mut owners, mut micros) = (vec![], vec![], vec![]);
    for renewal in chunk {
        match lease_micros(renewal.lease_time) {
            Ok(lease) => {
                names.push(renewal.lease.key.as_str());
                owners.push(renewal.lease.owner.to_string());
                micros.push(lease);
                refused.push(None);
            }
            Err(err) => refused.push(Some(err)),
        }
    }
    if names.is_empty() {
        return Ok(merge(refused, std::iter::empty()));
    }
    let params: [(&(dyn ToSql + Sync), Type); 3] = [
        (&names, Type::TEXT_ARRAY),
        (&owners, Type::TEXT_ARRAY),
        (&micros, Type::INT8_ARRAY),
    ];
    let rows = conn
        .client
        .query_typed(&conn.statements.extend_batch, &params)
        .await?;
    if rows.len() != names.len() {
        return Err(OpError::Corrupt(
            "a batch renewal answered another number of rows",
        ));
    }
    let mut answers = Vec::with_capacity(rows.len());
    for row in &rows {
        let expires_at: Option<SystemTime> = row.try_get(1).map_err(OpError::Decode)?;
        let skipped: bool = row.try_get(2).map_err(OpError::Decode)?;
        answers.push(match (expires_at, skipped) {
            (Some(expires_at), _) => Ok(ExtendOutcome::Extended { expires_at }),
            (None, true) => Err(OpError::RowLocked),
            (None, false) => Ok(ExtendOutcome::NotHeld),
        });
    }
    Ok(merge(refused, answers.into_iter()))
}

/// `release_batch`'s leases.
#[derive(Debug, Clone)]
pub struct ReleaseBatch {
    releases: Vec<calls::Release>,
}

impl Call for ReleaseBatch {
    type Output = Vec<Result<Released, Failure>>;

    const NAME: &'static str = "release_batch";

    fn outcome(_: &Self::Output) -> &'static str {
        "batch"
    }
}

impl Op for ReleaseBatch {
    async fn run(self, conn: &Conn) -> Result<Self::Output, OpError> {
        chunked(&self.releases, |chunk| release_chunk(conn, chunk)).await
    }
}

/// One statement releasing `chunk`.
async fn release_chunk(
    conn: &Conn,
    chunk: &[calls::Release],
) -> Result<Vec<Result<Released, OpError>>, OpError> {
    let channel: &str = &conn.statements.channel;
    let names: Vec<&str> = chunk.iter().map(|r| r.lease.key.as_str()).collect();
    let owners: Vec<String> = chunk.iter().map(|r| r.lease.owner.to_string()).collect();
    let min: Vec<i64> = chunk
        .iter()
        .map(|r| min_lease_micros(r.min_lease_time))
        .collect();
    let params: [(&(dyn ToSql + Sync), Type); 4] = [
        (&names, Type::TEXT_ARRAY),
        (&owners, Type::TEXT_ARRAY),
        (&min, Type::INT8_ARRAY),
        (&channel, Type::TEXT),
    ];
    let rows = conn
        .client
        .query_typed(&conn.statements.release_batch, &params)
        .await?;
    if rows.len() != chunk.len() {
        return Err(OpError::Corrupt(
            "a batch release answered another number of rows",
        ));
    }
    rows.iter()
        .map(|row| {
            let freed: Option<bool> = row.try_get(0).map_err(OpError::Decode)?;
            Ok(Ok(match freed {
                None => Released::NotHeld,
                Some(true) => Released::Freed,
                Some(false) => Released::Kept,
            }))
        })
        .collect()
}
