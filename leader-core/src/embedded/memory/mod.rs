//! [`InMemoryBackend`]: locks in this process's memory, the embedded default. Its store
//! calls, for the backend kit, are `calls.rs`.

mod calls;
mod shared;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use crate::embedded::clock::{Clock, SystemClock};
use crate::kit::calls::WriteRecord;
use crate::kit::{Failure, Released};
use crate::name::LockName;
use crate::spi::backend::Backend;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::lease_limit::LeaseTooLong;
use crate::spi::listing::{ForceReleaseOutcome, ListCursor, ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome};
use crate::spi::record::{RecordWriteOutcome, StoredRecord};
use crate::spi::release_events::ReleaseEvents;
use crate::spi::request::AcquireRequest;
use crate::spi::state::{LeaderLease, LeaderState};

/// Locks held in this process's memory, behind one `parking_lot` mutex.
///
/// For a single process with many workers, for tests, and for the quickstart. It keeps one
/// small record per lock name ever used, so fencing tokens keep growing across release and
/// expiry for the life of the backend value (nothing it holds outlives the process, holders
/// included, so there is no data loss to survive). Expiry follows the monotonic reading of the backend's [`Clock`], so a step of the
/// wall clock never frees or stretches a lease; give it a [`ManualClock`](crate::ManualClock)
/// to move time in tests. `use_db_time` makes the reported `acquired_at`/`expires_at` come
/// from that clock's wall time (otherwise from the system clock of the caller), like a
/// server's clock would.
///
/// Releases are announced through [`ReleaseEvents`], so waiting electors take over at once.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, InMemoryBackend, LockBackend, LockName, OwnerToken, ReleaseRequest};
///
/// let backend = InMemoryBackend::new();
/// let key = LockName::new("nightly")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// let AcquireOutcome::Acquired(lease) = backend.try_acquire(request)? else { unreachable!() };
/// assert_eq!(lease.fencing_token, 1);
/// backend.release(ReleaseRequest::new(&lease, Duration::ZERO))?;
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct InMemoryBackend {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    clock: Arc<dyn Clock>,
    slots: Mutex<HashMap<String, Slot>>,
    /// Records, apart from the locks (no lock operation touches one).
    records: Mutex<HashMap<String, StoredRecord>>,
    /// Read/write locks, apart from the exclusive ones (`shared.rs`).
    shared: Mutex<HashMap<String, crate::kit::SharedRecord<Instant>>>,
    events: ReleaseEvents,
}

/// The backend's name, in errors and list cursors.
const NAME: &str = "memory";

/// The permanent failure of a lease that reaches beyond what the clocks hold (`now +
/// lease` is no `Instant` or no `SystemTime`).
fn too_long(lease: Duration) -> Failure {
    Failure::permanent(LeaseTooLong::new(lease))
}

/// One lock's record: the last fencing token handed out and the current holder.
#[derive(Debug, Default)]
struct Slot {
    fence: u64,
    holder: Option<Holder>,
    /// The last holder's id buffer, reused by the next holder to save an allocation.
    spare_leader_id: String,
}

#[derive(Debug)]
struct Holder {
    owner: OwnerToken,
    leader_id: String,
    fencing_token: u64,
    /// Reported times, on the wall clock `use_db_time` chose.
    acquired_at: SystemTime,
    expires_at: SystemTime,
    /// Expiry bookkeeping, always on the backend's monotonic clock (like a server's `PX`).
    acquired_on_clock: Instant,
    deadline: Instant,
    /// Released with a minimum lease: kept until the deadline, but no longer the owner's
    /// to renew or release (a renewal that was in flight must not stretch it).
    released: bool,
}

impl Holder {
    fn is_live_for(&self, owner: OwnerToken, now: Instant) -> bool {
        self.owner == owner && !self.released && self.deadline > now
    }

    fn snapshot(&self) -> LeaderLease {
        LeaderLease::new(
            self.leader_id.clone(),
            self.acquired_at,
            self.expires_at,
            self.fencing_token,
        )
    }
}

