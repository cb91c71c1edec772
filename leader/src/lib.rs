#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

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
    GroupKeys, GroupSlots, GroupState, InMemoryBackend, IntoTenantId, LeaderChange,
    LeaderElectionOptions, LeaderLease, LeaderRunResult, LeaderState, LeadershipEvent,
    LeadershipEvents, LeadershipWatcher, LeaseContext, LeaseMode, ListCursor, ListPage,
    ListRequest, LockName, LockStatus, NameError, NoopBackend, OptionsError, RedactedError,
    RevokeReason, Shutdown, TenantId, TenantIdError, UrlSecrets,
};

// The electors, and the locks their batch calls hand back (`try_acquire_for_tenants`,
// `release_all`).
#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
pub use leader_async::{
    AsyncAcquired, AsyncFinished, AsyncLeaderElector, AsyncLeaderGroupElector,
    AsyncLeadershipHandle, AsyncLockGuard, AsyncObserver,
};
pub use leader_blocking::{
    Acquired, Finished, LeaderElector, LeaderGroupElector, LeadershipHandle, LockGuard, Observer,
    TaskHandle, ThreadPoolLeaderElector,
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

/// The backend SPI, for implementing a backend of your own: the two traits, the four
/// primitives' request and outcome types, a group's acquire (`try_acquire_slot`, with a
/// default built on `try_acquire`), and release notifications.
///
/// Every backend must keep the numbered guarantees of [`LockBackend`](backend::LockBackend)'s
/// `# Contract`; the `leader-testkit` crate's contract suite checks them.
pub mod backend {
    pub use leader_core::{
        AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, BackendError, BackendErrorKind,
        BoxError, ExtendOutcome, LeaderLease, LeaderState, Lease, LockBackend, LockName,
        MAX_RECORD_LEN, OwnerToken, ParseOwnerTokenError, RecordWrite, RecordWriteOutcome,
        ReleaseEvents, ReleaseListener, ReleaseNotice, ReleaseOutcome, ReleaseRequest, Renewal,
        SlotOutcome, SlotRequest, SlotWalk, StoredRecord, corrupt_record,
    };
}

/// Clocks, for tests of code that uses tenant pollers or leases with a manual clock.
pub mod clock {
    pub use leader_core::{Clock, ManualClock, SystemClock};
}
