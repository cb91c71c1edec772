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
//! Releases are announced on the channel `{prefix}:released` with the lock name as message.

use leader_core::LockName;

/// The Redis keys of one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockKeys {
    /// The lock hash.
    pub(crate) lock: String,
    /// The fencing counter.
    pub(crate) fence: String,
}

impl LockKeys {
    pub(crate) fn new(prefix: &str, name: &LockName) -> Self {
        let lock = match name.as_str().split_once(LockName::DERIVED_SEPARATOR) {
            Some((group, rest)) => {
                format!("{prefix}:{{{group}}}{}{rest}", LockName::DERIVED_SEPARATOR)
            }
            None => format!("{prefix}:{{{name}}}"),
        };
        let fence = format!("{lock}:fence");
        LockKeys { lock, fence }
    }
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
        assert_eq!(keys.fence, "leader:{tenant:acme:sync}:fence");
        assert_eq!(release_channel("leader"), "leader:released");
    }

    #[test]
    fn a_groups_slots_keep_the_groups_hash_tag() {
        let slot = LockKeys::new("leader", &LockName::new("tenant:acme:consumers#2").unwrap());
        assert_eq!(slot.lock, "leader:{tenant:acme:consumers}#2");
        assert_eq!(slot.fence, "leader:{tenant:acme:consumers}#2:fence");
        let group = LockKeys::new("leader", &LockName::new("tenant:acme:consumers").unwrap());
        // Redis Cluster hashes what the first `{...}` holds.
        let tag = |key: &str| {
            key.split_once('{')
                .and_then(|(_, r)| r.split_once('}'))
                .map(|t| t.0.to_owned())
        };
        assert_eq!(tag(&slot.lock), tag(&group.lock));
        assert_eq!(tag(&slot.fence), tag(&group.fence));
    }
}
