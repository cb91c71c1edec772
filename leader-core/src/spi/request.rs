//! The requests a backend receives: [`AcquireRequest`], [`SlotRequest`] and its
//! [`SlotWalk`], [`Renewal`], [`ReleaseRequest`].

use std::time::Duration;

use crate::error::Error;
use crate::name::LockName;
use crate::spi::group::GroupKeys;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::outcome::{AcquireOutcome, SlotOutcome};
use crate::spi::state::LeaderLease;

/// What `try_acquire` asks of a backend.
///
/// Backends read its fields; callers build it with [`AcquireRequest::new`] (more fields
/// may be added, each with a default).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireRequest, LockName, OwnerToken};
///
/// let key = LockName::new("nightly")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30))
///     .with_db_time(true);
/// assert!(request.use_db_time);
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AcquireRequest<'a> {
    /// The full lock key.
    pub key: &'a LockName,
    /// The new acquisition's owner token (or the current one, to re-acquire).
    pub owner: OwnerToken,
    /// The node id recorded as leader.
    pub leader_id: &'a str,
    /// How long the lease lasts.
    pub lease_time: Duration,
    /// Take timestamps from the backend server's clock.
    pub use_db_time: bool,
}

impl<'a> AcquireRequest<'a> {
    /// A request for `key` by `owner`, recording `leader_id`, for `lease_time`, on the
    /// node's clock.
    pub fn new(
        key: &'a LockName,
        owner: OwnerToken,
        leader_id: &'a str,
        lease_time: Duration,
    ) -> Self {
        AcquireRequest {
            key,
            owner,
            leader_id,
            lease_time,
            use_db_time: false,
        }
    }

    /// The same request for another key: for backends that wrap another and map names.
    pub fn with_key<'b>(self, key: &'b LockName) -> AcquireRequest<'b>
    where
        'a: 'b,
    {
        AcquireRequest { key, ..self }
    }

    /// The same request, taking timestamps from the backend server's clock when `on`.
    pub fn with_db_time(mut self, on: bool) -> Self {
        self.use_db_time = on;
        self
    }
}

/// What `try_acquire_slot` asks of a backend: any one slot of a leader group, the slots
/// tried in turn from the first (a single lock is a group of one slot).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireRequest, GroupSlots, LockName, OwnerToken, SlotRequest};
///
/// let key = LockName::new("consumers")?;
/// let keys = GroupSlots::new(3)?.keys(&key)?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// let pass = SlotRequest::group(request, &keys, 2);
/// let order: Vec<(u32, &str)> = pass.slots().map(|(slot, key)| (slot, key.as_str())).collect();
/// assert_eq!(order, [(2, "consumers#2"), (0, "consumers"), (1, "consumers#1")]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SlotRequest<'a> {
    /// Who acquires, for how long, on which clock; its key is the first slot's.
    pub request: AcquireRequest<'a>,
    group: Option<&'a GroupKeys>,
    first: usize,
}

impl<'a> SlotRequest<'a> {
    /// The single lock `request.key`: one slot.
    pub fn single(request: AcquireRequest<'a>) -> Self {
        SlotRequest {
            request,
            group: None,
            first: 0,
        }
    }

    /// Any slot of the group `keys`, tried from slot `first` (modulo the group's size) on;
    /// `request` gives the owner, leader id, lease and clock (its key is replaced).
    pub fn group(request: AcquireRequest<'a>, keys: &'a GroupKeys, first: usize) -> Self {
        let first = first % keys.len();
        SlotRequest {
            request: request.with_key(keys.slot(first)),
            group: Some(keys),
            first,
        }
    }

    /// The group's name (slot 0's key), or the single lock's key: where the waiters for
    /// any of its slots listen.
    pub fn group_name(&self) -> &'a LockName {
        self.group.map_or(self.request.key, GroupKeys::group)
    }

    /// How many slots the request tries.
    pub fn len(&self) -> usize {
        self.group.map_or(1, GroupKeys::len)
    }

    /// Always `false`: a request tries at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The slots in the order they are tried: `(slot number, its lock key)`.
    pub fn slots(&self) -> impl Iterator<Item = (u32, &'a LockName)> + 'a {
        let this = *self;
        (0..self.len()).map(move |step| this.slot_at(step))
    }

    /// The slot tried at `step` (0 = the first).
    fn slot_at(&self, step: usize) -> (u32, &'a LockName) {
        match self.group {
            Some(keys) => {
                let slot = (self.first + step) % keys.len();
                (u32::try_from(slot).unwrap_or(u32::MAX), keys.slot(slot))
            }
            None => (0, self.request.key),
        }
    }

    /// Walks the slots one `try_acquire` at a time: what the traits' default
    /// `try_acquire_slot` does, for a backend that cannot try them all in one call.
    pub fn walk(self) -> SlotWalk<'a> {
        SlotWalk {
            request: self,
            step: 0,
            holder: None,
            skipped: None,
        }
    }
}

