//! Key and channel names.
//!
//! A lock `name` lives in two keys that share one cluster slot through the hash tag
//! `{name}` (lock names never contain braces):
//! - `{prefix}:{name}`: a hash (owner, leader, fence, acq, exp, sacq) with a `PX` expiry;
//! - `{prefix}:{name}:fence`: the fencing counter, which never expires.
//!
//! A derived name `name#rest` (slot `rest` of the leader group `name`, or a ranked
//! candidate's record; callers' names never contain `#`) keeps its group's hash tag:
//! `{prefix}:{name}#rest` and `{prefix}:{name}#rest:fence`. All the slots of a group are
//! then in one cluster slot, where one script can try them all. A derived name never ends
//! in `:fence`, so the two kinds of keys stay apart.
//!
//! The derived names of `name` that are held are indexed in `{prefix}:{name}:derived`, a
//! sorted set of their `rest`s (score 0: ordered by name), in the same cluster slot:
//! acquire adds the lock it takes or renews, and a listing of a prefix inside `name#`
//! reads it (and removes the members whose lock is gone) instead of scanning the
//! keyspace. No lock key has `:` right after its hash tag but the fence counter's
//! `:fence`, so the index never collides with a lock.
//!
//! A record of the name (the scheduler's compare-and-set register, apart from the lock)
//! is the hash `{prefix}:{name}:record` (`version`, `value`; no expiry), or
//! `{prefix}:{name}#rest:record` for a derived name: the lock's key with `:record`
//! appended, in the lock's cluster slot. A listing leaves these keys out, and no lock
//! script touches them.
//!
//! A read/write lock of the name (apart from the exclusive lock and the record of the
//! same name) is the string `{prefix}:rw{name}` (its whole record, JSON, with a `PX`
//! expiry at its latest live hold) and its fencing counter `{prefix}:rw{name}:fence`
//! (never expires), in the same cluster slot (`{name}` is still the first hash tag).
//! No key of an exclusive lock, whatever its prefix (prefixes hold no braces), has a
//! character other than `:` right before its first `{`, so no listing's `SCAN MATCH
//! {prefix}:{...` ever matches these keys, nor does a lock key of another prefix equal
//! one of them.
//!
//! Releases are announced on the channel `{prefix}:released` with the lock name as message.

use std::io::Write;

use leader_core::LockName;
use redis::{RedisWrite, ToRedisArgs};

use crate::ops::write_arg;

/// The Redis keys of one lock, borrowed from its prefix and name. Each key is a [`Key`]:
/// written straight into the script call that sends it, with no string of its own, or
/// made a `String` where one is kept (an error's key). The index of derived names is its
/// group's ([`index_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LockKeys<'a> {
    prefix: &'a str,
    /// The name up to `#`, or all of it: the hash tag.
    group: &'a str,
    /// The name after `#`, for a derived name.
    rest: Option<&'a str>,
}

impl<'a> LockKeys<'a> {
    pub(crate) fn new(prefix: &'a str, name: &'a LockName) -> Self {
        let (group, rest) = split(name);
        LockKeys {
            prefix,
            group,
            rest,
        }
    }

    /// The lock hash.
    pub(crate) fn lock(self) -> Key<'a> {
        Key {
            keys: self,
            head: LOCK_HEAD,
            suffix: "",
        }
    }

    /// The fencing counter: the lock's key then `:fence`.
    pub(crate) fn fence(self) -> Key<'a> {
        Key {
            keys: self,
            head: LOCK_HEAD,
            suffix: ":fence",
        }
    }

    /// The record of the same name: the lock's key then `:record`.
    pub(crate) fn record(self) -> Key<'a> {
        Key {
            keys: self,
            head: LOCK_HEAD,
            suffix: ":record",
        }
    }

    /// The read/write lock of the same name: `{prefix}:rw{<name>}` (see the module docs).
    pub(crate) fn shared(self) -> Key<'a> {
        Key {
            keys: self,
            head: SHARED_HEAD,
            suffix: "",
        }
    }

    /// The read/write lock's fencing counter: its key then `:fence`.
    pub(crate) fn shared_fence(self) -> Key<'a> {
        Key {
            keys: self,
            head: SHARED_HEAD,
            suffix: ":fence",
        }
    }
}

