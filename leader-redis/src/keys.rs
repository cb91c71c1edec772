//! Key and channel names.
//!
//! A lock `name` lives in two keys that share one cluster slot through the hash tag
//! `{name}` (lock names never contain braces):
//! - `{prefix}:{name}`: a hash (owner, leader, fence, acq, exp, sacq) with a `PX` expiry;
//! - `{prefix}:{name}:fence`: the fencing counter, which never expires.
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
        let lock = format!("{prefix}:{{{name}}}");
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
}
