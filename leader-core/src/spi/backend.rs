//! The backend SPI: four primitives (and a group's acquire and the batches, built on them by
//! default), one blocking trait and one async trait.
//!
//! Everything else (waiting, renewal, results, tenants) lives in the electors, once.

use std::future::Future;
use std::time::{Duration, SystemTime};

use crate::error::Error;
use crate::name::LockName;
use crate::spi::group::GroupKeys;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::listing::{ForceReleaseOutcome, ListPage, ListRequest};
use crate::spi::release_events::ReleaseEvents;
use crate::spi::state::{LeaderLease, LeaderState};

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

/// An [`AcquireRequest`] that owns its data, for a backend that moves the request to
/// another thread or task (a blocking pool, a background runtime).
#[derive(Debug, Clone)]
pub struct OwnedAcquire {
    /// The full lock key.
    pub key: LockName,
    /// The acquisition's owner token.
    pub owner: OwnerToken,
    /// The node id recorded as leader.
    pub leader_id: String,
    /// How long the lease lasts.
    pub lease_time: Duration,
}

impl From<AcquireRequest<'_>> for OwnedAcquire {
    fn from(request: AcquireRequest<'_>) -> Self {
        OwnedAcquire {
            key: request.key.clone(),
            owner: request.owner,
            leader_id: request.leader_id.to_owned(),
            lease_time: request.lease_time,
        }
    }
}

/// The answer to `try_acquire`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireOutcome {
    /// The caller holds the lock now.
    Acquired(Lease),
    /// Someone else holds it; the holder, when the backend could tell.
    Held(Option<LeaderLease>),
}

/// The answer to `try_acquire_slot`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotOutcome {
    /// The caller holds `slot` now (slot 0 for a single lock); `lease.key` is its key.
    Acquired {
        /// The slot's number.
        slot: u32,
        /// The lease on it.
        lease: Lease,
    },
    /// Every slot was held; a holder, when the backend could tell.
    Held(Option<LeaderLease>),
}

impl SlotOutcome {
    /// The answer as `try_acquire` gives it, without the slot: for a backend whose
    /// `try_acquire` is its `try_acquire_slot` of one slot.
    pub fn into_acquire(self) -> AcquireOutcome {
        match self {
            SlotOutcome::Acquired { lease, .. } => AcquireOutcome::Acquired(lease),
            SlotOutcome::Held(holder) => AcquireOutcome::Held(holder),
        }
    }

    /// A short label for logs and metrics: `"acquired"` or `"held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SlotOutcome::Acquired { .. } => "acquired",
            SlotOutcome::Held(_) => "held",
        }
    }
}

/// One lease of an [`extend_batch`](LockBackend::extend_batch): what
/// [`extend`](LockBackend::extend) takes for one lease.
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

/// One lease of a [`release_batch`](LockBackend::release_batch): what
/// [`release`](LockBackend::release) takes for one lease.
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

/// The answer to `extend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtendOutcome {
    /// The lease was renewed; it now runs out at `expires_at` (backend or node clock).
    Extended {
        /// The new expiry.
        expires_at: SystemTime,
    },
    /// The caller's lease is gone (expired, released, or taken by another owner).
    NotHeld,
}

/// The answer to `release`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReleaseOutcome {
    /// The lock was freed (or shortened to `acquired_at + min_lease_time`).
    Released,
    /// The caller did not hold the lock; nothing changed.
    NotHeld,
}

impl AcquireOutcome {
    /// A short label for logs and metrics: `"acquired"` or `"held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AcquireOutcome::Acquired(_) => "acquired",
            AcquireOutcome::Held(_) => "held",
        }
    }
}

impl ExtendOutcome {
    /// A short label for logs and metrics: `"extended"` or `"not_held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExtendOutcome::Extended { .. } => "extended",
            ExtendOutcome::NotHeld => "not_held",
        }
    }
}

impl ReleaseOutcome {
    /// A short label for logs and metrics: `"released"` or `"not_held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ReleaseOutcome::Released => "released",
            ReleaseOutcome::NotHeld => "not_held",
        }
    }
}

