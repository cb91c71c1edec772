#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod backend;
mod blocking;
mod clients;
mod config;
mod document;
mod error;
pub mod fence;
mod nonblocking;
mod ops;
mod pipeline;
mod runtime;
mod time;

pub use backend::MongoBackend;
pub use config::MongoConfig;
pub use error::ConnectError;
