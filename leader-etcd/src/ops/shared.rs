//! Read/write locks: the four calls of the kit's `SharedStore`, each deciding with the
//! kit's [`SharedRecord`](leader_core::kit::SharedRecord) rules on the lock's whole
//! [record](crate::shared), and writing it back in **one transaction** that holds only
//! while the key is unchanged since the version this backend last saw ([`Seen`]): its
//! `mod_revision` compared, the new record put, and otherwise the key read.
//!
//! **Expiry is etcd's.** Each hold and waiting writer's intent has a liveness key on an
//! etcd lease of its own ([`Keys::shared_live`]), granted for the request's lease time
//! before the transaction (as the exclusive acquire and extend do: a lease grant, then the
//! transaction), and named in the record. An entry is live while its key exists on that
//! lease, whatever any host's clock says: the rules run with no entry judged by time
//! ([`Stored::judge`]), on a record from which the entries etcd ended are pruned. Every
//! transaction also reads the lock's liveness keys, so a call that was refused or queued
//! behind an entry etcd had ended decides again (one more round trip); a call that
//! renews, releases or keeps its own entry compares that entry's key is still on its
//! lease, and decides again when it is not (its hold ran out).
//!
//! The lease is asked for only once a decision puts the caller's entry on it: so an
//! acquire that is granted or queued, or an extend, is a lease grant and one transaction
//! when this backend saw the lock's last change; a refused acquire, an extend of a hold
//! not held, a release or `state_shared` is one transaction. A call that finds
//! the key changed by another client decides again on the value its transaction read, one
//! more round trip per change it raced with. The compares are etcd's, so a stale guess
//! costs a round trip, never a wrong answer.
//!
//! [`Seen`]: crate::seen::Seen
//! [`Keys::shared_live`]: crate::keys::Keys::shared_live

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, PutOptions, Txn, TxnOp};
use leader_core::kit::{Call, Released, SharedAnswer, SharedAsk};
use leader_core::{
    ExtendOutcome, Lease, LockName, MaxReaders, OwnerToken, ReleaseRequest, Renewal, Role,
    SharedOutcome, SharedRequest, SharedState,
};

use crate::conn::Conn;
use crate::error::OpError;
use crate::keys::prefix_end;
use crate::lease::Grant;
use crate::ops::Op;
use crate::ops::answer::Answer;
use crate::seen::Version;
use crate::shared::{Entry, Kind, Micros, Stored, decode, encode, state};
use crate::time::{later, micros, ttl_secs};