impl Default for InMemoryBackend {
    fn default() -> Self {
        InMemoryBackend::new()
    }
}

impl InMemoryBackend {
    /// A backend on the system clock.
    pub fn new() -> Self {
        InMemoryBackend::with_clock(SystemClock)
    }

    /// A backend on the given clock.
    pub fn with_clock(clock: impl Clock + 'static) -> Self {
        InMemoryBackend {
            inner: Arc::new(Inner {
                clock: Arc::new(clock),
                slots: Mutex::new(HashMap::new()),
                records: Mutex::new(HashMap::new()),
                shared: Mutex::new(HashMap::new()),
                events: ReleaseEvents::new(),
            }),
        }
    }

    /// The current wall-clock time on the backend's clock.
    pub fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    fn monotonic(&self) -> Instant {
        self.inner.clock.monotonic()
    }

    /// The wall-clock time a lease reports: the backend's clock with `use_db_time` (a
    /// server's clock, as it were), the caller's otherwise.
    fn reported_now(&self, use_db_time: bool) -> SystemTime {
        if use_db_time || self.inner.clock.is_system_clock() {
            self.inner.clock.now()
        } else {
            SystemTime::now()
        }
    }

    /// Takes the lock. A lease the clocks cannot hold is refused before anything changes.
    fn acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Failure> {
        let clock_now = self.monotonic();
        let too_long = || too_long(request.lease_time);
        let deadline = clock_now
            .checked_add(request.lease_time)
            .ok_or_else(too_long)?;
        // Read only when the caller gets the lock: a `Held` answer needs no wall clock.
        let expires_at = || {
            let now = self.reported_now(request.use_db_time);
            Some((now, now.checked_add(request.lease_time)?))
        };
        let mut slots = self.inner.slots.lock();
        let slot = match slots.get_mut(request.key.as_str()) {
            Some(slot) => slot,
            None => slots.entry(request.key.as_str().to_owned()).or_default(),
        };
        let holder = match slot.holder.take() {
            Some(holder)
                if holder.deadline > clock_now && !holder.is_live_for(request.owner, clock_now) =>
            {
                let snapshot = holder.snapshot();
                slot.holder = Some(holder);
                return Ok(AcquireOutcome::Held(Some(snapshot)));
            }
            Some(mut holder) if holder.deadline > clock_now => {
                // The same owner re-acquires: a renewal that keeps the fencing token.
                let Some((_, expires_at)) = expires_at() else {
                    slot.holder = Some(holder);
                    return Err(too_long());
                };
                holder.deadline = deadline;
                holder.expires_at = expires_at;
                holder
            }
            expired => {
                let Some((reported_now, expires_at)) = expires_at() else {
                    slot.holder = expired;
                    return Err(too_long());
                };
                let mut leader_id = match expired {
                    Some(old) => old.leader_id,
                    None => std::mem::take(&mut slot.spare_leader_id),
                };
                leader_id.clear();
                leader_id.push_str(request.leader_id);
                slot.fence += 1;
                Holder {
                    owner: request.owner,
                    leader_id,
                    fencing_token: slot.fence,
                    acquired_at: reported_now,
                    expires_at,
                    acquired_on_clock: clock_now,
                    deadline,
                    released: false,
                }
            }
        };
        let lease = Lease::new(
            request.key.clone(),
            holder.owner,
            holder.leader_id.clone(),
            holder.fencing_token,
            holder.acquired_at,
            holder.expires_at,
        );
        slot.holder = Some(holder);
        Ok(AcquireOutcome::Acquired(lease))
    }

    /// Runs `f` on the holder record if `lease` still owns it.
    fn with_own_holder<R>(
        &self,
        lease: &Lease,
        f: impl FnOnce(&mut Slot, Instant) -> R,
    ) -> Option<R> {
        let clock_now = self.monotonic();
        let mut slots = self.inner.slots.lock();
        let slot = slots.get_mut(lease.key.as_str())?;
        match &slot.holder {
            Some(holder) if holder.is_live_for(lease.owner, clock_now) => Some(f(slot, clock_now)),
            _ => None,
        }
    }

