//! [`Listing`]: one page of a listing as a state machine, shared by the blocking and async
//! paths.
//!
//! It scans from the cursor's position with `SCAN <cursor> MATCH <pattern> COUNT <n>`,
//! reads the records of each batch's keys in one pipelined round trip, and goes on until
//! it holds at least `limit` locks or the scan is complete (on a cluster: every master's,
//! one after another). So a page may hold up to one `SCAN` batch more than `limit`, and a
//! server with many other keys costs more round trips, not more pages.

use std::collections::HashSet;
use std::mem;
use std::time::SystemTime;

use leader_core::{LeaderState, ListPage, ListRequest};
use redis::Value;

use super::cursor::{self, Position};
use super::io::Io;
use super::pattern::Pattern;
use super::reads::{self, Found};
use super::{ListFailure, OP, masters};
use crate::decode::array;
use crate::error::OpError;

/// The largest `COUNT` a `SCAN` asks for, whatever the page size: a call walks about that
/// many keys, and a huge count would make one call walk the whole keyspace.
const MAX_COUNT: usize = 1000;

/// What to do next.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this and [`Listing::feed`] the reply.
    Send(Io),
    /// The page is complete.
    Done(ListPage),
}

/// The reply the listing waits for.
#[derive(Debug, Default)]
enum Awaiting {
    #[default]
    Nothing,
    Masters,
    Scan,
    Records(Vec<Found>),
}

/// One page being gathered.
#[derive(Debug)]
pub(crate) struct Listing {
    pattern: Pattern,
    limit: usize,
    count: usize,
    cluster: bool,
    /// The masters' slots, once known (cluster only).
    masters: Option<Vec<u16>>,
    at: Position,
    /// The request, whose prefix the next page's cursor is tagged with.
    request: ListRequest,
    complete: bool,
    awaiting: Awaiting,
    /// Keys found by the last scan, whose records are still to read, and a slot of the
    /// master that scan ran on (the position may have moved on to the next master).
    found: Vec<Found>,
    found_on: Option<u16>,
    seen: HashSet<String>,
    locks: Vec<LeaderState>,
    round_trips: usize,
    /// This node's clock when the page started, which judges a record without key
    /// expiry (see `holds_without_expiry`).
    now: SystemTime,
}

impl Listing {
    /// The page `request` asks for, under `key_prefix`, on a cluster or one server, read at
    /// `now` on this node's clock.
    ///
    /// # Errors
    ///
    /// [`OpError::BadCursor`] when the request's cursor is not one this backend made.
    pub(crate) fn new(
        key_prefix: &str,
        request: &ListRequest,
        cluster: bool,
        now: SystemTime,
    ) -> Result<Self, ListFailure> {
        let limit = request.limit.max(1);
        Ok(Listing {
            pattern: Pattern::new(key_prefix, &request.prefix),
            limit,
            count: limit.min(MAX_COUNT),
            cluster,
            masters: None,
            at: cursor::decode(request, cluster)?,
            request: request.clone(),
            complete: false,
            awaiting: Awaiting::Nothing,
            found: Vec::new(),
            found_on: None,
            seen: HashSet::new(),
            locks: Vec::new(),
            round_trips: 0,
            now,
        })
    }

    /// How many round trips the page took so far.
    #[cfg(test)]
    pub(crate) fn round_trips(&self) -> usize {
        self.round_trips
    }

    /// The next round trip, or the finished page.
    pub(crate) fn next(&mut self) -> Step {
        if self.cluster && self.masters.is_none() {
            return self.send(
                Awaiting::Masters,
                Io::Command {
                    cmd: masters::command(),
                    slot: None,
                },
            );
        }
        if !self.found.is_empty() {
            let found = mem::take(&mut self.found);
            let cmds = reads::commands(&found);
            let slot = self.found_on;
            return self.send(Awaiting::Records(found), Io::Pipeline { cmds, slot });
        }
        if self.complete || self.locks.len() >= self.limit {
            let next =
                (!self.complete).then(|| cursor::encode(self.at, self.cluster, &self.request));
            return Step::Done(ListPage::new(mem::take(&mut self.locks), next));
        }
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(self.at.cursor)
            .arg("MATCH")
            .arg(self.pattern.glob())
            .arg("COUNT")
            .arg(self.count);
        let slot = self.slot();
        self.send(Awaiting::Scan, Io::Command { cmd, slot })
    }

    /// Reads the reply to the round trip [`next`](Self::next) asked for.
    ///
    /// # Errors
    ///
    /// A reply of another shape, or a corrupted record.
    pub(crate) fn feed(&mut self, reply: Value) -> Result<(), ListFailure> {
        match mem::take(&mut self.awaiting) {
            Awaiting::Masters => {
                let slots = masters::slots(&reply)?;
                // A cursor past the last master (the cluster shrank): nothing is left.
                self.complete = self.at.node >= slots.len();
                self.masters = Some(slots);
            }
            Awaiting::Scan => self.scanned(&reply)?,
            Awaiting::Records(found) => self.locks.extend(reads::held(found, &reply, self.now)?),
            Awaiting::Nothing => return Err(OpError::bad_reply(OP, &reply).into()),
        }
        Ok(())
    }

    fn send(&mut self, awaiting: Awaiting, io: Io) -> Step {
        self.awaiting = awaiting;
        self.round_trips += 1;
        Step::Send(io)
    }

    /// The slot of the master being scanned (`None` on one server).
    fn slot(&self) -> Option<u16> {
        self.masters.as_ref()?.get(self.at.node).copied()
    }

    /// Takes a `SCAN` reply: `[next cursor, [key, ...]]`.
    fn scanned(&mut self, reply: &Value) -> Result<(), OpError> {
        let bad = || OpError::bad_reply(OP, reply);
        let items = array(reply).ok_or_else(bad)?;
        let next = items.first().and_then(scan_cursor).ok_or_else(bad)?;
        let keys = items.get(1).and_then(array).ok_or_else(bad)?;
        for key in keys {
            let Value::BulkString(key) = key else {
                return Err(bad());
            };
            // SCAN may return a key twice; one page lists it once.
            if let Some(found) = self.pattern.found(key)
                && self.seen.insert(found.key.clone())
            {
                self.found.push(found);
            }
        }
        self.found_on = self.slot();
        self.advance(next);
        Ok(())
    }

    /// Moves to the scan's next cursor, or to the next master once a scan is complete.
    fn advance(&mut self, next: u64) {
        if next != 0 {
            self.at.cursor = next;
            return;
        }
        let nodes = self.masters.as_ref().map_or(1, Vec::len);
        self.at = Position {
            node: self.at.node + 1,
            cursor: 0,
        };
        self.complete = self.at.node >= nodes;
    }
}

/// A `SCAN` cursor: an unsigned 64-bit number, sent as a string.
fn scan_cursor(value: &Value) -> Option<u64> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::SimpleString(text) => text.parse().ok(),
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}