/// How many times a call decides again on a record another client changed meanwhile (or
/// on entries etcd ended), before it fails (transient). Each lost race means another
/// call's change landed, so a call among `n` racing ones loses at most `n - 1` times.
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
    /// A lease grant (once the decision grants or queues), then the transaction; the lease
    /// is revoked in the background unless the caller's hold or intent is left on it (see
    /// [`Grant`]).
    async fn run(self, conn: Conn) -> Result<SharedOutcome, OpError> {
        let ttl = ttl_secs(self.lease_time)?;
        let name = self.key.as_str();
        let kinds: &[Kind] = match self.role {
            Role::Read => &[Kind::Read],
            Role::Write => &[Kind::Write, Kind::Intent],
        };
        let locks = kinds
            .iter()
            .map(|kind| conn.keys.shared_live(name, self.owner, kind.letter()))
            .collect();
        let lease = Some(LeaseAsk { ttl, locks });
        change(
            &conn,
            &self.key,
            self.owner,
            lease,
            |stored, now, expires| {
                let answer = stored.judge(|record| {
                    record.acquire(
                        SharedAsk {
                            role: self.role,
                            owner: self.owner,
                            node: &self.leader_id,
                            expires,
                            max_readers: self.max_readers.get(),
                            // Tokens are at least the clock in µs, as the exclusive locks' are,
                            // so they keep growing after the record is lost.
                            token_floor: now.0,
                        },
                        now,
                    )
                });
                let record = &stored.record;
                Ok(match answer {
                    SharedAnswer::Acquired(holder) => Decided {
                        output: SharedOutcome::Acquired(Lease::new(
                            self.key.clone(),
                            self.owner,
                            holder.node,
                            holder.token,
                            holder.acquired.at(),
                            holder.expires.at(),
                        )),
                        put: Some((kind_of(self.role), self.owner)),
                        refused: false,
                        keep_for: None,
                    },
                    SharedAnswer::Held => Decided {
                        output: SharedOutcome::Held(state(record, self.key.as_str())),
                        put: None,
                        refused: true,
                        keep_for: None,
                    },
                    SharedAnswer::Queued => Decided {
                        output: SharedOutcome::Queued(state(record, self.key.as_str())),
                        put: Some((Kind::Intent, self.owner)),
                        refused: true,
                        keep_for: None,
                    },
                })
            },
        )
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
    /// A lease grant, then the transaction that moves the caller's liveness key onto it
    /// (a new lease rather than a keep-alive: a renewal may ask for another lease time).
    async fn run(self, conn: Conn) -> Result<ExtendOutcome, OpError> {
        let ttl = ttl_secs(self.lease_time)?;
        let kind = kind_of(self.role);
        let lock = conn
            .keys
            .shared_live(self.key.as_str(), self.owner, kind.letter());
        let lease = Some(LeaseAsk {
            ttl,
            locks: vec![lock],
        });
        change(
            &conn,
            &self.key,
            self.owner,
            lease,
            |stored, now, expires| {
                let extended = stored.judge(|record| {
                    record
                        .extend(self.role, self.owner, expires, now)
                        .map(|holder| holder.expires.at())
                });
                Ok(match extended {
                    Some(expires_at) => Decided {
                        output: ExtendOutcome::Extended { expires_at },
                        put: Some((kind, self.owner)),
                        refused: false,
                        keep_for: None,
                    },
                    None => Decided {
                        output: ExtendOutcome::NotHeld,
                        put: None,
                        refused: false,
                        keep_for: None,
                    },
                })
            },
        )
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
    /// One transaction: an ended hold's (or withdrawn intent's) liveness key deleted with
    /// the record's change, its lease revoked in the background. A hold whose minimum lease
    /// is still ahead is kept (marked released in the record) on the lease it has, which
    /// this backend revokes when the minimum lease ends, by a timer on its own clock (the
    /// one that stamped the hold), as the exclusive release does; if this process is gone
    /// by then, the hold ends with its lease.
    async fn run(self, conn: Conn) -> Result<Released, OpError> {
        let kind = kind_of(self.role);
        change(&conn, &self.key, self.owner, None, |stored, now, _| {
            let released = stored
                .judge(|record| record.release(self.role, self.owner, self.min_lease_time, now));
            let record = &stored.record;
            let held = match self.role {
                Role::Read => record.readers.iter().find(|r| r.owner == self.owner),
                Role::Write => record.writer.as_ref().filter(|w| w.owner == self.owner),
            };
            let output = match (released, &held) {
                (false, _) => Released::NotHeld,
                (true, Some(_)) => Released::Kept,
                (true, None) => Released::Freed,
            };
            // The time the kept hold has left, on this clock (the one that stamped it).
            let kept = held.filter(|_| released).map(|h| {
                h.expires
                    .at()
                    .duration_since(SystemTime::now())
                    .unwrap_or_default()
            });
            Ok(Decided {
                output,
                put: None,
                refused: false,
                keep_for: kept.map(|left| ((kind, self.owner), left)),
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
    /// One transaction that reads the lock's key and its liveness keys: the entries etcd
    /// ended are left out.
    async fn run(self, conn: Conn) -> Result<SharedState, OpError> {
        let name = self.key.as_str();
        let key = conn.keys.shared(name);
        let txn = Txn::new().and_then([TxnOp::get(key.clone(), None), live_range(&conn, name)]);
        let mut answer = Answer::read(conn.client.kv_client().txn(txn).await?);
        let Some(kv) = answer.got(0)? else {
            return Ok(SharedState::empty(name));
        };
        let mut stored = decode(&key, &kv.value)?;
        conn.seen.saw(
            &key,
            Version {
                mod_revision: kv.mod_revision,
                value: Some(kv.value),
            },
        );
        let live = Live::read(answer.range(1)?);
        stored.prune_dead(|entry, lease| live.has(&conn, name, entry, lease));
        Ok(state(&stored.record, name))
    }
}

/// The kind of the hold of `role`.
fn kind_of(role: Role) -> Kind {
    match role {
        Role::Read => Kind::Read,
        Role::Write => Kind::Write,
    }
}

/// The read of the lock `name`'s liveness keys (keys only: they are empty).
fn live_range(conn: &Conn, name: &str) -> TxnOp {
    let prefix = conn.keys.shared_live_of(name);
    let end = prefix_end(&prefix);
    TxnOp::get(
        prefix,
        Some(GetOptions::new().with_range(end).with_keys_only()),
    )
}

/// The liveness keys of a lock as one transaction read them: key, and the lease it is on.
struct Live(HashMap<Vec<u8>, i64>);

impl Live {
    fn read(kvs: Vec<etcd_client::proto::PbKeyValue>) -> Self {
        Live(kvs.into_iter().map(|kv| (kv.key, kv.lease)).collect())
    }

    /// Whether `entry` of the lock `name`, on `lease`, was live.
    fn has(&self, conn: &Conn, name: &str, (kind, owner): Entry, lease: i64) -> bool {
        let key = conn.keys.shared_live(name, owner, kind.letter());
        lease != 0 && self.0.get(&key) == Some(&lease)
    }
}

/// The etcd lease a call puts the caller's entry on, asked for once a decision needs it.
struct LeaseAsk {
    /// Its TTL in seconds.
    ttl: i64,
    /// The liveness keys the call may put on it (see [`Grant`]).
    locks: Vec<Vec<u8>>,
}

/// What a call decided on one version of the record.
struct Decided<T> {
    /// The answer, if the transaction holds.
    output: T,
    /// The caller's entry put on the call's lease (a hold or intent granted or renewed).
    put: Option<Entry>,
    /// Whether the answer is a refusal (held, queued) that other entries being live
    /// justify: it is given only when the transaction's read finds them all live.
    refused: bool,
    /// The caller's hold released and kept, and for how long its minimum lease lasts.
    keep_for: Option<(Entry, Duration)>,
}

/// Runs `decide` on the record of the lock `name` as last seen (the entries known ended
/// pruned), and writes what it changed in one transaction that holds while the key is
/// still that version and the caller's entries it counts on are still live; when it does
/// not, decides again on what the transaction read. `grant`: the call's lease, on which
/// the caller's entry `decide` puts goes. Nothing is written when `decide` fails or
/// changes nothing (the transaction then only confirms the version decided on).
async fn change<T>(
    conn: &Conn,
    name: &LockName,
    owner: OwnerToken,
    lease: Option<LeaseAsk>,
    mut decide: impl FnMut(&mut Stored, Micros, Micros) -> Result<Decided<T>, OpError>,
) -> Result<T, OpError> {
    let mut grant: Option<Grant> = None;
    // When the lease was asked for (this call's time), and the hold's expiry it grants
    // (before the grant: the lease time asked for, rounded up).
    let mut sent = SystemTime::now();
    let mut expires = later(
        sent,
        crate::time::granted(lease.as_ref().map_or(0, |lease| lease.ttl)),
    );
    let mut attempts = 0;
    let name = name.as_str();
    let key = conn.keys.shared(name);
    let live_key = |(kind, owner): Entry| conn.keys.shared_live(name, owner, kind.letter());
    let mut seen = conn.seen.get(&key);
    let mut live: Option<Live> = None;
    // Whether a transaction of this call put the caller's entry on its lease: once it
    // did, the lease is in use, whatever a later attempt answers.
    let mut used = false;
    while attempts < ATTEMPTS {
        let mut before = match &seen.value {
            Some(value) => decode(&key, value)?,
            None => Stored::default(),
        };
        if let Some(live) = &live {
            before.prune_dead(|entry, lease| live.has(conn, name, entry, lease));
        }
        let mut stored = before.clone();
        let decided = decide(&mut stored, Micros(micros(sent)), Micros(micros(expires)))?;
        if let (Some(_), None, Some(ask)) = (decided.put, &grant, &lease) {
            // The decision puts the caller's entry on a lease: grant it, then decide again
            // with the expiry it grants (a refusal needs none).
            sent = SystemTime::now();
            let (granted, ttl) = conn.grant(ask.ttl, ask.locks.clone()).await?;
            grant = Some(granted);
            expires = later(sent, ttl);
            continue;
        }
        attempts += 1;
        let on_lease = grant.as_ref().map(|grant| grant.on().clone());
        let put = decided.put.zip(on_lease);
        if let Some((entry, on)) = &put {
            stored.leases.insert(*entry, on.id);
        }
        stored.prune_dead(|_, _| true);
        let write = (stored != before).then(|| encode(&stored));

        // The caller's entries this call ends, and those whose being live it counts on.
        let mine = |stored: &Stored| -> Vec<Entry> {
            stored
                .entries()
                .into_iter()
                .map(|(entry, _)| entry)
                .filter(|(_, o)| *o == owner)
                .collect()
        };
        let after_mine = mine(&stored);
        let ended: Vec<Entry> = mine(&before)
            .into_iter()
            .filter(|entry| !after_mine.contains(entry))
            .collect();
        let counted: Vec<Entry> = ended
            .iter()
            .copied()
            .chain(put.as_ref().map(|(entry, _)| *entry))
            .chain(decided.keep_for.map(|(entry, _)| entry))
            .filter(|entry| before.lease_of(*entry).is_some())
            .collect();
        let mut compares = vec![Compare::mod_revision(
            key.clone(),
            CompareOp::Equal,
            seen.mod_revision,
        )];
        compares.extend(counted.iter().map(|entry| {
            Compare::lease(
                live_key(*entry),
                CompareOp::Equal,
                before.lease_of(*entry).unwrap_or(0),
            )
        }));
        let mut ops: Vec<TxnOp> = write
            .iter()
            .map(|value| TxnOp::put(key.clone(), value.clone(), None))
            .collect();
        if let Some((entry, on)) = &put {
            compares.push(on.not_void());
            let on_lease = PutOptions::new().with_lease(on.id);
            ops.push(TxnOp::put(live_key(*entry), Vec::new(), Some(on_lease)));
        }
        ops.extend(
            ended
                .iter()
                .map(|entry| TxnOp::delete(live_key(*entry), Some(DeleteOptions::new()))),
        );
        ops.push(live_range(conn, name));
        let txn = Txn::new()
            .when(compares)
            .and_then(ops)
            .or_else([TxnOp::get(key.clone(), None), live_range(conn, name)]);
        let mut answer = match (&put, grant.as_mut()) {
            (Some(_), Some(grant)) => {
                let answer = grant.send(txn).await?;
                used |= answer.succeeded;
                grant.answered(used);
                answer
            }
            _ => Answer::read(conn.client.kv_client().txn(txn).await?),
        };
        if !answer.succeeded {
            seen = match answer.got(0)? {
                Some(kv) => {
                    // A value of another shape is refused here, before it is remembered,
                    // and never overwritten.
                    decode(&key, &kv.value)?;
                    Version {
                        mod_revision: kv.mod_revision,
                        value: Some(kv.value),
                    }
                }
                None => Version::ABSENT,
            };
            conn.seen.saw(&key, seen.clone());
            live = Some(Live::read(answer.range(1)?));
            continue;
        }
        let read = Live::read(answer.range(answer_len(&write, &put, &ended))?);
        if let Some(value) = write {
            seen = Version {
                mod_revision: answer.revision,
                value: Some(value),
            };
            conn.seen.saw(&key, seen.clone());
        }
        // The old leases of what moved or ended: no key of this lock is on them now.
        let on = put.as_ref().map_or(0, |(_, on)| on.id);
        for entry in ended.iter().chain(put.as_ref().map(|(entry, _)| entry)) {
            if let Some(old) = before.lease_of(*entry).filter(|old| *old != on) {
                conn.revoke_later(old);
            }
        }
        if let Some((entry, left)) = decided.keep_for
            && let Some(lease) = before.lease_of(entry)
        {
            conn.revoke_after(lease, left);
        }
        let all_live = stored
            .entries()
            .into_iter()
            .all(|(entry, lease)| read.has(conn, name, entry, lease));
        if decided.refused && !all_live {
            // Refused behind an entry etcd had ended: decide again without it.
            live = Some(read);
            continue;
        }
        return Ok(decided.output);
    }
    Err(OpError::SharedContended)
}

/// The index of the liveness read in a transaction's `then` branch: after the record's
/// put, the caller's key's put and the deletes.
fn answer_len(
    write: &Option<Vec<u8>>,
    put: &Option<(Entry, crate::lease::OnLease)>,
    ended: &[Entry],
) -> usize {
    usize::from(write.is_some()) + usize::from(put.is_some()) + ended.len()
}
