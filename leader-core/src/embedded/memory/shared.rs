//! The in-memory backend's read/write locks: one [`SharedRecord`] per name, on the
//! backend's monotonic clock, in a map apart from the exclusive locks (a name may be both).

#![allow(unreachable_pub)]

use std::time::{Instant, SystemTime};

use crate::embedded::memory::calls::Apply;
use crate::embedded::memory::{InMemoryBackend, too_long};
use crate::kit::{
    Call, Failure, Released, SharedAnswer, SharedAsk, SharedHolder, SharedRecord, SharedStore,
};
use crate::name::LockName;
use crate::spi::lease::Lease;
use crate::spi::outcome::ExtendOutcome;
use crate::spi::request::{ReleaseRequest, Renewal};
use crate::spi::shared::{Role, SharedOutcome, SharedRequest, SharedState, WriterIntent};
use crate::spi::state::LeaderLease;

/// Reads an instant of the monotonic clock as a wall time: `wall` is what `now` reads as.
fn wall(at: Instant, now: Instant, wall: SystemTime) -> SystemTime {
    if at >= now {
        wall.checked_add(at - now).unwrap_or(wall)
    } else {
        wall.checked_sub(now - at).unwrap_or(wall)
    }
}

fn snapshot(holder: &SharedHolder<Instant>, now: Instant, at: SystemTime) -> LeaderLease {
    LeaderLease::new(
        holder.node.clone(),
        wall(holder.acquired, now, at),
        wall(holder.expires, now, at),
        holder.token,
    )
}

fn state(
    record: &SharedRecord<Instant>,
    key: &LockName,
    now: Instant,
    at: SystemTime,
) -> SharedState {
    SharedState::new(
        key.as_str(),
        record.writer.as_ref().map(|w| snapshot(w, now, at)),
        record
            .readers
            .iter()
            .map(|r| snapshot(r, now, at))
            .collect(),
        record
            .intent
            .as_ref()
            .map(|i| WriterIntent::new(i.node.clone(), wall(i.expires, now, at))),
    )
}

impl InMemoryBackend {
    fn acquire_shared(&self, request: SharedRequest<'_>) -> Result<SharedOutcome, Failure> {
        let ask = request.request;
        let now = self.monotonic();
        let expires = now
            .checked_add(ask.lease_time)
            .ok_or_else(|| too_long(ask.lease_time))?;
        let reported = self.reported_now(ask.use_db_time);
        reported
            .checked_add(ask.lease_time)
            .ok_or_else(|| too_long(ask.lease_time))?;
        let mut records = self.inner.shared.lock();
        let record = records.entry(ask.key.as_str().to_owned()).or_default();
        let answer = record.acquire(
            SharedAsk {
                role: request.role,
                owner: ask.owner,
                node: ask.leader_id,
                expires,
                max_readers: request.max_readers.get(),
                token_floor: 0,
            },
            now,
        );
        Ok(match answer {
            SharedAnswer::Acquired(holder) => SharedOutcome::Acquired(Lease::new(
                ask.key.clone(),
                ask.owner,
                holder.node,
                holder.token,
                wall(holder.acquired, now, reported),
                wall(holder.expires, now, reported),
            )),
            SharedAnswer::Held => SharedOutcome::Held(state(record, ask.key, now, reported)),
            SharedAnswer::Queued => SharedOutcome::Queued(state(record, ask.key, now, reported)),
        })
    }

    fn extend_shared(&self, renewal: Renewal<'_>, role: Role) -> Result<ExtendOutcome, Failure> {
        let now = self.monotonic();
        let too_long = || too_long(renewal.lease_time);
        let expires = now.checked_add(renewal.lease_time).ok_or_else(too_long)?;
        let reported = self.reported_now(renewal.use_db_time);
        let expires_at = reported
            .checked_add(renewal.lease_time)
            .ok_or_else(too_long)?;
        let mut records = self.inner.shared.lock();
        let renewed = records
            .get_mut(renewal.lease.key.as_str())
            .and_then(|record| record.extend(role, renewal.lease.owner, expires, now))
            .is_some();
        Ok(if renewed {
            ExtendOutcome::Extended { expires_at }
        } else {
            ExtendOutcome::NotHeld
        })
    }

    fn release_shared(&self, release: ReleaseRequest<'_>, role: Role) -> Released {
        let now = self.monotonic();
        let mut records = self.inner.shared.lock();
        let Some(record) = records.get_mut(release.lease.key.as_str()) else {
            return Released::NotHeld;
        };
        let owner = release.lease.owner;
        if !record.release(role, owner, release.min_lease_time, now) {
            return Released::NotHeld;
        }
        let kept = match role {
            Role::Read => record.readers.iter().any(|r| r.owner == owner),
            Role::Write => record.writer.as_ref().is_some_and(|w| w.owner == owner),
        };
        if kept {
            Released::Kept
        } else {
            Released::Freed
        }
    }

    fn shared_snapshot(&self, key: &LockName) -> SharedState {
        let now = self.monotonic();
        let at = self.now();
        let mut records = self.inner.shared.lock();
        match records.get_mut(key.as_str()) {
            Some(record) => {
                record.prune(now);
                state(record, key, now, at)
            }
            None => SharedState::empty(key.as_str()),
        }
    }
}

/// `try_acquire_shared`.
#[derive(Debug)]
pub struct AcquireShared<'a>(SharedRequest<'a>);

impl Call for AcquireShared<'_> {
    type Output = SharedOutcome;
    const NAME: &'static str = "acquire_shared";

    fn outcome(output: &SharedOutcome) -> &'static str {
        output.as_str()
    }
}

impl Apply for AcquireShared<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<SharedOutcome, Failure> {
        store.acquire_shared(self.0)
    }
}

/// `extend_shared`.
#[derive(Debug)]
pub struct ExtendShared<'a>(Renewal<'a>, Role);

impl Call for ExtendShared<'_> {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend_shared";
}

impl Apply for ExtendShared<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<ExtendOutcome, Failure> {
        store.extend_shared(self.0, self.1)
    }
}

/// `release_shared`.
#[derive(Debug)]
pub struct ReleaseShared<'a>(ReleaseRequest<'a>, Role);

impl Call for ReleaseShared<'_> {
    type Output = Released;
    const NAME: &'static str = "release_shared";
}

impl Apply for ReleaseShared<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<Released, Failure> {
        Ok(store.release_shared(self.0, self.1))
    }
}

/// `state_shared`.
#[derive(Debug)]
pub struct StateShared<'a>(&'a LockName);

impl Call for StateShared<'_> {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";
}

impl Apply for StateShared<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<SharedState, Failure> {
        Ok(store.shared_snapshot(self.0))
    }
}

impl SharedStore for InMemoryBackend {
    type AcquireShared<'a> = AcquireShared<'a>;
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> AcquireShared<'a> {
        AcquireShared(request)
    }

    type ExtendShared<'a> = ExtendShared<'a>;
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role) -> ExtendShared<'a> {
        ExtendShared(renewal, role)
    }

    type ReleaseShared<'a> = ReleaseShared<'a>;
    fn plan_release_shared<'a>(
        &'a self,
        release: ReleaseRequest<'a>,
        role: Role,
    ) -> ReleaseShared<'a> {
        ReleaseShared(release, role)
    }

    type StateShared<'a> = StateShared<'a>;
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> StateShared<'a> {
        StateShared(key)
    }
}