/// What both backend traits share: a name for errors and an optional release notifier.
pub trait Backend: Send + Sync {
    /// A short name for errors and traces (`"memory"`, `"redis"`, ...).
    fn name(&self) -> &'static str;

    /// Release notifications, when the backend can send them. Waiting electors listen
    /// here before each attempt and retry as soon as the lock they wait for is released;
    /// they fall back to polling with backoff when this is `None` or notifications stop.
    fn release_events(&self) -> Option<&ReleaseEvents> {
        None
    }

    /// Where the lock `name` lives in the store, for operators and logs (a Redis key, a
    /// document id): the name itself unless the backend maps it. Electors expose it as
    /// `storage_key(name)`, tenant prefix included.
    fn storage_key(&self, name: &LockName) -> String {
        name.as_str().to_owned()
    }
}

/// A blocking lock backend.
///
/// # Contract
///
/// The guarantees of DESIGN §4 that a backend owns (the contract suite in
/// `leader-testkit` checks each):
///
/// 1. **Mutual exclusion**: at most one unexpired lease per key at any moment;
///    concurrent `try_acquire` calls on a free key produce exactly one `Acquired`.
/// 2. **Ownership**: `extend` and `release` act only when the stored owner token equals
///    the lease's; otherwise they return `NotHeld` and change nothing. They identify the
///    lease by its key and owner token alone (electors release a possibly orphaned
///    acquisition knowing only those, the electors' orphan release). `try_acquire` with
///    the current owner's token re-acquires (renews) and keeps the fencing token, so a
///    retried acquire whose first answer was lost is harmless.
/// 3. **Fencing**: every new owner gets a fencing token strictly greater than every earlier
///    one for the key, surviving release, expiry and whatever the store loses (a counter
///    rolled back to an older snapshot, a deleted record): a server backend makes each
///    token at least its clock in microseconds (`max(counter + 1, server time)`).
/// 4. **Fail closed**: trouble is an `Err(Error::Backend)` carrying the key and a
///    transient/permanent kind, never an `Acquired` or `Held` made up.
/// 5. `state` never reports an expired lease.
/// 6. **Min lease**: `release` keeps the lock until `acquired_at + min_lease_time` in the
///    store, and returns without waiting for it.
/// 8. **Clock**: with `use_db_time`, timestamps come from the backend's clock.
///
/// And for operators (not numbered in DESIGN §4):
///
/// - **Listing**: `list` pages through the unexpired holders whose key starts with the
///   prefix, holding at most about one page in memory, without a command that blocks the
///   server (no Redis `KEYS`). It refuses a cursor it did not make for this listing
///   (garbled, of another prefix, of another kind of backend): see
///   [`ListCursor::tagged`](crate::ListCursor::tagged).
/// - **Lease times**: a lease the store cannot hold (`Duration::MAX`, or beyond its
///   range) is a permanent `Error::Backend` and changes nothing; never a lease cut to what
///   the store holds.
/// - **Force release**: `force_release` frees a lock whoever holds it. The fencing counter
///   stays, waiters are woken as on a normal release, and the holder's next `extend` or
///   `release` is `NotHeld` (its elector reports the lease lost).
/// - **Conditional force release**: `force_release_if(key, fencing_token)` frees the lock
///   as `force_release` does, but only while its unexpired holder is the acquisition with
///   that fencing token, checked and freed in one atomic step (one script, one statement,
///   one `findOneAndUpdate`, one critical section). Otherwise it changes nothing and
///   reports the holder now seen (`HolderChanged`) or a free lock (`NotHeld`), so an
///   operator who looked at holder A never frees B, who took over meanwhile.
pub trait LockBackend: Backend {
    /// Takes the lock if it is free, expired, or already owned by `request.owner`.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error>;