    /// Renews the lease. A lease the clocks cannot hold is refused and changes nothing.
    fn extend_lease(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Result<ExtendOutcome, Failure> {
        let renewed = self.with_own_holder(lease, |slot, clock_now| {
            let holder = slot.holder.as_mut()?;
            let deadline = clock_now.checked_add(lease_time);
            let expires_at = self.reported_now(use_db_time).checked_add(lease_time);
            let (Some(deadline), Some(expires_at)) = (deadline, expires_at) else {
                return Some(Err(too_long(lease_time)));
            };
            holder.deadline = deadline;
            holder.expires_at = expires_at;
            Some(Ok(expires_at))
        });
        match renewed.flatten() {
            Some(Ok(expires_at)) => Ok(ExtendOutcome::Extended { expires_at }),
            Some(Err(err)) => Err(err),
            None => Ok(ExtendOutcome::NotHeld),
        }
    }

    /// Releases the lease; a lock it frees is announced by the kit (`local_waiters`).
    fn release_lease(&self, lease: &Lease, min_lease_time: Duration) -> Released {
        // Only the minimum lease needs the time. An owner's own expired record can be
        // dropped without reading the clock: nobody else held the lock in the meantime.
        let clock_now = (!min_lease_time.is_zero()).then(|| self.monotonic());
        let mut slots = self.inner.slots.lock();
        let Some(slot) = slots.get_mut(lease.key.as_str()) else {
            return Released::NotHeld;
        };
        let Some(holder) = slot
            .holder
            .as_mut()
            .filter(|h| h.owner == lease.owner && !h.released)
        else {
            return Released::NotHeld;
        };
        if let Some(now) = clock_now {
            // A minimum lease beyond what the clock holds keeps the lock until its expiry.
            let keep_until = holder.acquired_on_clock.checked_add(min_lease_time);
            if keep_until.is_none_or(|keep| keep > now) && holder.deadline > now {
                if let Some(keep) = keep_until {
                    holder.deadline = holder.deadline.min(keep);
                }
                if let Some(keep) = holder.acquired_at.checked_add(min_lease_time) {
                    holder.expires_at = holder.expires_at.min(keep);
                }
                holder.released = true;
                return Released::Kept;
            }
        }
        if let Some(old) = slot.holder.take() {
            slot.spare_leader_id = old.leader_id;
        }
        Released::Freed
    }

    fn snapshot(&self, key: &LockName) -> LeaderState {
        let clock_now = self.monotonic();
        let slots = self.inner.slots.lock();
        match slots
            .get(key.as_str())
            .and_then(|slot| slot.holder.as_ref())
        {
            Some(holder) if holder.deadline > clock_now => {
                LeaderState::occupied(key.as_str(), holder.snapshot())
            }
            _ => LeaderState::empty(key.as_str()),
        }
    }

    /// The held locks under the prefix, in key order, resuming after the cursor's key (a
    /// cursor of another backend or prefix is refused).
    fn list_page(&self, request: &ListRequest) -> Result<ListPage, Failure> {
        let after = ListCursor::resume(NAME, request).map_err(Failure::permanent)?;
        let clock_now = self.monotonic();
        let slots = self.inner.slots.lock();
        let mut held: Vec<(&String, &Holder)> = slots
            .iter()
            .filter(|(key, _)| {
                key.starts_with(&request.prefix) && after.is_none_or(|after| key.as_str() > after)
            })
            .filter_map(|(key, slot)| Some((key, slot.holder.as_ref()?)))
            .filter(|(_, holder)| holder.deadline > clock_now)
            .collect();
        held.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let page_size = request.page_size();
        let next = (held.len() > page_size)
            .then(|| ListCursor::tagged(NAME, request, held[page_size - 1].0.as_str()));
        held.truncate(page_size);
        let locks = held
            .into_iter()
            .map(|(key, holder)| LeaderState::occupied(key.as_str(), holder.snapshot()))
            .collect();
        Ok(ListPage::new(locks, next))
    }

    /// Frees `key` if it is held, and by the acquisition with `only_token` when given; one
    /// critical section decides and frees (the kit announces it: `local_waiters`).
    fn force_free(&self, key: &LockName, only_token: Option<u64>) -> ForceReleaseOutcome {
        let clock_now = self.monotonic();
        let mut slots = self.inner.slots.lock();
        let Some(slot) = slots.get_mut(key.as_str()) else {
            return ForceReleaseOutcome::NotHeld;
        };
        let live = match &slot.holder {
            Some(holder) if holder.deadline > clock_now => holder,
            _ => return ForceReleaseOutcome::NotHeld,
        };
        if only_token.is_some_and(|token| token != live.fencing_token) {
            return ForceReleaseOutcome::HolderChanged(live.snapshot());
        }
        let Some(holder) = slot.holder.take() else {
            return ForceReleaseOutcome::NotHeld;
        };
        let snapshot = holder.snapshot();
        slot.spare_leader_id = holder.leader_id;
        ForceReleaseOutcome::Released(snapshot)
    }
}

impl Backend for InMemoryBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn release_events(&self) -> Option<&ReleaseEvents> {
        Some(&self.inner.events)
    }
}

