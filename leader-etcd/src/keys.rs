//! Where a lock lives in etcd: three keys under the configured prefix; and a record, a
//! fourth kind of key beside them.
//!
//! | key | value | etcd lease |
//! |---|---|---|
//! | `{prefix}/lock/{name}` | the owner token (32 hex digits), compared by every ownership check | the holder's |
//! | `{prefix}/holder/{name}` | the [`HolderRecord`](crate::record::HolderRecord): fencing token, times, node id | the holder's |
//! | `{prefix}/fence/{name}` | the last fencing token handed out, 20 zero-padded digits | none: it never expires |
//! | `{prefix}/record/{name}` | the record of that name (no lock's): its value; its version is the key's etcd `version` | none: it never expires |
//! | `{prefix}/shared/{name}` | the read/write lock `name`: its whole [record](crate::shared) (counter, writer, readers, intent, each entry's etcd lease) | none: it never expires |
//! | `{prefix}/shared-live/{name}/{owner}/{r\|w\|i}` | empty: a hold (reader, writer) or a waiting writer's intent of the read/write lock `name` is live while it exists on the lease its record names | that entry's |
//! | `{prefix}/void/{lease}` | empty: the etcd lease `lease` (16 hex digits) is void, no transaction may put a lock on it any more | that lease |
//!
//! The lock and holder keys are written and deleted together, in one transaction, and
//! hang on the same etcd lease, so they expire together. Listing pages through the holder
//! keys; release notifications watch the holder keys; no lock operation reads or writes a
//! record key. A void key is written only for a lease whose call was cut before its
//! transaction answered, just before that lease is revoked (which deletes it).

use leader_core::{LockName, OwnerToken};

/// The key layout under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    lock: String,
    holder: String,
    fence: String,
    record: String,
    void: String,
    shared: String,
    shared_live: String,
}

impl Keys {
    /// The layout under `prefix` (the `prefix` of [`EtcdConfig`](crate::EtcdConfig)).
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            lock: format!("{prefix}/lock/"),
            holder: format!("{prefix}/holder/"),
            fence: format!("{prefix}/fence/"),
            record: format!("{prefix}/record/"),
            void: format!("{prefix}/void/"),
            shared: format!("{prefix}/shared/"),
            shared_live: format!("{prefix}/shared-live/"),
        }
    }

    /// The key holding `name`'s owner token.
    pub(crate) fn lock(&self, name: &str) -> Vec<u8> {
        join(&self.lock, name)
    }

    /// The key holding `name`'s holder record.
    pub(crate) fn holder(&self, name: &str) -> Vec<u8> {
        join(&self.holder, name)
    }

    /// The key holding `name`'s last fencing token.
    pub(crate) fn fence(&self, name: &str) -> Vec<u8> {
        join(&self.fence, name)
    }

    /// The key holding the record `name` (apart from any lock of that name).
    pub(crate) fn record(&self, name: &str) -> Vec<u8> {
        join(&self.record, name)
    }

    /// The key holding the read/write lock `name`'s whole record (apart from the exclusive
    /// lock and the record of that name; see [`shared`](crate::shared)).
    pub(crate) fn shared(&self, name: &str) -> Vec<u8> {
        join(&self.shared, name)
    }

    /// The liveness key of `owner`'s entry `kind` (`r`, `w` or `i`) in the read/write lock
    /// `name`: under [`shared_live_of`](Self::shared_live_of)`(name)`.
    pub(crate) fn shared_live(&self, name: &str, owner: OwnerToken, kind: char) -> Vec<u8> {
        let mut key = self.shared_live_of(name);
        key.extend_from_slice(format!("{owner}/{kind}").as_bytes());
        key
    }

    /// The prefix of the liveness keys of the read/write lock `name` (a name that extends
    /// `name` past a `/` shares it: its keys are told apart by their full path).
    pub(crate) fn shared_live_of(&self, name: &str) -> Vec<u8> {
        let mut key = join(&self.shared_live, name);
        key.push(b'/');
        key
    }

    /// The key that marks the etcd lease `lease` void (see
    /// [`Grant`](crate::lease::Grant)): every transaction that puts a lock on `lease`
    /// holds only while this key does not exist.
    pub(crate) fn void(&self, lease: i64) -> Vec<u8> {
        format!("{}{lease:016x}", self.void).into_bytes()
    }

    /// The start of every lock key (what `storage_key` names).
    pub(crate) fn lock_prefix(&self) -> &str {
        &self.lock
    }

    /// The start of every holder key (what listing pages through and release
    /// notifications watch).
    pub(crate) fn holder_prefix(&self) -> &str {
        &self.holder
    }

    /// The start of every read/write lock key (release notifications watch them too).
    pub(crate) fn shared_prefix(&self) -> &str {
        &self.shared
    }

    /// The lock name of a read/write lock key, if it is one of this layout's and a valid
    /// name.
    pub(crate) fn name_of_shared(&self, key: &[u8]) -> Option<LockName> {
        name_after(&self.shared, key)
    }

    /// The lock name of a holder key, if it is one of this layout's and a valid name.
    pub(crate) fn name_of_holder(&self, key: &[u8]) -> Option<LockName> {
        name_after(&self.holder, key)
    }
}

fn join(prefix: &str, name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + name.len());
    key.extend_from_slice(prefix.as_bytes());
    key.extend_from_slice(name.as_bytes());
    key
}

fn name_after(prefix: &str, key: &[u8]) -> Option<LockName> {
    let name = key.strip_prefix(prefix.as_bytes())?;
    LockName::new(std::str::from_utf8(name).ok()?).ok()
}

/// The first key after every key that starts with `prefix` (etcd's `range_end` for a
/// prefix): the prefix with its last byte below `0xff` incremented and the rest dropped;
/// `[0]` (every key) when there is none.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lock_has_three_keys_under_the_prefix() {
        let keys = Keys::new("leader");
        assert_eq!(keys.lock("nightly"), b"leader/lock/nightly");
        assert_eq!(keys.holder("nightly"), b"leader/holder/nightly");
        assert_eq!(keys.fence("nightly"), b"leader/fence/nightly");
        assert_eq!(keys.record("nightly"), b"leader/record/nightly");
        assert_eq!(keys.shared("nightly"), b"leader/shared/nightly");
        assert_eq!(keys.name_of_holder(b"leader/shared/nightly"), None);
        assert_eq!(
            keys.name_of_shared(b"leader/shared/nightly")
                .map(|n| n.to_string()),
            Some("nightly".to_owned())
        );
        assert_eq!(keys.name_of_shared(b"leader/holder/nightly"), None);
        assert_eq!(keys.void(0x2a), b"leader/void/000000000000002a");
        assert_eq!(keys.name_of_holder(b"leader/record/nightly"), None);
        assert_eq!(
            keys.name_of_holder(b"leader/holder/nightly")
                .map(|n| n.to_string()),
            Some("nightly".to_owned())
        );
        assert_eq!(keys.name_of_holder(b"leader/lock/nightly"), None);
        assert_eq!(keys.name_of_holder(b"other/holder/x"), None);
    }

    #[test]
    fn a_prefix_ends_at_its_last_byte_plus_one() {
        assert_eq!(prefix_end(b"leader/holder/"), b"leader/holder0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }
}
