#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
mod calls;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod durability;
mod error;
mod operator;
mod ops;
mod path;
mod records;
mod schema;
mod shared;
mod time;

pub use backend::SqliteBackend;
pub use config::SqliteConfig;
pub use error::ConnectError;
