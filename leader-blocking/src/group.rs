//! [`LeaderGroupElector`]: up to N nodes lead one name at once, each in a slot.

use std::sync::Arc;

use leader_core::__private::Observation;
use leader_core::{
    CampaignConfig, Error, EventCallback, GroupSlots, GroupState, IntoTenantId,
    LeaderElectionOptions, LeaderRunResult, LeaseContext, LockBackend, TenantId,
};

use crate::campaign::LeadershipHandle;
use crate::elector::LeaderElector;
use crate::observe::Observer;

/// Runs actions on up to `slots` nodes at once: each run holds one slot of the group.
///
/// For work that N nodes share — N consumers of a partitioned stream, N workers of a
/// rate-limited API. Everything else is as for [`LeaderElector`]: waiting, lease, minimum
/// lease, auto-extend, the backend's clock, tenant scoping, fencing, and failing closed.
///
/// **Slots.** Slot 0 of the group `name` is the lock `name` itself; slot `i ≥ 1` is the
/// lock `name#i`. Each slot is an exclusive lock with its own fencing counter, so a group
/// never has more than `slots` holders, a release frees exactly one slot, and fencing
/// tokens strictly increase per slot ([`LeaderRunResult::Elected`] carries the slot).
/// A group of one slot *is* the single lock `name`.
///
/// **Acquiring.** An attempt asks the backend for any slot, in order from a random one,
/// and gets the first free slot ([`LockBackend::try_acquire_slot`]).
/// [`LeaderRunResult::Skipped`] means every attempt found every slot held until
/// `wait_time` ran out. On Redis an attempt is one script over all the slots (they share
/// the group's cluster hash tag): one round trip whatever the group's size, and every
/// slot seen at one instant. The other backends try the slots one by one, a round trip
/// each, so a slot freed right after it was tried is found at the next attempt (or, with
/// no wait, not at all); each slot's acquire is atomic either way, which is what keeps
/// the group at `slots` holders or fewer.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_blocking::LeaderGroupElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaderRunResult};
///
/// let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
/// let consumers = LeaderGroupElector::new(InMemoryBackend::new(), options, 2)?;
///
/// let outcome = consumers.run_if_leader_with("orders", |lease| {
///     // Two nodes can be here at once; consume partition `lease.slot()`.
///     Ok::<_, std::io::Error>(lease.slot())
/// })?;
/// let LeaderRunResult::Elected { value: slot, .. } = outcome else { panic!("a slot was free") };
/// assert!(slot < 2);
/// assert_eq!(consumers.state("orders")?.holders().count(), 0, "released after the run");
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
pub struct LeaderGroupElector<B> {
    elector: LeaderElector<B>,
    slots: GroupSlots,
}

impl<B> Clone for LeaderGroupElector<B> {
    fn clone(&self) -> Self {
        LeaderGroupElector {
            elector: self.elector.clone(),
            slots: self.slots,
        }
    }
}

impl<B: LockBackend + 'static> LeaderElector<B> {
    /// A group elector on this elector's backend and options: up to `slots` nodes lead
    /// each name at once.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] unless `1 ≤ slots ≤` [`GroupSlots::MAX`].
    pub fn group(&self, slots: u32) -> Result<LeaderGroupElector<B>, Error> {
        Ok(LeaderGroupElector {
            elector: self.clone(),
            slots: GroupSlots::new(slots)?,
        })
    }
}

