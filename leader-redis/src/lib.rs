#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod acks;
#[cfg(any(feature = "tokio", feature = "smol"))]
mod async_conn;
mod backend;
mod calls;
mod clients;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod decode;
mod error;
pub mod fence;
mod from_client;
mod keys;
mod listener;
mod operator;
mod ops;
mod scripts;
mod sentinel;
mod shared;
mod signals;
mod started;
mod sync_conn;
mod time;
mod url;

pub use backend::RedisBackend;
pub use config::RedisConfig;
pub use error::ConnectError;
pub use url::redacted_url;

/// The `redis` driver this crate is built on, re-exported: use this to match the driver
/// version when you build the clients you pass to
/// [`RedisBackend::from_client`] and [`RedisBackend::from_cluster_client`], so that your
/// `redis::Client` is the type this crate takes even when your own `redis` dependency is
/// of another version (or absent).
///
/// ```
/// use leader_redis::redis;
/// use leader_redis::{RedisBackend, RedisConfig};
///
/// let client: redis::Client = leader_redis::redis::Client::open("redis://127.0.0.1/")?;
/// let backend = RedisBackend::from_client(client, RedisConfig::default())?;
/// # let _ = backend;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use redis;