impl InMemoryBackend {
    fn record(&self, key: &LockName) -> Option<StoredRecord> {
        self.inner.records.lock().get(key.as_str()).cloned()
    }

    /// The compare-and-set, one critical section.
    fn put_record(&self, write: &WriteRecord) -> RecordWriteOutcome {
        let mut records = self.inner.records.lock();
        let current = records.get(write.key.as_str());
        if current.map(|r| r.version) != write.expected {
            return RecordWriteOutcome::Conflict {
                current: current.cloned(),
            };
        }
        let version = write.next_version();
        records.insert(
            write.key.as_str().to_owned(),
            StoredRecord::new(version, write.value.as_str()),
        );
        RecordWriteOutcome::Written { version }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::clock::ManualClock;

    fn request(key: &LockName, lease_time: Duration) -> AcquireRequest<'_> {
        AcquireRequest::new(key, OwnerToken::random(), "node", lease_time).with_db_time(true)
    }

    #[test]
    fn a_wall_clock_step_neither_frees_nor_stretches_a_lease() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let clock = ManualClock::new(start);
        let backend = InMemoryBackend::with_clock(clock.clone());
        let key = LockName::new("stepped").unwrap();
        let lease_time = Duration::from_secs(30);
        let AcquireOutcome::Acquired(first) = backend.acquire(request(&key, lease_time)).unwrap()
        else {
            panic!("free lock")
        };

        // An NTP step of an hour forward: the first holder still holds.
        clock.set_wall_clock(start + Duration::from_secs(3600));
        assert!(matches!(
            backend.acquire(request(&key, lease_time)).unwrap(),
            AcquireOutcome::Held(Some(h)) if h.fencing_token == first.fencing_token
        ));
        assert!(backend.snapshot(&key).leader().is_some());
        assert!(matches!(
            backend.extend_lease(&first, lease_time, true).unwrap(),
            ExtendOutcome::Extended { .. }
        ));

        // A step back does not stretch it: it ends a lease after the renewal.
        clock.set_wall_clock(start - Duration::from_secs(3600));
        clock.advance(lease_time);
        let AcquireOutcome::Acquired(second) = backend.acquire(request(&key, lease_time)).unwrap()
        else {
            panic!("the lease ran out on the monotonic clock")
        };
        assert!(second.fencing_token > first.fencing_token);
        assert_eq!(
            second.acquired_at,
            start - Duration::from_secs(3600) + lease_time
        );
    }
}
