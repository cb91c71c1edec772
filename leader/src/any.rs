//! [`AnyBackend`]: one backend type for whichever backend a URL chose.

use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, Error, ExtendOutcome, ForceReleaseOutcome,
    InMemoryBackend, LeaderState, ListPage, ListRequest, LockBackend, LockName, RecordWrite,
    RecordWriteOutcome, ReleaseEvents, ReleaseOutcome, ReleaseRequest, Renewal, Role,
    SharedLockBackend, SharedOutcome, SharedRequest, SharedState, SlotOutcome, SlotRequest,
    StoredRecord,
};

/// The backend [`connect`](crate::connect) returns: one of the built-in backends, usable
/// with every elector (blocking, thread-pool, and async on every runtime).
///
/// Cloning is cheap and clones share the store and its connections. Build one directly
/// from a configured backend with `From` (`RedisBackend::connect_with(url, config)?.into()`).
///
/// # Examples
///
/// ```
/// use leader::{AnyBackend, InMemoryBackend, LeaderElectionOptions, LeaderElector};
///
/// let backend: AnyBackend = InMemoryBackend::new().into();
/// assert_eq!(backend.kind(), "memory");
/// let elector = LeaderElector::new(backend, LeaderElectionOptions::default())?;
/// assert_eq!(elector.run_if_leader("job", || 1)?, Some(1));
/// # Ok::<(), leader::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AnyBackend {
    /// `memory://`: [`InMemoryBackend`].
    Memory(InMemoryBackend),
    /// `redis://`, `rediss://`, `redis+cluster://`, `redis+sentinel://`:
    /// [`RedisBackend`](leader_redis::RedisBackend).
    #[cfg(feature = "redis")]
    Redis(leader_redis::RedisBackend),
    /// `mongodb://`, `mongodb+srv://`: [`MongoBackend`](leader_mongodb::MongoBackend).
    #[cfg(feature = "mongodb")]
    Mongo(leader_mongodb::MongoBackend),
    /// `sqlite://path`: [`SqliteBackend`](leader_sqlite::SqliteBackend).
    #[cfg(feature = "sqlite")]
    Sqlite(leader_sqlite::SqliteBackend),
    /// `postgres://`, `postgresql://`: [`PostgresBackend`](leader_postgres::PostgresBackend).
    #[cfg(feature = "postgres")]
    Postgres(leader_postgres::PostgresBackend),
    /// `etcd://`, `etcds://`: [`EtcdBackend`](leader_etcd::EtcdBackend).
    #[cfg(feature = "etcd")]
    Etcd(leader_etcd::EtcdBackend),
}

/// Runs `$body` with `$backend` bound to the backend inside `$any`, whichever it is.
macro_rules! on_backend {
    ($any:expr, $backend:ident => $body:expr) => {
        match $any {
            AnyBackend::Memory($backend) => $body,
            #[cfg(feature = "redis")]
            AnyBackend::Redis($backend) => $body,
            #[cfg(feature = "mongodb")]
            AnyBackend::Mongo($backend) => $body,
            #[cfg(feature = "sqlite")]
            AnyBackend::Sqlite($backend) => $body,
            #[cfg(feature = "postgres")]
            AnyBackend::Postgres($backend) => $body,
            #[cfg(feature = "etcd")]
            AnyBackend::Etcd($backend) => $body,
        }
    };
}

impl AnyBackend {
    /// The backend's name: `"memory"`, `"redis"`, `"mongodb"`, `"sqlite"`, `"postgres"` or
    /// `"etcd"`.
    pub fn kind(&self) -> &'static str {
        on_backend!(self, backend => backend.name())
    }
}

impl From<InMemoryBackend> for AnyBackend {
    fn from(backend: InMemoryBackend) -> Self {
        AnyBackend::Memory(backend)
    }
}

#[cfg(feature = "redis")]
impl From<leader_redis::RedisBackend> for AnyBackend {
    fn from(backend: leader_redis::RedisBackend) -> Self {
        AnyBackend::Redis(backend)
    }
}

#[cfg(feature = "mongodb")]
impl From<leader_mongodb::MongoBackend> for AnyBackend {
    fn from(backend: leader_mongodb::MongoBackend) -> Self {
        AnyBackend::Mongo(backend)
    }
}

#[cfg(feature = "sqlite")]
impl From<leader_sqlite::SqliteBackend> for AnyBackend {
    fn from(backend: leader_sqlite::SqliteBackend) -> Self {
        AnyBackend::Sqlite(backend)
    }
}

#[cfg(feature = "postgres")]
impl From<leader_postgres::PostgresBackend> for AnyBackend {
    fn from(backend: leader_postgres::PostgresBackend) -> Self {
        AnyBackend::Postgres(backend)
    }
}

