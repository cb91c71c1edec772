//! The backend contract suite, run through a tenant-scoped name: every key the checks use
//! is stored as `tenant:acme:<key>` (built by `LockName::prefixed`, as scoped electors do),
//! and handed back without the prefix.
//!
//! The harness lowers `max_name_len` by the prefix, so the long-name check fills the
//! prefixed key to exactly 255 bytes; `long_scoped_names_work_up_to_the_limit` also checks
//! the physical key and one byte more.

use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, Error, ExtendOutcome,
    ForceReleaseOutcome, InMemoryBackend, LeaderState, Lease, ListPage, ListRequest, LockBackend,
    LockName, NameError, OwnerToken, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, StoredRecord,
};
use leader_tenant::TenantId;
use leader_testkit::{Harness, MemoryHarness};

/// A backend that stores every key under a tenant's prefix.
#[derive(Debug, Clone)]
struct Scoped<B> {
    inner: B,
    prefix: String,
}

impl<B> Scoped<B> {
    /// As scoped electors do: the caller's name gets the prefix, and a group's slot names
    /// (`name#i`) derive from the scoped name.
    fn key(&self, key: &LockName) -> Result<LockName, Error> {
        let separator = LockName::DERIVED_SEPARATOR;
        Ok(match key.as_str().split_once(separator) {
            Some((name, slot)) => {
                let scoped = LockName::prefixed(&self.prefix, name)?;
                LockName::new(format!("{scoped}{separator}{slot}"))?
            }
            None => LockName::prefixed(&self.prefix, key.as_str())?,
        })
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

    fn list_inward(&self, request: &ListRequest) -> ListRequest {
        let prefix = format!("{}{}", self.prefix, request.prefix);
        request.clone().with_prefix(prefix)
    }

    fn page_outward(&self, mut page: ListPage) -> ListPage {
        for state in &mut page.locks {
            let name = state
                .lock_name()
                .strip_prefix(&self.prefix)
                .expect("under the prefix");
            *state = state.clone().with_lock_name(name);
        }
        page
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
        let outcome = self.inner.try_acquire(request.with_key(&key))?;
        Ok(self.outward(outcome, request.key))
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time, use_db_time) =
            (renewal.lease, renewal.lease_time, renewal.use_db_time);
        self.inner
            .extend(Renewal::new(&self.inward(lease)?, lease_time).with_db_time(use_db_time))
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        self.inner
            .release(ReleaseRequest::new(&self.inward(lease)?, min_lease_time))
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        let state = self.inner.state(&self.key(key)?)?;
        Ok(self.state_outward(state, key))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        let page = self.inner.list(&self.list_inward(request))?;
        Ok(self.page_outward(page))
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release(&self.key(key)?)
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release_if(&self.key(key)?, fencing_token)
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.inner.read_record(&self.key(key)?)
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let key = self.key(write.key())?;
        self.inner
            .write_record(RecordWrite::new(&key, write.expected(), write.value())?)
    }
}

impl<B: AsyncLockBackend> AsyncLockBackend for Scoped<B> {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        let key = self.key(request.key)?;
        let scoped = request.with_key(&key);
        let outcome = AsyncLockBackend::try_acquire(&self.inner, scoped).await?;
        Ok(self.outward(outcome, request.key))
    }

    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time, use_db_time) =
            (renewal.lease, renewal.lease_time, renewal.use_db_time);
        let lease = self.inward(lease)?;
        AsyncLockBackend::extend(
            &self.inner,
            Renewal::new(&lease, lease_time).with_db_time(use_db_time),
        )
        .await
    }

    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let (lease, min_lease_time) = (release.lease, release.min_lease_time);
        let lease = self.inward(lease)?;
        AsyncLockBackend::release(&self.inner, ReleaseRequest::new(&lease, min_lease_time)).await
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        let state = AsyncLockBackend::state(&self.inner, &self.key(key)?).await?;
        Ok(self.state_outward(state, key))
    }

    async fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        let page = AsyncLockBackend::list(&self.inner, &self.list_inward(request)).await?;
        Ok(self.page_outward(page))
    }

    async fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        AsyncLockBackend::force_release(&self.inner, &self.key(key)?).await
    }

    async fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        AsyncLockBackend::force_release_if(&self.inner, &self.key(key)?, fencing_token).await
    }

    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        AsyncLockBackend::read_record(&self.inner, &self.key(key)?).await
    }

    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let key = self.key(write.key())?;
        let scoped = RecordWrite::new(&key, write.expected(), write.value())?;
        AsyncLockBackend::write_record(&self.inner, scoped).await
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

    fn expire(&self, lease: Duration) {
        self.0.expire(lease);
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

    fn max_name_len(&self) -> usize {
        LockName::MAX_LEN - TenantId::new("acme").unwrap().lock_prefix().len()
    }
}

leader_testkit::contract_tests!(every_runtime, Some(TenantHarness(MemoryHarness::new())));

#[test]
fn long_scoped_names_work_up_to_the_limit() {
    let backend = Scoped {
        inner: InMemoryBackend::new(),
        prefix: TenantId::new("acme").unwrap().lock_prefix(),
    };
    let room = LockName::MAX_LEN - backend.prefix.len();
    let fits = LockName::new(format!("zählung-{}", "x".repeat(room - "zählung-".len()))).unwrap();
    let request = AcquireRequest::new(
        &fits,
        OwnerToken::random(),
        "node-ü",
        Duration::from_secs(30),
    );
    let AcquireOutcome::Acquired(lease) = LockBackend::try_acquire(&backend, request).unwrap()
    else {
        panic!("a scoped name of exactly 255 bytes must be accepted");
    };
    let state = LockBackend::state(&backend, &fits).unwrap();
    assert_eq!(state.leader().unwrap().leader_id, "node-ü");
    let physical = LockBackend::state(&backend.inner, &backend.key(&fits).unwrap()).unwrap();
    assert_eq!(physical.lock_name().len(), LockName::MAX_LEN);
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );

    let over = LockName::new(format!("{}y", fits.as_str())).unwrap();
    let err = LockBackend::state(&backend, &over).unwrap_err();
    assert!(
        matches!(err, Error::InvalidName(NameError::TooLong { len: 256, .. })),
        "{err:?}"
    );
}
