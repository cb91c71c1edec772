//! [`Store`]: the calls a backend makes, each planned as data; [`Released`];
//! [`Unsupported`].

use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;

use crate::kit::call::{Call, Failure};
use crate::kit::runs::Runs;
use crate::spi::backend::Backend;
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome, ReleaseOutcome, SlotOutcome};
use crate::spi::release_events::ReleaseEvents;
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal, SlotRequest};

/// What a release did to the lock: freed it, kept it for its minimum lease (held, by
/// nobody), ended the lease without saying which of the two, or found it not held by the
/// lease. Waiters in this process are woken when it was freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Released {
    /// The lock is free.
    Freed,
    /// The lock stays taken until `acquired_at + min_lease_time`; nobody can extend it.
    Kept,
    /// The lease did not hold the lock (any more).
    NotHeld,
    /// The lease ended, and the lock is free or kept for its minimum lease: the store's
    /// answer does not say which (MongoDB's update counts the document it matched, not
    /// what it wrote). Waiters in this process are not woken here; the store's release
    /// notification wakes them.
    Ended,
}

impl Released {
    /// A short label, for traces: `"freed"`, `"kept_for_min_lease"` or `"not_held"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Released::Freed => "freed",
            Released::Kept => "kept_for_min_lease",
            Released::NotHeld => "not_held",
            Released::Ended => "released",
        }
    }

    /// The release's answer as the SPI gives it.
    pub fn outcome(self) -> ReleaseOutcome {
        match self {
            Released::Freed | Released::Kept | Released::Ended => ReleaseOutcome::Released,
            Released::NotHeld => ReleaseOutcome::NotHeld,
        }
    }
}

/// The calls of a backend, each planned as a value (no I/O here) and sent by the
/// backend's runner ([`Runs`]): the lease's calls and the batches as the backend's own
/// types, planned here; the operator's and the records' as the kit's
/// ([`calls`](crate::kit::calls)), which the runner must run too. Every [`Store`] whose runner runs
/// each of its calls is a [`LockBackend`](crate::LockBackend) and an
/// [`AsyncLockBackend`](crate::AsyncLockBackend) (see the [module docs](crate::kit)), and
/// keeps the contract listed on [`LockBackend`](crate::LockBackend): the kit adds no
/// guarantee a store call does not keep.
///
/// A call may borrow what it plans from (`'a`: the request, the backend), when its runner
/// sends it in place; a runner that moves calls to another thread or runtime plans owned
/// ones.
pub trait Store: Backend + Sized {
    /// `try_acquire`.
    type Acquire<'a>: Call<Output = AcquireOutcome>
    where
        Self: 'a;
    /// Plans a `try_acquire` of `request`.
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> Self::Acquire<'a>;

    /// `try_acquire_batch` in one call: one answer per request, in order.
    type AcquireBatch<'a>: Call<Output = Vec<Result<AcquireOutcome, Failure>>>
    where
        Self: 'a;
    /// Plans `requests` as one call, or `None`: then each goes as `try_acquire` (the
    /// default, and what a store does for a batch it cannot send whole, such as one that
    /// names a lock twice).
    fn plan_acquire_batch<'a>(
        &'a self,
        requests: &'a [AcquireRequest<'a>],
    ) -> Option<Self::AcquireBatch<'a>> {
        let _ = requests;
        None
    }

    /// `try_acquire_slot` in one call: every slot of a group at once.
    type Slot<'a>: Call<Output = SlotOutcome>
    where
        Self: 'a;
    /// Plans `request` as one call, or `None`: then the slots are walked one `try_acquire`
    /// at a time (the default; see [`SlotWalk`](crate::SlotWalk)).
    fn plan_slot<'a>(&'a self, request: SlotRequest<'a>) -> Option<Self::Slot<'a>> {
        let _ = request;
        None
    }

    /// `extend`.
    type Extend<'a>: Call<Output = ExtendOutcome>
    where
        Self: 'a;
    /// Plans the renewal `renewal`.
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> Self::Extend<'a>;

    /// `extend_batch` in one call.
    type ExtendBatch<'a>: Call<Output = Vec<Result<ExtendOutcome, Failure>>>
    where
        Self: 'a;
    /// Plans `renewals` as one call, or `None` (each goes as `extend`).
    fn plan_extend_batch<'a>(
        &'a self,
        renewals: &'a [Renewal<'a>],
    ) -> Option<Self::ExtendBatch<'a>> {
        let _ = renewals;
        None
    }

    /// Whether [`plan_extend_batch`](Self::plan_extend_batch) plans a batch of renewals
    /// as one call in which no lease's renewal holds up the others
    /// ([`LockBackend::extend_batch_is_native`](crate::LockBackend::extend_batch_is_native)).
    fn extend_batch_is_native(&self) -> bool {
        false
    }

    /// `release`.
    type Release<'a>: Call<Output = Released>
    where
        Self: 'a;
    /// Plans the release `release`.
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> Self::Release<'a>;

    /// `release_batch` in one call.
    type ReleaseBatch<'a>: Call<Output = Vec<Result<Released, Failure>>>
    where
        Self: 'a;
    /// Plans `releases` as one call, or `None` (each goes as `release`).
    fn plan_release_batch<'a>(
        &'a self,
        releases: &'a [ReleaseRequest<'a>],
    ) -> Option<Self::ReleaseBatch<'a>> {
        let _ = releases;
        None
    }

    /// The release notifications of waiters in this process, to wake them when a call of
    /// this process freed a lock: without starting anything (unlike
    /// [`Backend::release_events`], which may start a listener). `None` (the default)
    /// when the store wakes them itself.
    fn local_waiters(&self) -> Option<&ReleaseEvents> {
        None
    }
}

/// The call type of what a store cannot do in one call (a batch, a group's slots): it has
/// no value, so it is never planned nor run. Name it for the associated type and leave the
/// planning method to its default.
///
/// ```
/// # use leader_core::kit::{Failure, Unsupported};
/// # use leader_core::AcquireOutcome;
/// type AcquireBatch = Unsupported<Vec<Result<AcquireOutcome, Failure>>>;
/// ```
pub struct Unsupported<T> {
    never: Infallible,
    answer: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Unsupported<T> {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.never {}
    }
}

impl<T: Send> Call for Unsupported<T> {
    type Output = T;
    const NAME: &'static str = "unsupported";
}

impl<S: Backend, T: Send> Runs<Unsupported<T>> for S {
    fn run_blocking(&self, call: Unsupported<T>) -> Result<T, Failure> {
        let _ = call.answer;
        match call.never {}
    }

    fn run_async(&self, call: Unsupported<T>) -> impl Future<Output = Result<T, Failure>> + Send {
        let _ = call.answer;
        async move { match call.never {} }
    }
}
