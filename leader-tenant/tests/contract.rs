//! The backend contract suite, run through a tenant-scoped name: every key the checks use
//! is stored as `tenant:acme:<key>` (built by `LockName::prefixed`, as scoped electors do),
//! and handed back without the prefix.
//!
//! `long_and_unicode_names_work` fills a name to exactly 255 bytes, which no prefix can
//! extend; it is replaced by `long_scoped_names_work_up_to_the_limit`, which checks the
//! same thing for the prefixed name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, Error, ExtendOutcome,
    InMemoryBackend, LeaderState, Lease, LockBackend, LockName, NameError, OwnerToken,
    ReleaseOutcome,
};
use leader_tenant::TenantId;
use leader_testkit::{Harness, MemoryHarness, ThreadRunner, TokioRunner};

/// A backend that stores every key under a tenant's prefix.
#[derive(Debug, Clone)]
struct Scoped<B> {
    inner: B,
    prefix: String,
}

impl<B> Scoped<B> {
    fn key(&self, key: &LockName) -> Result<LockName, Error> {
        Ok(LockName::prefixed(&self.prefix, key.as_str())?)
    }

    fn inward(&self, lease: &Lease) -> Result<Lease, Error> {
        let mut scoped = lease.clone();
        scoped.key = self.key(&lease.key)?;
        Ok(scoped)
    }

    fn outward(&self, outcome: AcquireOutcome, key: &LockName) -> AcquireOutcome {
        match outcome {
            AcquireOutcome::Acquired(mut lease) => {
                assert_eq!(
                    lease.key.as_str(),
                    format!("{}{}", self.prefix, key),
                    "stored under the prefix"
                );
                lease.key = key.clone();
                AcquireOutcome::Acquired(lease)
            }
            held => held,
        }
    }

    fn state_outward(&self, state: LeaderState, key: &LockName) -> LeaderState {
        assert_eq!(state.lock_name(), format!("{}{}", self.prefix, key));
        state.with_lock_name(key.as_str())
    }
}

impl<B: Backend> Backend for Scoped<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

impl<B: LockBackend> LockBackend for Scoped<B> {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let key = self.key(request.key)?;
        let outcome = self.inner.try_acquire(AcquireRequest {
            key: &key,
            ..request
        })?;
        Ok(self.outward(outcome, request.key))
    }

    fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        self.inner
            .extend(&self.inward(lease)?, lease_time, use_db_time)
    }

    fn release(&self, lease: &Lease, min_lease_time: Duration) -> Result<ReleaseOutcome, Error> {
        self.inner.release(&self.inward(lease)?, min_lease_time)
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        let state = self.inner.state(&self.key(key)?)?;
        Ok(self.state_outward(state, key))
    }
}

impl<B: AsyncLockBackend> AsyncLockBackend for Scoped<B> {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let key = self.key(request.key)?;
        let scoped = AcquireRequest {
            key: &key,
            ..request
        };
        let outcome = AsyncLockBackend::try_acquire(&self.inner, scoped).await?;
        Ok(self.outward(outcome, request.key))
    }

    async fn extend(
        &self,
        lease: &Lease,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Result<ExtendOutcome, Error> {
        let lease = self.inward(lease)?;
        AsyncLockBackend::extend(&self.inner, &lease, lease_time, use_db_time).await
    }

    async fn release(
        &self,
        lease: &Lease,
        min_lease_time: Duration,
    ) -> Result<ReleaseOutcome, Error> {
        let lease = self.inward(lease)?;
        AsyncLockBackend::release(&self.inner, &lease, min_lease_time).await
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        let state = AsyncLockBackend::state(&self.inner, &self.key(key)?).await?;
        Ok(self.state_outward(state, key))
    }
}

/// A harness whose backends are scoped to the tenant `acme`.
#[derive(Debug, Clone)]
struct TenantHarness<H>(H);

impl<H: Harness> Harness for TenantHarness<H> {
    type Backend = Scoped<H::Backend>;

    async fn backend(&self) -> Self::Backend {
        Scoped {
            inner: self.0.backend().await,
            prefix: TenantId::new("acme").unwrap().lock_prefix(),
        }
    }

    fn advance(&self, by: Duration) {
        self.0.advance(by);
    }

    fn backend_now(&self) -> SystemTime {
        self.0.backend_now()
    }

    fn short_lease(&self) -> Duration {
        self.0.short_lease()
    }

    fn clock_tolerance(&self) -> Duration {
        self.0.clock_tolerance()
    }
}

macro_rules! scoped_contract_tests {
    ($module:ident, $harness:expr, $runner:expr) => {
        mod $module {
            use super::*;
            scoped_contract_tests!(@tests $harness, $runner;
                acquire_free_lock,
                second_owner_sees_the_holder,
                same_owner_reacquire_keeps_the_token,
                acquire_after_expiry_gets_a_larger_token,
                extend_by_owner_moves_expiry,
                extend_by_non_owner_or_after_expiry_is_not_held,
                release_by_owner_frees,
                release_by_non_owner_changes_nothing,
                min_lease_keeps_the_lock_without_blocking,
                min_lease_already_passed_frees_at_once,
                tokens_strictly_increase,
                state_reports_holder_and_hides_expired,
                racing_acquire_has_one_winner,
                use_db_time_takes_the_backend_clock,
            );
        }
    };
    (@tests $harness:expr, $runner:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                leader_testkit::checks::$check(&$harness, &$runner);
            }
        )*
    };
}

scoped_contract_tests!(
    blocking,
    leader_testkit::Blocking(TenantHarness(MemoryHarness::new())),
    ThreadRunner
);
scoped_contract_tests!(
    tokio_async,
    TenantHarness(MemoryHarness::new()),
    TokioRunner::multi_thread()
);

#[test]
fn long_scoped_names_work_up_to_the_limit() {
    let backend = Scoped {
        inner: InMemoryBackend::new(),
        prefix: TenantId::new("acme").unwrap().lock_prefix(),
    };
    let room = LockName::MAX_LEN - backend.prefix.len();
    let fits = LockName::new(format!("zählung-{}", "x".repeat(room - "zählung-".len()))).unwrap();
    let request = AcquireRequest {
        key: &fits,
        owner: OwnerToken::random(),
        leader_id: "node-ü",
        lease_time: Duration::from_secs(30),
        use_db_time: false,
    };
    let AcquireOutcome::Acquired(lease) = LockBackend::try_acquire(&backend, request).unwrap()
    else {
        panic!("a scoped name of exactly 255 bytes must be accepted");
    };
    let state = LockBackend::state(&backend, &fits).unwrap();
    assert_eq!(state.leader().unwrap().leader_id, "node-ü");
    let physical = LockBackend::state(&backend.inner, &backend.key(&fits).unwrap()).unwrap();
    assert_eq!(physical.lock_name().len(), LockName::MAX_LEN);
    assert_eq!(
        LockBackend::release(&backend, &lease, Duration::ZERO).unwrap(),
        ReleaseOutcome::Released
    );

    let over = LockName::new(format!("{}y", fits.as_str())).unwrap();
    let err = LockBackend::state(&backend, &over).unwrap_err();
    assert!(
        matches!(err, Error::InvalidName(NameError::TooLong { len: 256, .. })),
        "{err:?}"
    );
}
