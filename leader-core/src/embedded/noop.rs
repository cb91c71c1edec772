//! [`NoopBackend`]: every caller leads.

use std::future::{Future, ready};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::error::Error;
use crate::name::LockName;
use crate::spi::backend::{AsyncLockBackend, Backend, LockBackend};
use crate::spi::lease::Lease;
use crate::spi::listing::{ForceReleaseOutcome, ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome, ReleaseOutcome};
use crate::spi::record::{RecordWrite, RecordWriteOutcome, StoredRecord};
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal};
use crate::spi::state::LeaderState;

/// A backend that always grants the lock and reports no leader.
///
/// For deployments where every instance should run the job ("all instances" mode) and for
/// tests of code that takes a backend. Fencing tokens still increase per backend instance.
/// It keeps no records: `read_record` finds none and every `write_record` is written, so
/// a scheduler over it runs every tick on every instance.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, NoopBackend, OwnerToken};
/// let backend = NoopBackend::new();
/// let key = LockName::new("job")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "n", Duration::from_secs(1));
/// assert!(matches!(backend.try_acquire(request)?, AcquireOutcome::Acquired(_)));
/// assert!(matches!(backend.try_acquire(request)?, AcquireOutcome::Acquired(_)));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct NoopBackend {
    fence: Arc<AtomicU64>,
}

impl NoopBackend {
    /// A new no-op backend.
    pub fn new() -> Self {
        NoopBackend::default()
    }

    fn grant(&self, request: AcquireRequest<'_>) -> AcquireOutcome {
        let now = SystemTime::now();
        AcquireOutcome::Acquired(Lease::new(
            request.key.clone(),
            request.owner,
            request.leader_id,
            self.fence.fetch_add(1, Ordering::Relaxed) + 1,
            now,
            now + request.lease_time,
        ))
    }
}

impl Backend for NoopBackend {
    fn name(&self) -> &'static str {
        "noop"
    }
}

impl LockBackend for NoopBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        Ok(self.grant(request))
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let lease_time = renewal.lease_time;
        Ok(ExtendOutcome::Extended {
            expires_at: SystemTime::now() + lease_time,
        })
    }

    fn release(&self, _: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        Ok(ReleaseOutcome::Released)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        Ok(LeaderState::empty(key.as_str()))
    }

    /// Nothing is ever held here, so nothing is listed.
    fn list(&self, _: &ListRequest) -> Result<ListPage, Error> {
        Ok(ListPage::default())
    }

    fn force_release(&self, _: &LockName) -> Result<ForceReleaseOutcome, Error> {
        Ok(ForceReleaseOutcome::NotHeld)
    }

    fn force_release_if(&self, _: &LockName, _: u64) -> Result<ForceReleaseOutcome, Error> {
        Ok(ForceReleaseOutcome::NotHeld)
    }

    fn read_record(&self, _: &LockName) -> Result<Option<StoredRecord>, Error> {
        Ok(None)
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        Ok(RecordWriteOutcome::Written {
            version: write.next_version(),
        })
    }
}

impl AsyncLockBackend for NoopBackend {
    fn try_acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<AcquireOutcome, Error>> + Send {
        ready(LockBackend::try_acquire(self, request))
    }

    fn extend(
        &self,
        renewal: Renewal<'_>,
    ) -> impl Future<Output = Result<ExtendOutcome, Error>> + Send {
        ready(LockBackend::extend(self, renewal))
    }

    fn release(
        &self,
        release: ReleaseRequest<'_>,
    ) -> impl Future<Output = Result<ReleaseOutcome, Error>> + Send {
        ready(LockBackend::release(self, release))
    }

    fn state(&self, key: &LockName) -> impl Future<Output = Result<LeaderState, Error>> + Send {
        ready(LockBackend::state(self, key))
    }

    fn list(&self, request: &ListRequest) -> impl Future<Output = Result<ListPage, Error>> + Send {
        ready(LockBackend::list(self, request))
    }

    fn force_release(
        &self,
        key: &LockName,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        ready(LockBackend::force_release(self, key))
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> impl Future<Output = Result<ForceReleaseOutcome, Error>> + Send {
        ready(LockBackend::force_release_if(self, key, fencing_token))
    }

    fn read_record(
        &self,
        _: &LockName,
    ) -> impl Future<Output = Result<Option<StoredRecord>, Error>> + Send {
        ready(Ok(None))
    }

    fn write_record(
        &self,
        write: RecordWrite<'_>,
    ) -> impl Future<Output = Result<RecordWriteOutcome, Error>> + Send {
        ready(Ok(RecordWriteOutcome::Written {
            version: write.next_version(),
        }))
    }
}
