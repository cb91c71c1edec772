//! A read/write lock's record as its key stores it (see
//! [`Keys::shared`](crate::keys::Keys::shared)): the kit's [`SharedRecord`], each hold and
//! intent with the etcd lease its liveness key hangs on ([`Stored`]), written and read
//! here only.
//!
//! The stored form is text, one line per entry, the node id last on its line and preceded
//! by its length in bytes (so it may hold spaces and newlines):
//!
//! ```text
//! v2 <counter>
//! w <token> <acquired µs> <expires µs> <released 0|1> <lease> <owner> <node len> <node>
//! r <token> <acquired µs> <expires µs> <released 0|1> <lease> <owner> <node len> <node>
//! i <expires µs> <lease> <owner> <node len> <node>
//! ```
//!
//! at most one `w` and one `i` line, the `r` lines in the order the readers came. The
//! times are the deciding host's wall clock and are **reported only**: whether an entry is
//! live is etcd's word, its liveness key (`{prefix}/shared-live/{name}/{owner}/{r|w|i}`,
//! [`Keys::shared_live`](crate::keys::Keys::shared_live)) existing on the lease the record
//! names. A key whose lease ran out never comes back on that lease, so an entry once seen
//! dead is dead for good ([`Stored::prune_dead`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use leader_core::kit::{Deadline, Intent, SharedHolder, SharedRecord};
use leader_core::{LeaderLease, OwnerToken, SharedState, WriterIntent};

use crate::error::OpError;
use crate::time::from_micros;

/// The first word of every read/write lock record: its format.
const VERSION: &str = "v2";

/// A time in a read/write lock's record: microseconds since the Unix epoch on the deciding
/// host's wall clock (etcd has no clock a client can read). Reported, never judged:
/// expiry is the etcd leases' (see the module docs).
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

/// What an entry of the record is: its liveness key's last path segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A reader's hold.
    Read,
    /// The writer's hold.
    Write,
    /// A waiting writer's intent.
    Intent,
}

impl Kind {
    /// The letter of its record line and of its liveness key.
    pub(crate) fn letter(self) -> char {
        match self {
            Kind::Read => 'r',
            Kind::Write => 'w',
            Kind::Intent => 'i',
        }
    }
}

/// One entry of a record: what it is, and whose.
pub(crate) type Entry = (Kind, OwnerToken);

/// A record as stored: the kit's record, and the etcd lease of each entry's liveness key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) record: Record,
    pub(crate) leases: HashMap<Entry, i64>,
}

impl Stored {
    /// The entries of the record, each with its lease (0 when none is known).
    pub(crate) fn entries(&self) -> Vec<(Entry, i64)> {
        let record = &self.record;
        record
            .writer
            .iter()
            .map(|w| (Kind::Write, w.owner))
            .chain(record.readers.iter().map(|r| (Kind::Read, r.owner)))
            .chain(record.intent.iter().map(|i| (Kind::Intent, i.owner)))
            .map(|entry| (entry, self.leases.get(&entry).copied().unwrap_or(0)))
            .collect()
    }

    /// The lease of `entry`, when the record has it.
    pub(crate) fn lease_of(&self, entry: Entry) -> Option<i64> {
        self.entries()
            .into_iter()
            .find(|(e, _)| *e == entry)
            .map(|(_, lease)| lease)
    }

    /// Drops the entries `live` says are not (etcd ended their lease), and the leases of
    /// entries no longer in the record.
    pub(crate) fn prune_dead(&mut self, mut live: impl FnMut(Entry, i64) -> bool) {
        let leases = self.leases.clone();
        let mut alive = |entry: Entry| live(entry, leases.get(&entry).copied().unwrap_or(0));
        let record = &mut self.record;
        if record
            .writer
            .as_ref()
            .is_some_and(|w| !alive((Kind::Write, w.owner)))
        {
            record.writer = None;
        }
        record.readers.retain(|r| alive((Kind::Read, r.owner)));
        if record
            .intent
            .as_ref()
            .is_some_and(|i| !alive((Kind::Intent, i.owner)))
        {
            record.intent = None;
        }
        let kept: Vec<Entry> = self.entries().into_iter().map(|(e, _)| e).collect();
        self.leases.retain(|entry, _| kept.contains(entry));
    }