    /// Tries many locks at once: one answer per request, in their order, each what
    /// [`try_acquire`](Self::try_acquire) would answer for it. For a tenant poller that
    /// tries thousands of tenants' locks each cycle.
    ///
    /// The default calls `try_acquire` once per request. A backend that can send many
    /// requests in one round trip overrides it (Redis pipelines them), so trying 1,000 locks
    /// costs one round trip instead of 1,000. Each request keeps the guarantees of a
    /// single `try_acquire`; the batch as a whole is not atomic.
    ///
    /// An `Err` answer is that request's failure alone, and, as after a failed
    /// `try_acquire`, its lock may have been taken by its owner token all the same.
    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        requests
            .iter()
            .map(|request| self.try_acquire(*request))
            .collect()
    }

    /// Takes the first slot of `request`, in its order, that [`try_acquire`](Self::try_acquire)
    /// would take (free, expired, or already `request.owner`'s), or reports every slot held.
    /// A backend may instead prefer a slot `request.owner` already holds to an earlier free
    /// one, so that a retried attempt never holds two slots (Redis does; the default takes
    /// the slots in order, and the electors release a second slot taken that way).
    ///
    /// The default walks the slots with one `try_acquire` each (see [`SlotWalk`]: a slot
    /// that fails with a permanent error, a corrupted record, is skipped for the others).
    /// A backend that can try them all in one call (one script, one statement) overrides
    /// it: a group then costs one round trip whatever its size, and a `Held` means every
    /// slot was held at one moment; it too takes a usable slot over a corrupted one, and
    /// reports the corrupted one only when no slot could be taken. Either way each slot
    /// keeps the guarantees of a single lock, so a group never has more holders than slots.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store. After an error any slot of the
    /// request may have been taken by `request.owner`.
    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        let mut walk = request.walk();
        while let Some(request) = walk.next_request() {
            match self.try_acquire(request) {
                Ok(answer) => {
                    if let Some(done) = walk.answer(answer) {
                        return Ok(done);
                    }
                }
                Err(err) => walk.failed(err)?,
            }
        }
        walk.finish()
    }

    /// Renews `lease` for `lease_time` from now, if it is still held by its owner.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Result<ExtendOutcome, Error>;

    /// Renews many leases: one answer per renewal, in their order, each what
    /// [`extend`](Self::extend) would answer for it. For a renewal driver that renews
    /// every due lease of a process at once.
    ///
    /// The default calls `extend` once per lease. A backend that can send many renewals in
    /// one round trip overrides it (Redis: one script for hundreds of leases), so a node
    /// holding thousands of leases renews them in a few round trips.
    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        renewals
            .iter()
            .map(|r| self.extend(r.lease, r.lease_time, r.use_db_time))
            .collect()
    }

    /// Frees the lock if `lease` still holds it, or shortens it to end at
    /// `acquired_at + min_lease_time` when that is still ahead.
    ///
    /// Releasing one's own lease after it expired (and nobody took the lock) may report
    /// either outcome; it never touches another owner's lock.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error>;

    /// Releases many leases: one answer per release, in their order, each what
    /// [`release`](Self::release) would answer for it. For a tenant poller that releases
    /// the locks of many finished jobs at once.
    ///
    /// The default calls `release` once per lease; Redis releases up to 100 per script.
    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        releases
            .iter()
            .map(|r| self.release(r.lease, r.min_lease_time))
            .collect()
    }

    /// A best-effort snapshot of the lock; never an expired holder.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn state(&self, key: &LockName) -> Result<LeaderState, Error>;

    /// One page of the held locks whose key starts with `request.prefix` (see
    /// [`ListPage`] for what best-effort means here).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store, or (permanent) a cursor this backend
    /// did not make for this prefix.
    fn list(&self, request: &ListRequest) -> Result<ListPage, Error>;

    /// Frees the lock `key` whoever holds it: an operator's action, for a holder that is
    /// stuck. Returns the holder it removed.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error>;

    /// Whether [`extend_batch`](Self::extend_batch) renews its leases together (one round
    /// trip, one script), so that a slow answer for one lease is a slow answer for all of
    /// them anyway. `false` (the default, right for a backend that keeps the default
    /// `extend_batch`) when it renews them one `extend` after the other.
    ///
    /// The blocking renewal driver sends a native batch whole; without one it renews each
    /// lease on its own, several at once, so that one stuck key (a row locked by another
    /// client, a shard that stopped answering) holds up no other lease's renewal. A
    /// wrapper backend forwards its inner backend's answer only if it forwards
    /// `extend_batch` too.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::{InMemoryBackend, LockBackend};
    ///
    /// // In memory no lease's renewal can hold up another's: its batches are sent whole.
    /// assert!(LockBackend::extend_batch_is_native(&InMemoryBackend::new()));
    /// ```
    fn extend_batch_is_native(&self) -> bool {
        false
    }

    /// Frees the lock `key` only if its unexpired holder is the acquisition with
    /// `fencing_token` (a holder kept for its minimum lease included), as
    /// [`force_release`](Self::force_release) frees it; returns that holder. Another
    /// holder is returned as [`ForceReleaseOutcome::HolderChanged`] and a free lock as
    /// [`ForceReleaseOutcome::NotHeld`], and nothing changes.
    ///
    /// The check and the release are one atomic step in the store. There is no default:
    /// one built on `state` and `force_release` would free a holder that took over between
    /// the two calls, the very case this call exists for.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error>;
}

