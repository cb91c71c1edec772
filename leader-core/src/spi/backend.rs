//! The backend SPI: four primitives (and a group's acquire and the batches, built on them by
//! default), one blocking trait and one async trait.
//!
//! Everything else (waiting, renewal, results, tenants) lives in the electors, once.

use std::future::Future;

use crate::error::Error;
use crate::name::LockName;

use crate::spi::listing::{ForceReleaseOutcome, ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome, ReleaseOutcome, SlotOutcome};
use crate::spi::record::{RecordWrite, RecordWriteOutcome, StoredRecord};
use crate::spi::release_events::ReleaseEvents;
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal, SlotRequest};
use crate::spi::state::LeaderState;

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
/// The guarantees a backend owns. The electors build everything else on these (waiting,
/// renewal, results, tenants, campaigns), and the contract suite in `leader-testkit` checks
/// each one on every backend and runtime:
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
/// 7. **Clock**: expiry is decided on one clock that no node's wall clock moves: a server
///    backend's own clock, or for an embedded backend a host clock that does not step;
///    with `use_db_time`, the reported timestamps come from that clock too.
///
/// And for operators:
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
///
/// And for the scheduler:
///
/// - **Records**: `write_record` is a compare-and-set. It writes only while the stored
///   version is the one expected (`None`: no record), in one atomic step, and the record's
///   version becomes one more (1 for a new record); concurrent writes over one version
///   produce exactly one `Written`. Any other write answers `Conflict` and changes nothing.
///   Records live apart from locks: no lock operation (acquire, release, force release,
///   expiry) touches one, a record never expires, and the same name may be a lock and a
///   record at once. A record the store holds in a shape no backend writes is a
///   permanent error ([`corrupt_record`](crate::corrupt_record)), never overwritten. A
///   write that fails may have landed: the writer reads the record again.
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
    /// The default walks the slots with one `try_acquire` each (see [`SlotWalk`](crate::SlotWalk): a slot
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

    /// Renews `renewal.lease` for `renewal.lease_time` from now, if it is still held by its
    /// owner.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error>;

    /// Renews many leases: one answer per renewal, in their order, each what
    /// [`extend`](Self::extend) would answer for it. For a renewal driver that renews
    /// every due lease of a process at once.
    ///
    /// The default calls `extend` once per lease. A backend that can send many renewals in
    /// one round trip overrides it (Redis: one script for hundreds of leases), so a node
    /// holding thousands of leases renews them in a few round trips.
    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        renewals.iter().map(|r| self.extend(*r)).collect()
    }

    /// Frees the lock if `release.lease` still holds it, or shortens it to end at
    /// `acquired_at + release.min_lease_time` when that is still ahead.
    ///
    /// Releasing one's own lease after it expired (and nobody took the lock) may report
    /// either outcome; it never touches another owner's lock.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store.
    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error>;

    /// Releases many leases: one answer per release, in their order, each what
    /// [`release`](Self::release) would answer for it. For a tenant poller that releases
    /// the locks of many finished jobs at once.
    ///
    /// The default calls `release` once per lease; Redis releases up to 100 per script.
    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        releases.iter().map(|r| self.release(*r)).collect()
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

    /// The record `key`, or `None` when there is none (see **Records** in the contract).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store, and (permanent) for a corrupted
    /// record.
    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error>;

    /// Writes `write.value()` to the record `write.key()` if its version is still
    /// `write.expected()`: a compare-and-set (see **Records** in the contract).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] on any failure of the store (the write may have landed), and
    /// (permanent) for a corrupted record.
    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error>;
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
        renewal: Renewal<'_>,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send;

    /// See [`LockBackend::extend_batch`]; the default renews one lease after the other.
    fn extend_batch(
        &self,
        renewals: &[Renewal<'_>],
    ) -> impl Future<Output = Vec<Result<ExtendOutcome, Error>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(renewals.len());
            for r in renewals {
                answers.push(self.extend(*r).await);
            }
            answers
        }
    }

    /// See [`LockBackend::release`].
    fn release(
        &self,
        release: ReleaseRequest<'_>,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send;

    /// See [`LockBackend::release_batch`]; the default releases one lease after the other.
    fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> impl Future<Output = Vec<Result<ReleaseOutcome, Error>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(releases.len());
            for r in releases {
                answers.push(self.release(*r).await);
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

    /// See [`LockBackend::read_record`].
    fn read_record(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<Option<StoredRecord>, Error>> + Send;

    /// See [`LockBackend::write_record`].
    fn write_record(
        &self,
        write: RecordWrite<'_>,
    ) -> impl Future<Output = Result<RecordWriteOutcome, Error>> + Send;
}
