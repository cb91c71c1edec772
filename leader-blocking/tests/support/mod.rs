//! Test doubles shared by the elector tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, BackendError, BackendErrorKind, Error, ExtendOutcome,
    InMemoryBackend, LeaderState, Lease, LockBackend, LockName, ReleaseEvents, ReleaseOutcome,
};

/// An in-memory backend whose calls can be made to fail, as if the server went away.
#[derive(Debug, Clone, Default)]
pub(crate) struct FlakyBackend {
    pub(crate) inner: InMemoryBackend,
    pub(crate) down: Arc<AtomicBool>,
    pub(crate) extend_down: Arc<AtomicBool>,
}

impl FlakyBackend {
    fn fail<T>(
        &self,
        key: &LockName,
        down: &AtomicBool,
        ok: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        if down.load(Ordering::SeqCst) {
            let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
            return Err(
                BackendError::new("flaky", key.as_str(), BackendErrorKind::Transient, io).into(),
            );
        }
        ok()
    }
}

impl Backend for FlakyBackend {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn release_events(&self) -> Option<&ReleaseEvents> {
        Backend::release_events(&self.inner)
    }
}

impl LockBackend for FlakyBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.fail(request.key, &self.down, || {
            LockBackend::try_acquire(&self.inner, request)
        })
    }
    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        db: bool,
    ) -> Result<ExtendOutcome, Error> {
        if self.extend_down.load(Ordering::SeqCst) {
            return self.fail(&lease.key, &self.extend_down, || unreachable!());
        }
        self.fail(&lease.key, &self.down, || {
            LockBackend::extend(&self.inner, lease, lease_time, db)
        })
    }
    fn release(&self, lease: &Lease, min: Duration) -> Result<ReleaseOutcome, Error> {
        self.fail(&lease.key, &self.down, || {
            LockBackend::release(&self.inner, lease, min)
        })
    }
    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.fail(key, &self.down, || LockBackend::state(&self.inner, key))
    }
}
