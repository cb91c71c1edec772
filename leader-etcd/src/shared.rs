//! A read/write lock's record as its key stores it (see
//! [`Keys::shared`](crate::keys::Keys::shared)): the kit's [`SharedRecord`] on this
//! backend's clock ([`Micros`]), written and read here only.
//!
//! The stored form is text, one line per entry, the node id last on its line and preceded
//! by its length in bytes (so it may hold spaces and newlines):
//!
//! ```text
//! v1 <counter>
//! w <token> <acquired µs> <expires µs> <released 0|1> <owner> <node len> <node>
//! r <token> <acquired µs> <expires µs> <released 0|1> <owner> <node len> <node>
//! i <expires µs> <owner> <node len> <node>
//! ```
//!
//! at most one `w` and one `i` line, the `r` lines in the order the readers came.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use leader_core::kit::{Deadline, Intent, SharedHolder, SharedRecord};
use leader_core::{LeaderLease, OwnerToken, SharedState, WriterIntent};

use crate::error::OpError;
use crate::time::from_micros;

/// The first word of every read/write lock record: its format.
const VERSION: &str = "v1";

/// A time on this backend's clock for read/write locks: microseconds since the Unix epoch
/// on the deciding host's wall clock (etcd has no clock a client can read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Micros(pub(crate) u64);

impl Deadline for Micros {
    fn after(self, by: Duration) -> Option<Self> {
        u64::try_from(by.as_micros())
            .ok()
            .and_then(|by| self.0.checked_add(by))
            .map(Micros)
    }
}

impl Micros {
    /// The time it names (the latest the platform holds when it cannot).
    pub(crate) fn at(self) -> SystemTime {
        from_micros(self.0)
            .or_else(|| from_micros(u64::MAX / 2))
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }
}

/// A read/write lock's record on this backend's clock.
pub(crate) type Record = SharedRecord<Micros>;

/// The stored form of `record`.
pub(crate) fn encode(record: &Record) -> Vec<u8> {
    let mut text = format!("{VERSION} {}\n", record.counter);
    let mut holder = |kind: char, h: &SharedHolder<Micros>| {
        let _ = writeln!(
            text,
            "{kind} {} {} {} {} {} {} {}",
            h.token,
            h.acquired.0,
            h.expires.0,
            u8::from(h.released),
            h.owner,
            h.node.len(),
            h.node
        );
    };
    if let Some(writer) = &record.writer {
        holder('w', writer);
    }
    for reader in &record.readers {
        holder('r', reader);
    }
    if let Some(intent) = &record.intent {
        let _ = writeln!(
            text,
            "i {} {} {} {}",
            intent.expires.0,
            intent.owner,
            intent.node.len(),
            intent.node
        );
    }
    text.into_bytes()
}