/// An async lock backend: the same four primitives as [`LockBackend`], as futures.
///
/// # Contract
///
/// Exactly the guarantees listed on [`LockBackend`]. In addition, every future must be
/// `Send` and must not block the executor thread.
///
/// # Cancel safety
///
/// A dropped `try_acquire` future may or may not have taken the lock (and the request may
/// still land later). Electors that are cancelled mid-acquire release the owner token they
/// sent in the background, so a backend needs nothing more
/// than its ownership rule for that.
pub trait AsyncLockBackend: Backend {
    /// See [`LockBackend::try_acquire`].
    fn try_acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<AcquireOutcome, Error>> + Send;

    /// See [`LockBackend::try_acquire_batch`]; the default tries one request after the
    /// other.
    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> impl Future<Output = Vec<Result<AcquireOutcome, Error>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests {
                answers.push(self.try_acquire(*request).await);
            }
            answers
        }
    }

    /// See [`LockBackend::try_acquire_slot`]; the default walks the slots likewise.
    fn try_acquire_slot(
        &self,
        request: SlotRequest<'_>,
    ) -> impl Future<Output = Result<SlotOutcome, Error>> + Send {
        async move {
            let mut walk = request.walk();
            while let Some(request) = walk.next_request() {
                match self.try_acquire(request).await {
                    Ok(answer) => {
                        if let Some(done) = walk.answer(answer) {
                            return Ok(done);
                        }
                    }
                    Err(err) => walk.failed(err)?,
                }
            }
            walk.finish()
        }
    }

    /// See [`LockBackend::extend`].
    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send;

    /// See [`LockBackend::extend_batch`]; the default renews one lease after the other.
    fn extend_batch(
        &self,
        renewals: &[Renewal<'_>],
    ) -> impl Future<Output = Vec<Result<ExtendOutcome, Error>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(renewals.len());
            for r in renewals {
                answers.push(self.extend(r.lease, r.lease_time, r.use_db_time).await);
            }
            answers
        }
    }

    /// See [`LockBackend::release`].
    fn release(
        &self,
        lease: &Lease,
        min_lease_time: Duration,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send;

    /// See [`LockBackend::release_batch`]; the default releases one lease after the other.
    fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> impl Future<Output = Vec<Result<ReleaseOutcome, Error>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(releases.len());
            for r in releases {
                answers.push(self.release(r.lease, r.min_lease_time).await);
            }
            answers
        }
    }

    /// See [`LockBackend::state`].
    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send;

    /// See [`LockBackend::list`].
    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send;

    /// See [`LockBackend::force_release`].
    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send;

    /// See [`LockBackend::extend_batch_is_native`]: whether this trait's
    /// [`extend_batch`](Self::extend_batch) renews its leases together. `false` by default.
    fn extend_batch_is_native(&self) -> bool {
        false
    }

    /// See [`LockBackend::force_release_if`].
    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send;
}
