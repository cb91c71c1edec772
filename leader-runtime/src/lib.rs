#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod background;

pub use background::{Background, BackgroundBuilder, Stopped};