/// Reads the value of the read/write lock key `key`.
///
/// # Errors
///
/// [`OpError::Corrupt`] for a value this backend did not write.
pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<Record, OpError> {
    let corrupt = |problem| OpError::corrupt(key, problem);
    let mut text = std::str::from_utf8(value).map_err(|_| corrupt("not UTF-8"))?;
    let header = line(&mut text).ok_or_else(|| corrupt("no header line"))?;
    let counter = header
        .strip_prefix(VERSION)
        .and_then(|rest| rest.strip_prefix(' '))
        .and_then(|count| count.parse::<u64>().ok())
        .ok_or_else(|| corrupt("not a read/write lock record of this backend"))?;
    let mut record = Record {
        counter,
        ..Record::default()
    };
    while !text.is_empty() {
        let (kind, rest) = text
            .split_once(' ')
            .ok_or_else(|| corrupt("an entry without its fields"))?;
        text = rest;
        match kind {
            "w" | "r" => {
                let token = number(&mut text).ok_or_else(|| corrupt("no fencing token"))?;
                let acquired = number(&mut text).ok_or_else(|| corrupt("no acquisition time"))?;
                let expires = number(&mut text).ok_or_else(|| corrupt("no expiry time"))?;
                let released = match number(&mut text) {
                    Some(0) => false,
                    Some(1) => true,
                    _ => return Err(corrupt("no released flag")),
                };
                let owner = owner(&mut text).ok_or_else(|| corrupt("no owner token"))?;
                let node = node(&mut text).ok_or_else(|| corrupt("no node id"))?;
                if token > counter {
                    return Err(corrupt("a fencing token above the counter"));
                }
                let holder = SharedHolder {
                    owner,
                    node,
                    token,
                    acquired: Micros(acquired),
                    expires: Micros(expires),
                    released,
                };
                if kind == "r" {
                    record.readers.push(holder);
                } else if record.writer.replace(holder).is_some() {
                    return Err(corrupt("two writers"));
                }
            }
            "i" => {
                let expires = number(&mut text).ok_or_else(|| corrupt("no expiry time"))?;
                let owner = owner(&mut text).ok_or_else(|| corrupt("no owner token"))?;
                let node = node(&mut text).ok_or_else(|| corrupt("no node id"))?;
                let intent = Intent {
                    owner,
                    node,
                    expires: Micros(expires),
                };
                if record.intent.replace(intent).is_some() {
                    return Err(corrupt("two intents"));
                }
            }
            _ => return Err(corrupt("an entry of an unknown kind")),
        }
    }
    Ok(record)
}

/// The first line of `text` (without its newline), `text` moved past it.
fn line<'a>(text: &mut &'a str) -> Option<&'a str> {
    let (first, rest) = text.split_once('\n')?;
    *text = rest;
    Some(first)
}

/// The next word of `text` (up to a space), `text` moved past the space.
fn word<'a>(text: &mut &'a str) -> Option<&'a str> {
    let (first, rest) = text.split_once(' ')?;
    *text = rest;
    Some(first)
}