    /// Runs the kit's rules `decide` on the record at `now` with no entry judged by time
    /// (their liveness is etcd's, already pruned): every expiry is set past any `now`
    /// while `decide` runs, and each one `decide` left alone is put back as it was.
    pub(crate) fn judge<T>(&mut self, decide: impl FnOnce(&mut Record) -> T) -> T {
        const NEVER: Micros = Micros(u64::MAX);
        let record = &mut self.record;
        let holds: Vec<(OwnerToken, u64, Micros)> = record
            .writer
            .iter()
            .chain(&record.readers)
            .map(|h| (h.owner, h.token, h.expires))
            .collect();
        let intent = record.intent.as_ref().map(|i| (i.owner, i.expires));
        for hold in record.writer.iter_mut().chain(record.readers.iter_mut()) {
            hold.expires = NEVER;
        }
        if let Some(intent) = &mut record.intent {
            intent.expires = NEVER;
        }
        let answer = decide(record);
        for hold in record.writer.iter_mut().chain(record.readers.iter_mut()) {
            if hold.expires == NEVER
                && let Some((_, _, was)) = holds
                    .iter()
                    .find(|(owner, token, _)| *owner == hold.owner && *token == hold.token)
            {
                hold.expires = *was;
            }
        }
        if let Some(i) = &mut record.intent
            && i.expires == NEVER
            && let Some((_, was)) = intent.filter(|(owner, _)| *owner == i.owner)
        {
            i.expires = was;
        }
        answer
    }
}

/// The stored form of `stored`.
pub(crate) fn encode(stored: &Stored) -> Vec<u8> {
    let record = &stored.record;
    let lease =
        |kind: Kind, owner: OwnerToken| stored.leases.get(&(kind, owner)).copied().unwrap_or(0);
    let mut text = format!("{VERSION} {}\n", record.counter);
    let mut holder = |kind: Kind, h: &SharedHolder<Micros>| {
        let _ = writeln!(
            text,
            "{} {} {} {} {} {} {} {} {}",
            kind.letter(),
            h.token,
            h.acquired.0,
            h.expires.0,
            u8::from(h.released),
            lease(kind, h.owner),
            h.owner,
            h.node.len(),
            h.node
        );
    };
    if let Some(writer) = &record.writer {
        holder(Kind::Write, writer);
    }
    for reader in &record.readers {
        holder(Kind::Read, reader);
    }
    if let Some(intent) = &record.intent {
        let _ = writeln!(
            text,
            "i {} {} {} {} {}",
            intent.expires.0,
            lease(Kind::Intent, intent.owner),
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
pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<Stored, OpError> {
    let corrupt = |problem| OpError::corrupt(key, problem);
    let mut text = std::str::from_utf8(value).map_err(|_| corrupt("not UTF-8"))?;
    let header = line(&mut text).ok_or_else(|| corrupt("no header line"))?;
    let counter = header
        .strip_prefix(VERSION)
        .and_then(|rest| rest.strip_prefix(' '))
        .and_then(|count| count.parse::<u64>().ok())
        .ok_or_else(|| corrupt("not a read/write lock record of this backend"))?;
    let mut stored = Stored {
        record: Record {
            counter,
            ..Record::default()
        },
        leases: HashMap::new(),
    };
    let record = &mut stored.record;
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
                let lease = lease_id(&mut text).ok_or_else(|| corrupt("no etcd lease"))?;
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
                let entry = if kind == "r" {
                    if record.readers.iter().any(|r| r.owner == owner) {
                        return Err(corrupt("two readers of one owner"));
                    }
                    record.readers.push(holder);
                    (Kind::Read, owner)
                } else if record.writer.replace(holder).is_some() {
                    return Err(corrupt("two writers"));
                } else {
                    (Kind::Write, owner)
                };
                stored.leases.insert(entry, lease);
            }
            "i" => {
                let expires = number(&mut text).ok_or_else(|| corrupt("no expiry time"))?;
                let lease = lease_id(&mut text).ok_or_else(|| corrupt("no etcd lease"))?;
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
                stored.leases.insert((Kind::Intent, owner), lease);
            }
            _ => return Err(corrupt("an entry of an unknown kind")),
        }
    }
    Ok(stored)
}

