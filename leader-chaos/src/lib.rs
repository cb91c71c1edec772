#![doc = include_str!("../README.md")]

pub mod backend;
pub mod cli;
pub mod event;
pub mod faults;
pub mod history;
pub mod hold;
pub mod journal;
pub mod logfile;
pub mod orchestrator;
pub mod read_write;
pub mod resource;
pub mod servers;
pub mod worker;
pub mod workers;
