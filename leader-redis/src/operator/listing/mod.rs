//! `list`: the held locks under a name prefix, one page at a time.
//!
//! A prefix inside one name's derived names (`job#`, `job#rank:`: a leader group's slots,
//! ranked candidates' records) is read from that name's index, one script call a page
//! ([`IndexListing`]), at a cost of the page's members whatever else the server holds.
//! Any other prefix is scanned with `SCAN` (never `KEYS`), on one server or on every
//! master of a cluster in turn: a page is a small state machine ([`Listing`]) that asks
//! for round trips ([`Io`]) and reads their replies. The blocking and async paths only
//! send what they ask (`run`).

mod cursor;
mod index;
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

use crate::error::OpError;

/// The operation's name, for traces and errors.
const OP: &str = "list";

/// A failed listing, and the key of the record at fault when one is.
#[derive(Debug)]
pub(crate) struct ListFailure {
    pub(crate) failure: OpError,
    pub(crate) key: Option<String>,
}

impl ListFailure {
    /// A failure about the record at `key`.
    fn at(failure: OpError, key: String) -> Self {
        ListFailure {
            failure,
            key: Some(key),
        }
    }
}

impl From<OpError> for ListFailure {
    fn from(failure: OpError) -> Self {
        ListFailure { failure, key: None }
    }
}
