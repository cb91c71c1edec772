#![doc = include_str!("../README.md")]

#[cfg(any(feature = "tokio", feature = "smol"))]
mod async_conn;
#[cfg(any(feature = "tokio", feature = "smol"))]
mod asynchronous;
mod backend;
mod blocking;
mod clients;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod decode;
mod error;
mod keys;
mod ops;
mod pubsub;
mod scripts;
mod started;
mod sync_conn;

pub use backend::RedisBackend;
pub use config::RedisConfig;
pub use error::ConfigError;
