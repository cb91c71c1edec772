#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod backend;
mod balance;
mod calls;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod conn;
mod error;
mod keys;
mod lease;
mod listener;
mod operator;
mod ops;
mod record;
mod revoke;
mod seen;
mod shared;
mod time;
mod url;

pub use backend::EtcdBackend;
pub use config::EtcdConfig;
pub use error::ConnectError;
pub use url::redacted_url;

/// The etcd client this crate is built on, for an application that wants to talk to the
/// same cluster directly.
pub use etcd_client;

/// Unstable, behind the `unstable-raw` feature: the transactions the backend sends, built by
/// its own builders, for the benchmarks that measure it against them sent raw. Not for
/// applications, and exempt from semver: any release, a patch included, may change it.
#[cfg(feature = "unstable-raw")]
pub mod raw {
    use std::time::{Duration, SystemTime};

    use etcd_client::Txn;
    use leader_core::OwnerToken;

    use crate::keys::Keys;
    use crate::lease::OnLease;
    use crate::ops::txn::LockKeys;
    use crate::record::HolderRecord;
    use crate::time::later;

    /// The transaction an uncontended `try_acquire` sends after its lease grant: lock
    /// `name` under `prefix` taken for `owner` (node `leader_id`) on the etcd lease
    /// `lease`, with `fencing_token` (it must be above the lock's stored counter, or the
    /// transaction only reads the counter), the record saying the lease lasts
    /// `lease_time` from now. Built by the backend's own builder, so the bench's floor
    /// follows any change to it.
    pub fn acquire_txn(
        prefix: &str,
        name: &str,
        owner: OwnerToken,
        leader_id: &str,
        lease: i64,
        fencing_token: u64,
        lease_time: Duration,
    ) -> Txn {
        let layout = Keys::new(prefix);
        let keys = LockKeys::of(&layout, name);
        let acquired_at = SystemTime::now();
        let record = HolderRecord {
            fencing_token,
            acquired_at,
            expires_at: later(acquired_at, lease_time),
            owner,
            leader_id: leader_id.to_owned(),
        };
        keys.acquire(&record, &OnLease::new(&layout, lease))
    }

    /// The transaction `release` sends when no minimum lease keeps the lock: both keys of
    /// `name` under `prefix` deleted while `owner` holds it (`succeeded` says it did). The
    /// backend then revokes the etcd lease they were on in the background.
    pub fn release_txn(prefix: &str, name: &str, owner: OwnerToken) -> Txn {
        LockKeys::of(&Keys::new(prefix), name).release(owner)
    }
}
