//! The in-memory backend's store calls, for the backend kit: each is a short critical
//! section on the backend's mutex, so the blocking and the async side both run it at once
//! on the calling thread (an async call answers without waiting).
//!
//! The call types are `pub` because they are the associated types of a public trait
//! impl (`Store for InMemoryBackend`), and unnameable outside this crate (the module is
//! private): nobody but the kit builds or runs them.
#![allow(unreachable_pub)]

use std::future::{Future, ready};

use crate::embedded::memory::InMemoryBackend;
use crate::kit::{Call, Failure, Released, Runs, Store, Unsupported, calls};
use crate::spi::listing::{ForceReleaseOutcome, ListPage};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome, SlotOutcome};
use crate::spi::record::{RecordWriteOutcome, StoredRecord};
use crate::spi::release_events::ReleaseEvents;
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal};
use crate::spi::state::LeaderState;

/// A call the in-memory backend applies to its maps.
pub trait Apply: Call {
    /// Applies the call to `store`.
    fn apply(self, store: &InMemoryBackend) -> Result<Self::Output, Failure>;
}

impl<C: Apply> Runs<C> for InMemoryBackend {
    fn run_blocking(&self, call: C) -> Result<C::Output, Failure> {
        call.apply(self)
    }

    fn run_async(&self, call: C) -> impl Future<Output = Result<C::Output, Failure>> + Send {
        ready(call.apply(self))
    }
}

/// `try_acquire`.
#[derive(Debug)]
pub struct Acquire<'a>(AcquireRequest<'a>);

impl Call for Acquire<'_> {
    type Output = AcquireOutcome;
    const NAME: &'static str = "acquire";

    fn outcome(output: &AcquireOutcome) -> &'static str {
        output.as_str()
    }
}

impl Apply for Acquire<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<AcquireOutcome, Failure> {
        store.acquire(self.0)
    }
}

/// `extend`.
#[derive(Debug)]
pub struct Extend<'a>(Renewal<'a>);

impl Call for Extend<'_> {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend";
}

impl Apply for Extend<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<ExtendOutcome, Failure> {
        let renewal = self.0;
        store.extend_lease(renewal.lease, renewal.lease_time, renewal.use_db_time)
    }
}

/// `release`.
#[derive(Debug)]
pub struct Release<'a>(ReleaseRequest<'a>);

impl Call for Release<'_> {
    type Output = Released;
    const NAME: &'static str = "release";
}

impl Apply for Release<'_> {
    fn apply(self, store: &InMemoryBackend) -> Result<Released, Failure> {
        Ok(store.release_lease(self.0.lease, self.0.min_lease_time))
    }
}

impl Apply for calls::State {
    fn apply(self, store: &InMemoryBackend) -> Result<LeaderState, Failure> {
        Ok(store.snapshot(&self.key))
    }
}

impl Apply for calls::List {
    fn apply(self, store: &InMemoryBackend) -> Result<ListPage, Failure> {
        store.list_page(&self.request)
    }
}

impl Apply for calls::ForceRelease {
    fn apply(self, store: &InMemoryBackend) -> Result<ForceReleaseOutcome, Failure> {
        Ok(store.force_free(&self.key, self.only))
    }
}

impl Apply for calls::ReadRecord {
    fn apply(self, store: &InMemoryBackend) -> Result<Option<StoredRecord>, Failure> {
        Ok(store.record(&self.key))
    }
}

impl Apply for calls::WriteRecord {
    fn apply(self, store: &InMemoryBackend) -> Result<RecordWriteOutcome, Failure> {
        Ok(store.put_record(&self))
    }
}

impl Store for InMemoryBackend {
    type Acquire<'a> = Acquire<'a>;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> Acquire<'a> {
        Acquire(request)
    }

    type AcquireBatch<'a> = Unsupported<Vec<Result<AcquireOutcome, Failure>>>;
    type Slot<'a> = Unsupported<SlotOutcome>;

    type Extend<'a> = Extend<'a>;
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> Extend<'a> {
        Extend(renewal)
    }

    type ExtendBatch<'a> = Unsupported<Vec<Result<ExtendOutcome, Failure>>>;

    /// Each renewal is a short critical section on a mutex, so no lease's renewal can hold
    /// up another's: a batch is sent whole (one renewal after the other, at once).
    fn extend_batch_is_native(&self) -> bool {
        true
    }

    type Release<'a> = Release<'a>;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> Release<'a> {
        Release(release)
    }

    type ReleaseBatch<'a> = Unsupported<Vec<Result<Released, Failure>>>;

    /// The backend's own notifications: a release or force release that freed a lock
    /// wakes this process's waiters, which are all of them.
    fn local_waiters(&self) -> Option<&ReleaseEvents> {
        Some(&self.inner.events)
    }
}