/// An etcd lease id: a positive number.
fn lease_id(text: &mut &str) -> Option<i64> {
    number(text)
        .and_then(|id| i64::try_from(id).ok())
        .filter(|id| *id > 0)
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
    use leader_core::kit::SharedAsk;

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
        let mut stored = Stored {
            leases: HashMap::new(),
            record,
        };
        for (at, (entry, _)) in stored.entries().into_iter().enumerate() {
            stored.leases.insert(entry, 1000 + at as i64);
        }
        assert_eq!(decode(b"k", &encode(&stored)).ok(), Some(stored));
        let empty = Stored {
            record: Record {
                counter: 42,
                ..Record::default()
            },
            leases: HashMap::new(),
        };
        assert_eq!(decode(b"k", &encode(&empty)).ok(), Some(empty));
    }

    #[test]
    fn values_of_another_shape_are_corrupt() {
        let owner = OwnerToken::random();
        for value in [
            String::new(),
            "hello".to_owned(),
            "v2 x\n".to_owned(),
            "v1 1\n".to_owned(),
            "v2 1".to_owned(),
            format!("v2 9\nr 1 2 3 0 4 {owner} 5 abc\n"),
            format!("v2 9\nr 1 2 3 2 4 {owner} 1 a\n"),
            format!("v2 9\nr 10 2 3 0 4 {owner} 1 a\n"),
            format!("v2 9\nq 1 2 3 0 4 {owner} 1 a\n"),
            format!("v2 9\nr 1 2 3 0 0 {owner} 1 a\n"),
            format!("v2 9\nr 1 2 3 0 {owner} 1 a\n"),
            format!("v2 9\nr 1 2 3 0 4 {owner} 1 a\nr 2 2 3 0 5 {owner} 1 b\n"),
            format!("v2 9\nw 1 2 3 0 4 {owner} 1 a\nw 2 2 3 0 5 {owner} 1 b\n"),
            "v2 9\nr 1 2 3 0 4 nothex 1 a\n".to_owned(),
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
    fn the_rules_judge_no_entry_by_time_and_dead_entries_are_pruned() {
        let (a, b) = (holder(3, "a", false), holder(5, "b", false));
        let mut stored = Stored {
            record: Record {
                counter: 5,
                readers: vec![a.clone(), b.clone()],
                ..Record::default()
            },
            leases: HashMap::from([((Kind::Read, a.owner), 11), ((Kind::Read, b.owner), 12)]),
        };
        // Long past the readers' recorded expiry, on this clock: they hold all the same.
        let late = Micros(u64::MAX / 2);
        let queued = stored.judge(|record| {
            record.acquire(
                SharedAsk {
                    role: leader_core::Role::Write,
                    owner: OwnerToken::random(),
                    node: "w",
                    expires: late,
                    max_readers: 10,
                    token_floor: 0,
                },
                late,
            )
        });
        assert!(matches!(queued, leader_core::kit::SharedAnswer::Queued));
        assert_eq!(
            stored.record.readers,
            vec![a.clone(), b.clone()],
            "times kept"
        );
        stored.prune_dead(|(_, owner), lease| owner == b.owner && lease == 12);
        assert_eq!(stored.record.readers, vec![b.clone()]);
        assert!(stored.record.intent.is_none(), "the intent had no lease");
        assert_eq!(stored.leases.len(), 1);
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
