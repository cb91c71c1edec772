#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod background;
mod subscription;

pub use background::{Background, BackgroundBuilder, Stopped};
pub use subscription::{Session, SessionEnd, Subscription};
