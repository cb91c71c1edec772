#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod backend;
mod blocking;
mod config;
mod conn;
mod connector;
mod error;
mod listener;
mod nonblocking;
mod ops;
mod pool;
mod runtime;
mod schema;
mod sql;
mod table;
mod time;
#[cfg(feature = "tls")]
mod tls;

pub use backend::PostgresBackend;
pub use config::PostgresConfig;
pub use error::ConnectError;
