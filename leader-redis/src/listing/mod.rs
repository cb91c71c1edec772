//! `list`: the held locks under a name prefix, one page at a time, by `SCAN` (never
//! `KEYS`), on one server or on every master of a cluster in turn.
//!
//! A page is a small state machine ([`Listing`]) that asks for round trips ([`Io`]) and
//! reads their replies; the blocking and async paths only send what it asks (`run`).

mod cursor;
mod io;
mod masters;
mod page;
mod pattern;
mod reads;
mod run;
#[cfg(test)]
mod tests;

#[cfg(any(feature = "tokio", feature = "smol"))]
pub(crate) use io::node;
pub(crate) use io::{Io, pipeline, routing};

use crate::error::Failure;

/// The operation's name, for traces and errors.
const OP: &str = "list";

/// A failed listing, and the key of the record at fault when one is.
#[derive(Debug)]
pub(crate) struct ListFailure {
    pub(crate) failure: Failure,
    pub(crate) key: Option<String>,
}

impl ListFailure {
    /// A failure about the record at `key`.
    fn at(failure: Failure, key: String) -> Self {
        ListFailure {
            failure,
            key: Some(key),
        }
    }
}

impl From<Failure> for ListFailure {
    fn from(failure: Failure) -> Self {
        ListFailure { failure, key: None }
    }
}