impl<B: LockBackend + 'static> LeaderGroupElector<B> {
    /// A group elector over `backend`: up to `slots` nodes lead each name at once.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate, or unless
    /// `1 ≤ slots ≤` [`GroupSlots::MAX`].
    pub fn new(backend: B, options: LeaderElectionOptions, slots: u32) -> Result<Self, Error> {
        LeaderElector::new(backend, options)?.group(slots)
    }

    /// How many nodes may lead a name at once.
    pub fn slots(&self) -> GroupSlots {
        self.slots
    }

    /// The single-lock elector underneath (same backend, options and scope).
    pub fn elector(&self) -> &LeaderElector<B> {
        &self.elector
    }

    /// A clone scoped to `tenant` (see [`LeaderElector::for_tenant`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTenant`] or [`Error::AlreadyScoped`].
    pub fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, Error> {
        Ok(LeaderGroupElector {
            elector: self.elector.for_tenant(tenant)?,
            slots: self.slots,
        })
    }

    /// The tenant this elector is scoped to, if any.
    pub fn tenant(&self) -> Option<TenantId> {
        self.elector.tenant()
    }

    /// Runs `action` if this node wins a slot of `name`; `Ok(None)` if every slot stayed
    /// held for the whole `wait_time`.
    ///
    /// # Errors
    ///
    /// An invalid name (or one too long for its slot suffix), a backend failure, or
    /// [`Error::LeaseLost`] when every slot acquired within `wait_time` was answered after
    /// its lease's deadline (each is released in the background). A slot whose record is
    /// corrupted (a permanent error on it alone) is skipped, logged at `warn`, and the other
    /// slots are tried; its error comes back only if no other slot could be taken.
    pub fn run_if_leader<T>(
        &self,
        name: &str,
        action: impl FnOnce() -> T,
    ) -> Result<Option<T>, Error> {
        self.elector.run_plain(Some(self.slots), name, action)
    }

    /// Like [`run_if_leader`](Self::run_if_leader), with the action's `Result` and the
    /// slot and fencing token in a [`LeaderRunResult`].
    ///
    /// # Errors
    ///
    /// As [`run_if_leader`](Self::run_if_leader).
    pub fn run_if_leader_result<T, E>(
        &self,
        name: &str,
        action: impl FnOnce() -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        self.elector.run_on(Some(self.slots), name, |_| action())
    }

    /// Like [`run_if_leader_result`](Self::run_if_leader_result); the action gets the
    /// lease's [`LeaseContext`]: its slot, its fencing token, whether it is still held.
    ///
    /// # Errors
    ///
    /// As [`run_if_leader`](Self::run_if_leader).
    pub fn run_if_leader_with<T, E>(
        &self,
        name: &str,
        action: impl FnOnce(&LeaseContext) -> Result<T, E>,
    ) -> Result<LeaderRunResult<T, E>, Error> {
        self.elector.run_on(Some(self.slots), name, action)
    }

    /// A best-effort snapshot of every slot of `name`: who holds which (see [`GroupState`]).
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub fn state(&self, name: &str) -> Result<GroupState, Error> {
        let keys = self.slots.keys(&self.elector.lock_key(name)?)?;
        let slots = (0..keys.len())
            .map(|slot| self.elector.backend().state(keys.slot(slot)))
            .collect::<Result<_, Error>>()?;
        Ok(GroupState::new(name, slots))
    }

    /// The changes of who holds each slot of `name`, as an iterator that blocks until the
    /// next one: first every slot as it is (slot 0 first), then each new holder, release
    /// and expiry of any slot, each with its [`slot`](leader_core::LeaderChange::slot)
    /// and the slot's name (`name`, `name#1`, ...). A release of any slot wakes it where
    /// the backend notifies; see [`Observer`].
    ///
    /// # Errors
    ///
    /// An invalid name. Read failures come as the iterator's `Err` items.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::LeaderGroupElector;
    /// use leader_core::{ChangeKind, InMemoryBackend, LeaderElectionOptions};
    ///
    /// let group = LeaderGroupElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 2)?;
    /// let mut changes = group.observe("consumers")?;
    /// let first: Vec<_> = changes.by_ref().take(2).collect::<Result<_, _>>()?;
    /// assert_eq!(first[1].lock_name, "consumers#1");
    /// assert!(first.iter().all(|change| change.kind == ChangeKind::Initial && change.holder.is_none()));
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn observe(&self, name: &str) -> Result<Observer<B>, Error> {
        let keys = self.slots.keys(&self.elector.lock_key(name)?)?;
        let observed = Observation::group(&keys, name);
        Ok(Observer::new(Arc::clone(self.elector.backend()), observed))
    }

    /// Starts a campaign for one slot of `name` on a background thread: continuous
    /// leadership for N long-running consumers. Each campaign holds at most one slot; when
    /// a holder goes, a standby takes its slot (see [`CampaignConfig`] for the failover
    /// bounds), and the term's [`LeaseContext::slot`] says which slot it leads. While it
    /// stands by, `current_leader()` is the holder of the last slot it found held; ask
    /// [`state`](Self::state) for all of them.
    ///
    /// # Errors
    ///
    /// An invalid name or config (a ranked config too: ranked leadership elects one
    /// leader), or [`Error::ShutDown`] if no thread could be started.
    pub fn campaign(&self, name: &str, config: CampaignConfig) -> Result<LeadershipHandle, Error> {
        self.campaign_with_callbacks(name, config, Vec::new())
    }

    /// Like [`campaign`](Self::campaign), with callbacks registered before the first event.
    ///
    /// # Errors
    ///
    /// An invalid name or config, or [`Error::ShutDown`] if no thread could be started.
    pub fn campaign_with_callbacks(
        &self,
        name: &str,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
    ) -> Result<LeadershipHandle, Error> {
        let campaign = self
            .elector
            .scope()
            .campaign(self.slots, name, config, callbacks)?;
        self.elector.start_campaign(campaign)
    }
}
