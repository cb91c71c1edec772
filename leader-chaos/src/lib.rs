#![doc = include_str!("../README.md")]

pub mod checker;
pub mod event;
