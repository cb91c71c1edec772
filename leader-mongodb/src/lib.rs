#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod backend;
mod calls;
mod clients;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod document;
mod error;
pub mod fence;
mod listener;
mod operator;
mod ops;
mod pipeline;
mod records;
mod shared;
mod time;
mod url;

pub use backend::MongoBackend;
pub use config::MongoConfig;
pub use error::ConnectError;
pub use url::redacted_url;

/// The `mongodb` driver this crate is built on, re-exported: use this to match the driver
/// version when you build the [`Client`](mongodb::Client) you pass to
/// [`MongoBackend::from_client`] or the write concern of a [`MongoConfig`], so that your
/// types are the ones this crate takes even when your own `mongodb` dependency is of
/// another version (or absent).
///
/// ```
/// use leader_mongodb::MongoConfig;
/// use leader_mongodb::mongodb::options::WriteConcern;
///
/// let config = MongoConfig::new().with_write_concern(WriteConcern::majority());
/// # let _ = config;
/// ```
pub use mongodb;

/// Unstable, behind the `unstable-raw` feature: the commands the backend sends, built by its
/// own builders, for the benchmarks' raw floor (the backend's own commands without the
/// backend). Not for applications, and exempt from semver: any release, a patch
/// included, may change it.
#[cfg(feature = "unstable-raw")]
pub mod raw {
    use std::time::Duration;

    use leader_core::{LockName, OwnerToken};
    use mongodb::bson::Document;

    /// The acquire's `findOneAndUpdate` (upsert, return the new document): filter and
    /// update pipeline.
    pub fn acquire_command(
        key: &LockName,
        owner: OwnerToken,
        leader_id: &str,
        lease_time: Duration,
    ) -> (Document, Vec<Document>) {
        let plan = crate::pipeline::acquire(key, owner, leader_id, lease_time);
        (plan.filter, plan.update)
    }

    /// The release's `updateOne`: filter and update pipeline.
    pub fn release_command(
        key: &LockName,
        owner: OwnerToken,
        min_lease_time: Duration,
    ) -> (Document, Vec<Document>) {
        let plan = crate::pipeline::release(key, owner, min_lease_time);
        (plan.filter, plan.update)
    }
}
