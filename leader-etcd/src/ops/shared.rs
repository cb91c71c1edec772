//! Read/write locks: the four calls of the kit's `SharedStore`, each deciding with the
//! kit's [`SharedRecord`](leader_core::kit::SharedRecord) rules on the lock's whole
//! [record](crate::shared), and writing it back in **one transaction** that holds only
//! while the key is unchanged since the version this backend last saw ([`Seen`]): its
//! `mod_revision` compared, the new record put, and otherwise the key read.
//!
//! So a call on a lock whose last change this backend saw (or a lock nobody ever took) is
//! one round trip; a call that finds the key changed by another client decides again on
//! the value its transaction read, one more round trip per change it raced with. The
//! compare is etcd's, so a stale guess costs a round trip, never a wrong answer.
//!
//! [`Seen`]: crate::seen::Seen

use std::time::{Duration, SystemTime};

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use leader_core::kit::{Call, Released, SharedAnswer, SharedAsk};
use leader_core::{
    ExtendOutcome, Lease, LockName, MaxReaders, OwnerToken, ReleaseRequest, Renewal, Role,
    SharedOutcome, SharedRequest, SharedState,
};

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::Op;
use crate::ops::answer::Answer;
use crate::seen::Version;
use crate::shared::{Micros, Record, decode, encode, state};
use crate::time::{micros, ttl_secs};

/// How many times a call decides again on a record another client changed meanwhile,
/// before it fails (transient). Each lost race means another call's change landed, so a
/// call among `n` racing ones loses at most `n - 1` times.
const ATTEMPTS: usize = 64;

/// `try_acquire_shared`, owned.
#[derive(Debug, Clone)]
pub struct AcquireShared {
    key: LockName,
    owner: OwnerToken,
    leader_id: String,
    lease_time: Duration,
    role: Role,
    max_readers: MaxReaders,
}

impl From<SharedRequest<'_>> for AcquireShared {
    fn from(request: SharedRequest<'_>) -> Self {
        AcquireShared {
            key: request.request.key.clone(),
            owner: request.request.owner,
            leader_id: request.request.leader_id.to_owned(),
            lease_time: request.request.lease_time,
            role: request.role,
            max_readers: request.max_readers,
        }
    }
}

impl Call for AcquireShared {
    type Output = SharedOutcome;
    const NAME: &'static str = "acquire_shared";

    fn outcome(output: &SharedOutcome) -> &'static str {
        output.as_str()
    }
}

impl Op for AcquireShared {
    async fn run(self, conn: Conn) -> Result<SharedOutcome, OpError> {
        ttl_secs(self.lease_time)?;
        change(&conn, &self.key, |record, now| {
            let expires = until(now, self.lease_time)?;
            let answer = record.acquire(
                SharedAsk {
                    role: self.role,
                    owner: self.owner,
                    node: &self.leader_id,
                    expires,
                    max_readers: self.max_readers.get(),
                    // Tokens are at least the clock in µs, as the exclusive locks' are, so
                    // they keep growing after the record is lost.
                    token_floor: now.0,
                },
                now,
            );
            Ok(match answer {
                SharedAnswer::Acquired(holder) => SharedOutcome::Acquired(Lease::new(
                    self.key.clone(),
                    self.owner,
                    holder.node,
                    holder.token,
                    holder.acquired.at(),
                    holder.expires.at(),
                )),
                SharedAnswer::Held => SharedOutcome::Held(state(record, self.key.as_str())),
                SharedAnswer::Queued => SharedOutcome::Queued(state(record, self.key.as_str())),
            })
        })
        .await
    }
}

/// `extend_shared`, owned.
#[derive(Debug, Clone)]
pub struct ExtendShared {
    key: LockName,
    owner: OwnerToken,
    lease_time: Duration,
    role: Role,
}

impl ExtendShared {
    pub(crate) fn new(renewal: Renewal<'_>, role: Role) -> Self {
        ExtendShared {
            key: renewal.lease.key.clone(),
            owner: renewal.lease.owner,
            lease_time: renewal.lease_time,
            role,
        }
    }
}

impl Call for ExtendShared {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend_shared";
}

impl Op for ExtendShared {
    async fn run(self, conn: Conn) -> Result<ExtendOutcome, OpError> {
        ttl_secs(self.lease_time)?;
        change(&conn, &self.key, |record, now| {
            let expires = until(now, self.lease_time)?;
            Ok(match record.extend(self.role, self.owner, expires, now) {
                Some(holder) => ExtendOutcome::Extended {
                    expires_at: holder.expires.at(),
                },
                None => ExtendOutcome::NotHeld,
            })
        })
        .await
    }
}