#[cfg(feature = "etcd")]
impl From<leader_etcd::EtcdBackend> for AnyBackend {
    fn from(backend: leader_etcd::EtcdBackend) -> Self {
        AnyBackend::Etcd(backend)
    }
}

impl Backend for AnyBackend {
    fn name(&self) -> &'static str {
        self.kind()
    }

    fn release_events(&self) -> Option<&ReleaseEvents> {
        on_backend!(self, backend => backend.release_events())
    }

    fn storage_key(&self, name: &LockName) -> String {
        on_backend!(self, backend => backend.storage_key(name))
    }
}

impl LockBackend for AnyBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        on_backend!(self, backend => LockBackend::try_acquire(backend, request))
    }

    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        on_backend!(self, backend => LockBackend::try_acquire_slot(backend, request))
    }

    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        on_backend!(self, backend => LockBackend::try_acquire_batch(backend, requests))
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        on_backend!(self, backend => LockBackend::extend(backend, renewal))
    }

    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        on_backend!(self, backend => LockBackend::extend_batch(backend, renewals))
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        on_backend!(self, backend => LockBackend::release(backend, release))
    }

    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        on_backend!(self, backend => LockBackend::release_batch(backend, releases))
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        on_backend!(self, backend => LockBackend::state(backend, key))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        on_backend!(self, backend => LockBackend::list(backend, request))
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        on_backend!(self, backend => LockBackend::force_release(backend, key))
    }

    fn extend_batch_is_native(&self) -> bool {
        on_backend!(self, backend => LockBackend::extend_batch_is_native(backend))
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        on_backend!(self, backend => LockBackend::force_release_if(backend, key, fencing_token))
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        on_backend!(self, backend => LockBackend::read_record(backend, key))
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        on_backend!(self, backend => LockBackend::write_record(backend, write))
    }
}

#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
impl leader_core::AsyncLockBackend for AnyBackend {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::try_acquire(backend, request).await)
    }

    async fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::try_acquire_slot(backend, request).await)
    }

    async fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::try_acquire_batch(backend, requests).await)
    }

    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::extend(backend, renewal).await)
    }

    async fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::extend_batch(backend, renewals).await)
    }

    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::release(backend, release).await)
    }

    async fn release_batch(
        &self,
        releases: &[ReleaseRequest<'_>],
    ) -> Vec<Result<ReleaseOutcome, Error>> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::release_batch(backend, releases).await)
    }

    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::state(backend, key).await)
    }

    async fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::list(backend, request).await)
    }

    async fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::force_release(backend, key).await)
    }

    fn extend_batch_is_native(&self) -> bool {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::extend_batch_is_native(backend))
    }

    async fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::force_release_if(backend, key, fencing_token).await)
    }

    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::read_record(backend, key).await)
    }

    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        use leader_core::AsyncLockBackend as Async;
        on_backend!(self, backend => Async::write_record(backend, write).await)
    }
}

impl SharedLockBackend for AnyBackend {
    fn try_acquire_shared(&self, request: SharedRequest<'_>) -> Result<SharedOutcome, Error> {
        on_backend!(self, backend => SharedLockBackend::try_acquire_shared(backend, request))
    }

    fn extend_shared(&self, renewal: Renewal<'_>, role: Role) -> Result<ExtendOutcome, Error> {
        on_backend!(self, backend => SharedLockBackend::extend_shared(backend, renewal, role))
    }

    fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> Result<ReleaseOutcome, Error> {
        on_backend!(self, backend => SharedLockBackend::release_shared(backend, release, role))
    }

    fn state_shared(&self, key: &LockName) -> Result<SharedState, Error> {
        on_backend!(self, backend => SharedLockBackend::state_shared(backend, key))
    }
}

#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
impl leader_core::AsyncSharedLockBackend for AnyBackend {
    async fn try_acquire_shared(&self, request: SharedRequest<'_>) -> Result<SharedOutcome, Error> {
        use leader_core::AsyncSharedLockBackend as Async;
        on_backend!(self, backend => Async::try_acquire_shared(backend, request).await)
    }

    async fn extend_shared(
        &self,
        renewal: Renewal<'_>,
        role: Role,
    ) -> Result<ExtendOutcome, Error> {
        use leader_core::AsyncSharedLockBackend as Async;
        on_backend!(self, backend => Async::extend_shared(backend, renewal, role).await)
    }

    async fn release_shared(
        &self,
        release: ReleaseRequest<'_>,
        role: Role,
    ) -> Result<ReleaseOutcome, Error> {
        use leader_core::AsyncSharedLockBackend as Async;
        on_backend!(self, backend => Async::release_shared(backend, release, role).await)
    }

    async fn state_shared(&self, key: &LockName) -> Result<SharedState, Error> {
        use leader_core::AsyncSharedLockBackend as Async;
        on_backend!(self, backend => Async::state_shared(backend, key).await)
    }
}
