#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod backend;
mod blocking;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod conn;
mod error;
mod keys;
mod listener;
mod nonblocking;
mod operator;
mod ops;
mod record;
mod time;
mod url;

pub use backend::EtcdBackend;
pub use config::EtcdConfig;
pub use error::ConnectError;
pub use url::redacted_url;

/// The etcd client this crate is built on, for an application that wants to talk to the
/// same cluster directly.
pub use etcd_client;