/// What follows the prefix in an exclusive lock's keys, up to the name.
const LOCK_HEAD: &str = ":{";
/// What follows the prefix in a read/write lock's keys, up to the name: not `:{`, so that
/// no listing pattern matches them (see the module docs).
const SHARED_HEAD: &str = ":rw{";

/// One key, as the parts it is made of: `{prefix}:{<group>}` (`{prefix}:rw{<group>}` for
/// a read/write lock), then `#rest` for a derived name, then its suffix. Written into a call as one argument ([`ToRedisArgs`]), or made
/// a `String` (`String::from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key<'a> {
    keys: LockKeys<'a>,
    /// [`LOCK_HEAD`] or [`SHARED_HEAD`].
    head: &'static str,
    suffix: &'static str,
}

impl Key<'_> {
    /// The parts, end to end (empty ones where the key has no `#rest`).
    fn parts(&self) -> [&str; 7] {
        let LockKeys {
            prefix,
            group,
            rest,
        } = self.keys;
        let (separator, rest) = match rest {
            Some(rest) => (DERIVED_SEPARATOR, rest),
            None => ("", ""),
        };
        [prefix, self.head, group, "}", separator, rest, self.suffix]
    }
}

/// [`LockName::DERIVED_SEPARATOR`] as text.
const DERIVED_SEPARATOR: &str = "#";
const _: () = assert!(LockName::DERIVED_SEPARATOR == '#');

impl From<Key<'_>> for String {
    /// The key in one allocation of its exact size.
    fn from(key: Key<'_>) -> String {
        concat(&key.parts())
    }
}

impl ToRedisArgs for Key<'_> {
    /// One argument: its parts put end to end on the stack, then written into the call
    /// (a key too long for the stack buffer is made a `String` first).
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + RedisWrite,
    {
        write_arg(out, |buffer| {
            // A key without `#rest` or suffix has empty parts: each copy is a call.
            self.parts()
                .iter()
                .filter(|part| !part.is_empty())
                .try_for_each(|part| buffer.write_all(part.as_bytes()))
        })
        .unwrap_or_else(|_| out.write_arg(String::from(*self).as_bytes()));
    }
}

/// A name's group (the name up to `#`, or all of it) and the rest after `#`, if any.
fn split(name: &LockName) -> (&str, Option<&str>) {
    match name.as_str().split_once(LockName::DERIVED_SEPARATOR) {
        Some((group, rest)) => (group, Some(rest)),
        None => (name.as_str(), None),
    }
}

/// `parts` end to end, in one allocation of the key's exact size.
fn concat(parts: &[&str]) -> String {
    let mut key = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        key.push_str(part);
    }
    key
}

/// The index of the derived names of `group` (see the module docs).
fn index<'a>(prefix: &'a str, group: &'a str) -> Key<'a> {
    Key {
        keys: LockKeys {
            prefix,
            group,
            rest: None,
        },
        head: LOCK_HEAD,
        suffix: ":derived",
    }
}

/// [`index`] as text, for a listing that keeps it.
pub(crate) fn index_key(prefix: &str, group: &str) -> String {
    index(prefix, group).into()
}

/// The index a lock of `name` is listed in when it is a derived name: its group's, the
/// name up to `#` (see the module docs).
pub(crate) fn index_of<'a>(prefix: &'a str, name: &'a LockName) -> Key<'a> {
    index(prefix, split(name).0)
}

/// What the lock keys of `group`'s derived names start with: `{prefix}:{<group>}#`.
pub(crate) fn derived_head(prefix: &str, group: &str) -> String {
    concat(&[prefix, ":{", group, "}", DERIVED_SEPARATOR])
}