/// A walk over a [`SlotRequest`]'s slots, one `try_acquire` each, until one is acquired.
///
/// A slot whose `try_acquire` fails with a permanent error (its record is corrupted, say)
/// is skipped — logged at `warn` — and the walk goes on to the other slots: one unusable
/// slot must not keep the group from leading. A transient error ends the walk (the store
/// is not answering now). When no slot could be taken and one was skipped, the walk ends
/// with that slot's error rather than `Held`, so the corruption is reported.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireRequest, InMemoryBackend, LockBackend, LockName, OwnerToken, SlotOutcome, SlotRequest};
///
/// let backend = InMemoryBackend::new();
/// let key = LockName::new("job")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// let mut walk = SlotRequest::single(request).walk();
/// let outcome = loop {
///     let Some(request) = walk.next_request() else { break walk.finish()? };
///     match backend.try_acquire(request) {
///         Ok(answer) => {
///             if let Some(done) = walk.answer(answer) {
///                 break done;
///             }
///         }
///         Err(err) => walk.failed(err)?,
///     }
/// };
/// assert!(matches!(outcome, SlotOutcome::Acquired { slot: 0, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SlotWalk<'a> {
    request: SlotRequest<'a>,
    /// How many slots were requested so far.
    step: usize,
    holder: Option<LeaderLease>,
    /// The error of the first slot skipped for a permanent error.
    skipped: Option<Error>,
}

impl<'a> SlotWalk<'a> {
    /// The request for the next slot, `None` once every slot was found held.
    pub fn next_request(&mut self) -> Option<AcquireRequest<'a>> {
        if self.step >= self.request.len() {
            return None;
        }
        let (_, key) = self.request.slot_at(self.step);
        self.step += 1;
        Some(self.request.request.with_key(key))
    }

    /// The answer for the slot last requested: `Some` when it ends the walk.
    pub fn answer(&mut self, outcome: AcquireOutcome) -> Option<SlotOutcome> {
        match outcome {
            AcquireOutcome::Acquired(lease) => Some(SlotOutcome::Acquired {
                slot: self.request.slot_at(self.step.saturating_sub(1)).0,
                lease,
            }),
            AcquireOutcome::Held(holder) => {
                self.holder = holder.or(self.holder.take());
                None
            }
        }
    }

    /// The `try_acquire` of the slot last requested failed with `error`: `Ok(())` to go on
    /// with the other slots when it is permanent (the slot is skipped, and logged), the
    /// error back when it is transient (the walk ends) or the request has one slot only.
    ///
    /// # Errors
    ///
    /// `error`, when it is transient or the request is a single lock.
    pub fn failed(&mut self, error: Error) -> Result<(), Error> {
        if error.is_transient() || self.request.len() == 1 {
            return Err(error);
        }
        let (slot, key) = self.request.slot_at(self.step.saturating_sub(1));
        tracing::warn!(lock = %key, slot, error = %error, "skipping a slot of the group that cannot be acquired (its record may be corrupted); trying the others");
        self.skipped.get_or_insert(error);
        Ok(())
    }

    /// No slot was taken: every slot was held (the last holder seen), or, when a slot was
    /// skipped for a permanent error, that error.
    ///
    /// # Errors
    ///
    /// The error of the first slot skipped.
    pub fn finish(self) -> Result<SlotOutcome, Error> {
        match self.skipped {
            Some(error) => Err(error),
            None => Ok(SlotOutcome::Held(self.holder)),
        }
    }
}

/// One lease of an [`extend_batch`](crate::LockBackend::extend_batch): what
/// [`extend`](crate::LockBackend::extend) takes for one lease.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{Lease, LockName, OwnerToken, Renewal};
///
/// let now = SystemTime::now();
/// let lease = Lease::new(LockName::new("job")?, OwnerToken::random(), "node-a", 1, now, now);
/// let renewal = Renewal::new(&lease, Duration::from_secs(30)).with_db_time(true);
/// assert!(renewal.use_db_time);
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Renewal<'a> {
    /// The lease to renew.
    pub lease: &'a Lease,
    /// For how long from now.
    pub lease_time: Duration,
    /// Take the time from the backend server's clock.
    pub use_db_time: bool,
}

impl<'a> Renewal<'a> {
    /// Renews `lease` for `lease_time`, on the node's clock.
    pub fn new(lease: &'a Lease, lease_time: Duration) -> Self {
        Renewal {
            lease,
            lease_time,
            use_db_time: false,
        }
    }

    /// The same renewal, taking the time from the backend server's clock when `on`.
    pub fn with_db_time(mut self, on: bool) -> Self {
        self.use_db_time = on;
        self
    }
}

/// One lease of a [`release_batch`](crate::LockBackend::release_batch): what
/// [`release`](crate::LockBackend::release) takes for one lease.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{Lease, LockName, OwnerToken, ReleaseRequest};
///
/// let now = SystemTime::now();
/// let lease = Lease::new(LockName::new("job")?, OwnerToken::random(), "node-a", 1, now, now);
/// let release = ReleaseRequest::new(&lease, Duration::from_secs(30));
/// assert_eq!(release.min_lease_time, Duration::from_secs(30));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ReleaseRequest<'a> {
    /// The lease to release.
    pub lease: &'a Lease,
    /// Keep the lock until `acquired_at + min_lease_time`.
    pub min_lease_time: Duration,
}

impl<'a> ReleaseRequest<'a> {
    /// Releases `lease`, keeping the lock for `min_lease_time` from its acquisition.
    pub fn new(lease: &'a Lease, min_lease_time: Duration) -> Self {
        ReleaseRequest {
            lease,
            min_lease_time,
        }
    }
}
