//! [`AsyncLeaderGroupElector`]: up to N nodes lead one name at once, each in a slot.

use std::future::Future;
use std::sync::Arc;

use leader_core::__private::Observation;
use leader_core::{
    AsyncLockBackend, CampaignConfig, Error, EventCallback, GroupSlots, GroupState, IntoTenantId,
    LeaderElectionOptions, LeaderRunResult, LeaseContext, TenantId,
};

use crate::campaign::AsyncLeadershipHandle;
use crate::elector::AsyncLeaderElector;
use crate::observe::AsyncObserver;

/// The async group elector: runs actions on up to `slots` nodes at once, each run holding
/// one slot of the group.
///
/// The async twin of `leader_blocking::LeaderGroupElector`, with the same slots and
/// semantics: slot 0 of the group `name` is the lock `name`, slot `i ≥ 1` the lock
/// `name#i`; each slot is an exclusive lock with its own fencing counter; an attempt asks
/// for any slot from a random one (one script on Redis, a round trip per slot elsewhere);
/// [`LeaderRunResult::Skipped`] means every attempt found every slot held until
/// `wait_time` ran out. Everything else is as for [`AsyncLeaderElector`], cancel safety
/// included (a dropped attempt releases whatever slot it may have taken).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_async::AsyncLeaderGroupElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), leader_core::Error> {
/// let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
/// let consumers = AsyncLeaderGroupElector::new(InMemoryBackend::new(), options, 2)?;
/// let outcome = consumers
///     .run_if_leader_with("orders", |lease| async move { Ok::<_, String>(lease.slot()) })
///     .await?;
/// assert!(outcome.slot().is_some_and(|slot| slot < 2));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncLeaderGroupElector<B> {
    elector: AsyncLeaderElector<B>,
    slots: GroupSlots,
}

impl<B> Clone for AsyncLeaderGroupElector<B> {
    fn clone(&self) -> Self {
        AsyncLeaderGroupElector {
            elector: self.elector.clone(),
            slots: self.slots,
        }
    }
}

impl<B: AsyncLockBackend + 'static> AsyncLeaderElector<B> {
    /// A group elector on this elector's backend and options: up to `slots` nodes lead
    /// each name at once.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] unless `1 ≤ slots ≤` [`GroupSlots::MAX`].
    pub fn group(&self, slots: u32) -> Result<AsyncLeaderGroupElector<B>, Error> {
        Ok(AsyncLeaderGroupElector {
            elector: self.clone(),
            slots: GroupSlots::new(slots)?,
        })
    }
}

impl<B: AsyncLockBackend + 'static> AsyncLeaderGroupElector<B> {
    /// A group elector over `backend`: up to `slots` nodes lead each name at once.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate, or unless
    /// `1 ≤ slots ≤` [`GroupSlots::MAX`].
    pub fn new(backend: B, options: LeaderElectionOptions, slots: u32) -> Result<Self, Error> {
        AsyncLeaderElector::new(backend, options)?.group(slots)
    }

    /// How many nodes may lead a name at once.
    pub fn slots(&self) -> GroupSlots {
        self.slots
    }

    /// The single-lock elector underneath (same backend, options and scope).
    pub fn elector(&self) -> &AsyncLeaderElector<B> {
        &self.elector
    }

    /// A clone scoped to `tenant` (see [`AsyncLeaderElector::for_tenant`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTenant`] or [`Error::AlreadyScoped`].
    pub fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, Error> {
        Ok(AsyncLeaderGroupElector {
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
    pub async fn run_if_leader<T, F, Fut>(&self, name: &str, action: F) -> Result<Option<T>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        self.elector.run_plain(Some(self.slots), name, action).await
    }

    /// Like [`run_if_leader`](Self::run_if_leader), with the action's `Result` and the
    /// slot and fencing token in a [`LeaderRunResult`].
    ///
    /// # Errors
    ///
    /// As [`run_if_leader`](Self::run_if_leader).
    pub async fn run_if_leader_result<T, E, F, Fut>(
        &self,
        name: &str,
        action: F,
    ) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.elector
            .run_on(Some(self.slots), name, |_| action())
            .await
    }

    /// Like [`run_if_leader_result`](Self::run_if_leader_result); the action gets the
    /// lease's [`LeaseContext`]: its slot, its fencing token, a lost signal.
    ///
    /// # Errors
    ///
    /// As [`run_if_leader`](Self::run_if_leader).
    pub async fn run_if_leader_with<T, E, F, Fut>(
        &self,
        name: &str,
        action: F,
    ) -> Result<LeaderRunResult<T, E>, Error>
    where
        F: FnOnce(LeaseContext) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.elector.run_on(Some(self.slots), name, action).await
    }

    /// A best-effort snapshot of every slot of `name`: who holds which (see [`GroupState`]).
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub async fn state(&self, name: &str) -> Result<GroupState, Error> {
        let keys = self.slots.keys(&self.elector.lock_key(name)?)?;
        let mut slots = Vec::with_capacity(keys.len());
        for slot in 0..keys.len() {
            slots.push(self.elector.backend().state(keys.slot(slot)).await?);
        }
        Ok(GroupState::new(name, slots))
    }

    /// The changes of who holds each slot of `name`: first every slot as it is (slot 0
    /// first), then each new holder, release and expiry of any slot, each with its
    /// [`slot`](leader_core::LeaderChange::slot) and the slot's name (`name`, `name#1`,
    /// ...). A release of any slot wakes it where the backend notifies; see
    /// [`AsyncObserver`].
    ///
    /// # Errors
    ///
    /// An invalid name. Read failures come as the observer's `Err` items.
    pub fn observe(&self, name: &str) -> Result<AsyncObserver<B>, Error> {
        let keys = self.slots.keys(&self.elector.lock_key(name)?)?;
        let observed = Observation::group(&keys, name);
        Ok(AsyncObserver::new(
            Arc::clone(self.elector.backend()),
            observed,
        ))
    }

    /// Starts a campaign for one slot of `name` in a task: continuous leadership for N
    /// long-running consumers. Each campaign holds at most one slot; when a holder goes, a
    /// standby takes its slot, and the term's [`LeaseContext::slot`] says which it leads.
    /// While it stands by, `current_leader()` is the holder of the last slot it found
    /// held; ask [`state`](Self::state) for all of them.
    ///
    /// # Errors
    ///
    /// An invalid name or config (a ranked config too: ranked leadership elects one
    /// leader).
    pub fn campaign(
        &self,
        name: &str,
        config: CampaignConfig,
    ) -> Result<AsyncLeadershipHandle, Error> {
        self.campaign_with_callbacks(name, config, Vec::new())
    }

    /// Like [`campaign`](Self::campaign), with callbacks registered before the first event.
    ///
    /// # Errors
    ///
    /// An invalid name or config.
    pub fn campaign_with_callbacks(
        &self,
        name: &str,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
    ) -> Result<AsyncLeadershipHandle, Error> {
        let campaign = self
            .elector
            .scope()
            .campaign(self.slots, name, config, callbacks)?;
        Ok(self.elector.start_campaign(campaign))
    }
}