/// The channel releases are published on.
pub(crate) fn release_channel(prefix: &str) -> String {
    format!("{prefix}:released")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(key: Key<'_>) -> String {
        String::from(key)
    }

    #[test]
    fn both_keys_share_the_hash_tag() {
        let name = LockName::new("tenant:acme:sync").unwrap();
        let keys = LockKeys::new("leader", &name);
        assert_eq!(text(keys.lock()), "leader:{tenant:acme:sync}");
        assert_eq!(text(keys.fence()), "leader:{tenant:acme:sync}:fence");
        assert_eq!(
            index_key("leader", "tenant:acme:sync"),
            "leader:{tenant:acme:sync}:derived"
        );
        assert_eq!(
            text(index_of("leader", &name)),
            index_key("leader", "tenant:acme:sync")
        );
        assert_eq!(text(keys.record()), "leader:{tenant:acme:sync}:record");
        assert_eq!(release_channel("leader"), "leader:released");
    }

    #[test]
    fn a_groups_slots_keep_the_groups_hash_tag() {
        let name = LockName::new("tenant:acme:consumers#2").unwrap();
        let slot = LockKeys::new("leader", &name);
        assert_eq!(text(slot.lock()), "leader:{tenant:acme:consumers}#2");
        assert_eq!(text(slot.fence()), "leader:{tenant:acme:consumers}#2:fence");
        let index = text(index_of("leader", &name));
        assert_eq!(index, "leader:{tenant:acme:consumers}:derived");
        assert!(text(slot.lock()).starts_with(&derived_head("leader", "tenant:acme:consumers")));
        let group_name = LockName::new("tenant:acme:consumers").unwrap();
        let group = LockKeys::new("leader", &group_name);
        // Redis Cluster hashes what the first `{...}` holds.
        let tag = |key: Key<'_>| {
            let key = text(key);
            key.split_once('{')
                .and_then(|(_, r)| r.split_once('}'))
                .map(|t| t.0.to_owned())
        };
        assert_eq!(tag(slot.lock()), tag(group.lock()));
        assert_eq!(tag(slot.fence()), tag(group.fence()));
        assert_eq!(tag(index_of("leader", &name)), tag(group.lock()));
        assert_eq!(
            text(slot.record()),
            "leader:{tenant:acme:consumers}#2:record"
        );
        assert_eq!(tag(slot.record()), tag(group.lock()));
    }

    #[test]
    fn a_read_write_lock_has_keys_of_its_own_in_the_names_slot_that_no_listing_matches() {
        let name = LockName::new("tenant:acme:sync").unwrap();
        let keys = LockKeys::new("leader", &name);
        assert_eq!(text(keys.shared()), "leader:rw{tenant:acme:sync}");
        assert_eq!(
            text(keys.shared_fence()),
            "leader:rw{tenant:acme:sync}:fence"
        );
        let slot = LockName::new("jobs#2").unwrap();
        assert_eq!(
            text(LockKeys::new("leader", &slot).shared()),
            "leader:rw{jobs}#2"
        );
        // The same cluster slot as the exclusive lock of the name: Redis Cluster hashes
        // what lies between the first `{` and the first `}` after it.
        let tag = |key: Key<'_>| {
            let key = text(key);
            let (_, after) = key.split_once('{').unwrap();
            after.split_once('}').unwrap().0.to_owned()
        };
        assert_eq!(tag(keys.shared()), "tenant:acme:sync");
        assert_eq!(tag(keys.shared_fence()), tag(keys.lock()));
        // Neither this prefix's listing nor another's (`leader:rw`) matches them.
        for prefix in ["leader", "leader:rw", "leader:r"] {
            let glob = format!("{prefix}:{{");
            assert!(!text(keys.shared()).starts_with(&glob), "{glob}");
            assert!(!text(keys.shared_fence()).starts_with(&glob), "{glob}");
        }
    }

    #[test]
    fn a_key_is_one_argument_of_its_text() {
        let name = LockName::new("tenant:acme:consumers#2").unwrap();
        let keys = LockKeys::new("leader", &name);
        for key in [
            keys.lock(),
            keys.fence(),
            keys.record(),
            keys.shared(),
            keys.shared_fence(),
            index_of("leader", &name),
        ] {
            assert_eq!(key.to_redis_args(), [text(key).into_bytes()]);
        }
    }

    #[test]
    fn a_key_longer_than_the_stack_buffer_is_written_whole() {
        let name = LockName::new("n".repeat(LockName::MAX_LEN)).unwrap();
        let prefix = "p".repeat(400);
        let keys = LockKeys::new(&prefix, &name);
        let key = keys.fence();
        assert!(text(key).len() > 256);
        assert_eq!(key.to_redis_args(), [text(key).into_bytes()]);
    }
}
