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
//! Releases are announced on the channel `{prefix}:released` with the lock name as message.

use leader_core::LockName;

/// The Redis keys of one lock: the lock's own key, built at its exact size, and the keys
/// beside it (fence counter, record) each built when an operation asks for it, so a call
/// pays only for the keys its script takes (a release, one). The index of derived names
/// is its group's ([`index_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockKeys {
    /// The lock hash.
    pub(crate) lock: String,
}

impl LockKeys {
    pub(crate) fn new(prefix: &str, name: &LockName) -> Self {
        let lock = match split(name) {
            (group, Some(rest)) => {
                let mut separator = [0; 4];
                let separator = LockName::DERIVED_SEPARATOR.encode_utf8(&mut separator);
                concat(&[prefix, ":{", group, "}", separator, rest])
            }
            (group, None) => concat(&[prefix, ":{", group, "}"]),
        };
        LockKeys { lock }
    }

    /// The fencing counter: `lock` then `:fence`.
    pub(crate) fn fence(&self) -> String {
        concat(&[&self.lock, ":fence"])
    }

    /// The record of the same name: `lock` then `:record`.
    pub(crate) fn record(&self) -> String {
        concat(&[&self.lock, ":record"])
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
pub(crate) fn index_key(prefix: &str, group: &str) -> String {
    concat(&[prefix, ":{", group, "}:derived"])
}

/// The index a lock of `name` is listed in when it is a derived name: its group's, the
/// name up to `#` (see the module docs).
pub(crate) fn index_of(prefix: &str, name: &LockName) -> String {
    index_key(prefix, split(name).0)
}

/// What the lock keys of `group`'s derived names start with: `{prefix}:{<group>}#`.
pub(crate) fn derived_head(prefix: &str, group: &str) -> String {
    let mut separator = [0; 4];
    let separator = LockName::DERIVED_SEPARATOR.encode_utf8(&mut separator);
    concat(&[prefix, ":{", group, "}", separator])
}

/// The channel releases are published on.
pub(crate) fn release_channel(prefix: &str) -> String {
    format!("{prefix}:released")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_keys_share_the_hash_tag() {
        let keys = LockKeys::new("leader", &LockName::new("tenant:acme:sync").unwrap());
        assert_eq!(keys.lock, "leader:{tenant:acme:sync}");
        assert_eq!(keys.fence(), "leader:{tenant:acme:sync}:fence");
        assert_eq!(
            index_key("leader", "tenant:acme:sync"),
            "leader:{tenant:acme:sync}:derived"
        );
        assert_eq!(keys.record(), "leader:{tenant:acme:sync}:record");
        assert_eq!(release_channel("leader"), "leader:released");
    }

    #[test]
    fn a_groups_slots_keep_the_groups_hash_tag() {
        let slot = LockKeys::new("leader", &LockName::new("tenant:acme:consumers#2").unwrap());
        assert_eq!(slot.lock, "leader:{tenant:acme:consumers}#2");
        assert_eq!(slot.fence(), "leader:{tenant:acme:consumers}#2:fence");
        let index = index_of("leader", &LockName::new("tenant:acme:consumers#2").unwrap());
        assert_eq!(index, "leader:{tenant:acme:consumers}:derived");
        assert!(
            slot.lock
                .starts_with(&derived_head("leader", "tenant:acme:consumers"))
        );
        let group = LockKeys::new("leader", &LockName::new("tenant:acme:consumers").unwrap());
        // Redis Cluster hashes what the first `{...}` holds.
        let tag = |key: &str| {
            key.split_once('{')
                .and_then(|(_, r)| r.split_once('}'))
                .map(|t| t.0.to_owned())
        };
        assert_eq!(tag(&slot.lock), tag(&group.lock));
        assert_eq!(tag(&slot.fence()), tag(&group.fence()));
        assert_eq!(tag(&index), tag(&group.lock));
        assert_eq!(slot.record(), "leader:{tenant:acme:consumers}#2:record");
        assert_eq!(tag(&slot.record()), tag(&group.lock));
    }
}