fn number(text: &mut &str) -> Option<u64> {
    let word = word(text)?;
    (!word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
}

fn owner(text: &mut &str) -> Option<OwnerToken> {
    word(text)?.parse().ok()
}

/// A node id: its length, a space, that many bytes, a newline.
fn node(text: &mut &str) -> Option<String> {
    let len = usize::try_from(number(text)?).ok()?;
    let node = text.get(..len)?;
    let rest = text.get(len..)?.strip_prefix('\n')?;
    *text = rest;
    Some(node.to_owned())
}

/// A holder as the SPI reports it.
pub(crate) fn holder(holder: &SharedHolder<Micros>) -> LeaderLease {
    LeaderLease::new(
        holder.node.clone(),
        holder.acquired.at(),
        holder.expires.at(),
        holder.token,
    )
}

/// The snapshot of `record` (pruned by the caller) for the lock `name`.
pub(crate) fn state(record: &Record, name: &str) -> SharedState {
    SharedState::new(
        name,
        record.writer.as_ref().map(holder),
        record.readers.iter().map(holder).collect(),
        record
            .intent
            .as_ref()
            .map(|i| WriterIntent::new(i.node.clone(), i.expires.at())),
    )
}

/// What a change of a record from `before` to `after` frees, for release notifications:
/// `None` when no hold ended and no waiting writer's intent was withdrawn; otherwise
/// `Some` of the fencing token of the one hold that ended (`None` inside when it was an
/// intent, or several holds at once).
pub(crate) fn freed(before: &Record, after: &Record) -> Option<Option<u64>> {
    let holds = |record: &Record| -> Vec<(OwnerToken, u64)> {
        record
            .writer
            .iter()
            .chain(&record.readers)
            .map(|h| (h.owner, h.token))
            .collect()
    };
    let left = holds(after);
    let ended: Vec<u64> = holds(before)
        .into_iter()
        .filter(|hold| !left.contains(hold))
        .map(|(_, token)| token)
        .collect();
    match ended.as_slice() {
        [token] => Some(Some(*token)),
        [_, _, ..] => Some(None),
        [] => {
            let withdrawn = before.intent.as_ref().is_some_and(|i| {
                after.intent.as_ref().is_none_or(|a| a.owner != i.owner)
                    && after.writer.as_ref().is_none_or(|w| w.owner != i.owner)
            });
            withdrawn.then_some(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(token: u64, node: &str, released: bool) -> SharedHolder<Micros> {
        SharedHolder {
            owner: OwnerToken::random(),
            node: node.to_owned(),
            token,
            acquired: Micros(1_764_000_000_000_000),
            expires: Micros(1_764_000_030_000_000),
            released,
        }
    }

    #[test]
    fn a_record_round_trips_with_node_ids_of_any_text() {
        let record = Record {
            counter: 7,
            writer: Some(holder(7, "w 1\nwith a newline", true)),
            readers: vec![holder(3, "", false), holder(5, "é r", false)],
            intent: Some(Intent {
                owner: OwnerToken::random(),
                node: "waiting writer".to_owned(),
                expires: Micros(9),
            }),
        };
        assert_eq!(decode(b"k", &encode(&record)).ok(), Some(record));
        let empty = Record {
            counter: 42,
            ..Record::default()
        };
        assert_eq!(decode(b"k", &encode(&empty)).ok(), Some(empty));
    }

    #[test]
    fn values_of_another_shape_are_corrupt() {
        let owner = OwnerToken::random();
        for value in [
            String::new(),
            "hello".to_owned(),
            "v1 x\n".to_owned(),
            "v2 1\n".to_owned(),
            "v1 1".to_owned(),
            format!("v1 9\nr 1 2 3 0 {owner} 5 abc\n"),
            format!("v1 9\nr 1 2 3 2 {owner} 1 a\n"),
            format!("v1 9\nr 10 2 3 0 {owner} 1 a\n"),
            format!("v1 9\nq 1 2 3 0 {owner} 1 a\n"),
            format!("v1 9\nw 1 2 3 0 {owner} 1 a\nw 2 2 3 0 {owner} 1 b\n"),
            "v1 9\nr 1 2 3 0 nothex 1 a\n".to_owned(),
        ] {
            assert!(
                matches!(decode(b"k", value.as_bytes()), Err(OpError::Corrupt { .. })),
                "{value:?}"
            );
        }
        assert!(decode(b"k", b"\xff\xfe").is_err());
    }

    #[test]
    fn a_hold_that_ends_or_an_intent_withdrawn_frees_the_lock() {
        let (a, b) = (holder(3, "a", false), holder(5, "b", false));
        let both = Record {
            counter: 5,
            readers: vec![a.clone(), b.clone()],
            ..Record::default()
        };
        let one = Record {
            readers: vec![b.clone()],
            ..both.clone()
        };
        assert_eq!(freed(&both, &one), Some(Some(3)));
        assert_eq!(freed(&both, &Record::default()), Some(None));
        assert_eq!(freed(&one, &both), None, "a new reader frees nothing");
        let kept = Record {
            readers: vec![SharedHolder {
                released: true,
                ..a.clone()
            }],
            ..both.clone()
        };
        assert_eq!(freed(&both, &kept).map(|_| ()), Some(()), "b ended");
        let queued = Record {
            intent: Some(Intent {
                owner: OwnerToken::random(),
                node: "w".to_owned(),
                expires: Micros(9),
            }),
            ..one.clone()
        };
        assert_eq!(freed(&queued, &one), Some(None), "the intent withdrawn");
        let owner = queued.intent.as_ref().map(|i| i.owner).unwrap();
        let written = Record {
            writer: Some(SharedHolder { owner, ..b.clone() }),
            readers: Vec::new(),
            intent: None,
            counter: 6,
        };
        assert_eq!(
            freed(&queued, &written),
            Some(Some(5)),
            "the reader left, the writer got in"
        );
    }

    #[test]
    fn deadlines_count_microseconds() {
        assert_eq!(
            Micros(1).after(Duration::from_millis(2)),
            Some(Micros(2001))
        );
        assert_eq!(Micros(u64::MAX).after(Duration::from_micros(1)), None);
        assert_eq!(Micros(0).after(Duration::MAX), None);
    }
}