/// `release_shared`, owned.
#[derive(Debug, Clone)]
pub struct ReleaseShared {
    key: LockName,
    owner: OwnerToken,
    min_lease_time: Duration,
    role: Role,
}

impl ReleaseShared {
    pub(crate) fn new(release: ReleaseRequest<'_>, role: Role) -> Self {
        ReleaseShared {
            key: release.lease.key.clone(),
            owner: release.lease.owner,
            min_lease_time: release.min_lease_time,
            role,
        }
    }
}

impl Call for ReleaseShared {
    type Output = Released;
    const NAME: &'static str = "release_shared";
}

impl Op for ReleaseShared {
    /// A hold whose minimum lease is still ahead is kept until then in the record itself
    /// (marked released, its expiry brought forward): no etcd lease, no timer.
    async fn run(self, conn: Conn) -> Result<Released, OpError> {
        change(&conn, &self.key, |record, now| {
            if !record.release(self.role, self.owner, self.min_lease_time, now) {
                return Ok(Released::NotHeld);
            }
            let kept = match self.role {
                Role::Read => record.readers.iter().any(|r| r.owner == self.owner),
                Role::Write => record
                    .writer
                    .as_ref()
                    .is_some_and(|w| w.owner == self.owner),
            };
            Ok(if kept {
                Released::Kept
            } else {
                Released::Freed
            })
        })
        .await
    }
}

/// `state_shared`, owned.
#[derive(Debug, Clone)]
pub struct StateShared {
    key: LockName,
}

impl StateShared {
    pub(crate) fn new(key: &LockName) -> Self {
        StateShared { key: key.clone() }
    }
}

impl Call for StateShared {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";
}

impl Op for StateShared {
    /// One linearizable read of the lock's key, holds that ran out left out.
    async fn run(self, conn: Conn) -> Result<SharedState, OpError> {
        let key = conn.keys.shared(self.key.as_str());
        let found = conn
            .client
            .kv_client()
            .get(key.clone(), None)
            .await?
            .take_kvs();
        let Some(kv) = found.into_iter().next() else {
            return Ok(SharedState::empty(self.key.as_str()));
        };
        let mut record = decode(&key, kv.value())?;
        conn.seen.saw(
            &key,
            Version {
                mod_revision: kv.mod_revision(),
                value: Some(kv.value().to_vec()),
            },
        );
        record.prune(now());
        Ok(state(&record, self.key.as_str()))
    }
}

/// This host's clock, in the record's unit.
fn now() -> Micros {
    Micros(micros(SystemTime::now()))
}

/// `now + lease`, or the permanent error of a lease the record cannot hold.
fn until(now: Micros, lease: Duration) -> Result<Micros, OpError> {
    use leader_core::kit::Deadline;
    now.after(lease)
        .ok_or(OpError::LeaseTooLong(leader_core::LeaseTooLong::new(lease)))
}

/// Runs `decide` on the record of the lock `name` as last seen, at this host's time, and
/// writes what it changed in one transaction that holds while the key is still that
/// version; when it is not, decides again on the version the transaction read. Nothing is
/// written when `decide` fails or changes nothing (the transaction then only confirms the
/// version decided on).
async fn change<T>(
    conn: &Conn,
    name: &LockName,
    mut decide: impl FnMut(&mut Record, Micros) -> Result<T, OpError>,
) -> Result<T, OpError> {
    let key = conn.keys.shared(name.as_str());
    let mut seen = conn.seen.get(&key);
    for _ in 0..ATTEMPTS {
        let before = match &seen.value {
            Some(value) => decode(&key, value)?,
            None => Record::default(),
        };
        let mut record = before.clone();
        let output = decide(&mut record, now())?;
        let write = (record != before).then(|| encode(&record));
        let puts: Vec<TxnOp> = write
            .iter()
            .map(|value| TxnOp::put(key.clone(), value.clone(), None))
            .collect();
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                seen.mod_revision,
            )])
            .and_then(puts)
            .or_else([TxnOp::get(key.clone(), None)]);
        let response = conn.client.kv_client().txn(txn).await?;
        let revision = response.header().map(|header| header.revision());
        let mut answer = Answer::read(response);
        if answer.succeeded {
            if let (Some(value), Some(revision)) = (write, revision) {
                let version = Version {
                    mod_revision: revision,
                    value: Some(value),
                };
                conn.seen.saw(&key, version);
            }
            return Ok(output);
        }
        seen = match answer.got(0)? {
            Some(kv) => {
                // A value of another shape is refused here, before it is remembered, and
                // never overwritten.
                decode(&key, &kv.value)?;
                Version {
                    mod_revision: kv.mod_revision,
                    value: Some(kv.value),
                }
            }
            None => Version::ABSENT,
        };
        conn.seen.saw(&key, seen.clone());
    }
    Err(OpError::SharedContended)
}
