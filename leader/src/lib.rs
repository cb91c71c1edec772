#![cfg_attr(docsrs, feature(doc_cfg))]
// The crate's front page is the repository's README (leader/README.md links to it), so one
// page is the front door on GitHub, crates.io and docs.rs. Its links name files of the
// repository by relative paths, which docs.rs would resolve against itself: these
// definitions come first, so they win over the README's own (CommonMark uses a label's
// first definition), and point the links at the repository named in Cargo.toml.
#![doc = concat!("[guide]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/introduction.md")]
#![doc = concat!("[backends-guide]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/backends.md")]
#![doc = concat!("[primitives-guide]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/choosing-a-primitive.md")]
#![doc = concat!("[cron]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/recipes/cron-jobs.md")]
#![doc = concat!("[consumer]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/recipes/stream-consumer.md")]
#![doc = concat!("[k8s]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/recipes/kubernetes.md")]
#![doc = concat!("[fencing]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/guide/src/recipes/fencing.md")]
#![doc = concat!("[examples]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/examples/Cargo.toml")]
#![doc = "[cli]: https://docs.rs/leader-cli"]
#![doc = concat!("[architecture]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/ARCHITECTURE.md")]
#![doc = concat!("[benches]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/benches/README.md")]
#![doc = concat!("[changelog]: ", env!("CARGO_PKG_REPOSITORY"), "/blob/main/CHANGELOG.md")]
#![doc = ""]
// The README's samples need the `schedule` and `tokio` features (docs.rs builds with every
// feature); a build without them shows a one-line front page, so that `cargo test -p
// leader` with fewer features compiles no sample it cannot build.
#![cfg_attr(all(feature = "schedule", feature = "tokio"), doc = include_str!("../README.md"))]
#![cfg_attr(
    not(all(feature = "schedule", feature = "tokio")),
    doc = "Leader election and distributed locks. (The full front page, the repository's README, is built with the `schedule` and `tokio` features, as on docs.rs.)"
)]

mod any;
mod connect;
mod error;
pub mod fencing;

pub use any::AnyBackend;
pub use connect::{connect, connect_async, redacted_url};
pub use error::ConnectError;

// What a user names: options, results, errors, snapshots, names, campaigns, listings.
pub use leader_core::{
    CampaignConfig, ChangeKind, DeploymentMode, Error, EventCallback, ForceReleaseOutcome,
    GroupKeys, GroupSlots, GroupState, Hold, InMemoryBackend, IntoTenantId, LeaderChange,
    LeaderElectionOptions, LeaderLease, LeaderRunResult, LeaderState, LeadershipEvent,
    LeadershipEvents, LeadershipWatcher, LeaseContext, LeaseMode, ListCursor, ListPage,
    ListRequest, LockName, LockStatus, MaxReaders, NameError, NoopBackend, OptionsError,
    RedactedError, Reentered, RevokeReason, Role, SharedState, Shutdown, TenantId, TenantIdError,
    UrlSecrets, WriterIntent,
};

// The electors, and the locks their batch calls hand back (`try_acquire_for_tenants`,
// `release_all`).
#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
pub use leader_async::{
    AsyncAcquired, AsyncFinished, AsyncLeaderElector, AsyncLeaderGroupElector,
    AsyncLeadershipHandle, AsyncLockGuard, AsyncObserver, AsyncReadGuard, AsyncReadWriteLocks,
    AsyncReentrantGuard, AsyncReentrantLocks, AsyncWriteGuard,
};
pub use leader_blocking::{
    Acquired, Finished, LeaderElector, LeaderGroupElector, LeadershipHandle, LockGuard, Observer,
    ReadGuard, ReadWriteLocks, ReentrantGuard, ReentrantLocks, TaskHandle, ThreadPoolLeaderElector,
    WriteGuard,
};

// The server backends, and their crates (configs, errors, fencing helpers, the driver).
#[cfg(feature = "etcd")]
pub use leader_etcd::{self as etcd, EtcdBackend, EtcdConfig};
#[cfg(feature = "mongodb")]
pub use leader_mongodb::{self as mongodb, MongoBackend, MongoConfig};
#[cfg(feature = "postgres")]
pub use leader_postgres::{self as postgres, PostgresBackend, PostgresConfig};
#[cfg(feature = "redis")]
pub use leader_redis::{self as redis, RedisBackend, RedisConfig};
#[cfg(feature = "sqlite")]
pub use leader_sqlite::{self as sqlite, SqliteBackend, SqliteConfig};

/// Metrics on the `metrics` crate's facade: names, labels, cardinality.
#[cfg(feature = "metrics")]
pub use leader_core::metrics;

/// Tenant scoping and per-tenant pollers: the `leader-tenant` crate.
#[cfg(feature = "tenant")]
pub use leader_tenant as tenant;

/// Scheduled jobs, each tick run on one node of the fleet: the `leader-schedule` crate.
#[cfg(feature = "schedule")]
pub use leader_schedule as schedule;

/// The backend SPI, for implementing a backend of your own: the two traits (and the two
/// of read/write locks), the four primitives' request and outcome types, a group's acquire (`try_acquire_slot`, with a
/// default built on `try_acquire`), and release notifications.
///
/// Every backend must keep the numbered guarantees of [`LockBackend`](backend::LockBackend)'s
/// `# Contract`; the `leader-testkit` crate's contract suite checks them.
pub mod backend {
    pub use leader_core::{
        AcquireOutcome, AcquireRequest, AsyncLockBackend, AsyncSharedLockBackend, Backend,
        BackendError, BackendErrorKind, BoxError, ExtendOutcome, LeaderLease, LeaderState, Lease,
        LockBackend, LockName, MAX_RECORD_LEN, OwnerToken, ParseOwnerTokenError, RecordWrite,
        RecordWriteOutcome, ReleaseEvents, ReleaseListener, ReleaseNotice, ReleaseOutcome,
        ReleaseRequest, Renewal, SharedLockBackend, SharedOutcome, SharedRequest, SlotOutcome,
        SlotRequest, SlotWalk, StoredRecord, corrupt_record,
    };
}

/// Clocks, for tests of code that uses tenant pollers or leases with a manual clock.
pub mod clock {
    pub use leader_core::{Clock, ManualClock, SystemClock};
}
