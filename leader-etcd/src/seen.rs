//! [`Seen`]: the last value of each read/write lock key this backend read or wrote, with
//! its etcd `mod_revision`, so that the next call on that lock can be one transaction that
//! holds only while the key is unchanged (see the crate docs, "Read/write locks").
//!
//! A stale entry costs one more round trip (the transaction's `else` branch reads the key,
//! and the call decides again on what it read), never a wrong answer: the compare is
//! etcd's. The map is bounded: when it is full it is emptied (a lock not seen since costs
//! one more round trip on its next call).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How many locks are remembered at most.
const CAPACITY: usize = 1024;

/// A key's value as last seen, and its `mod_revision` (0: the key did not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    pub(crate) mod_revision: i64,
    pub(crate) value: Option<Vec<u8>>,
}

impl Version {
    /// A key that does not exist.
    pub(crate) const ABSENT: Version = Version {
        mod_revision: 0,
        value: None,
    };
}

/// The versions seen, shared by a backend's clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen(Arc<Mutex<HashMap<Vec<u8>, Version>>>);

impl Seen {
    /// What was last seen at `key` (a key never seen is guessed absent: a new lock's first
    /// call is then one transaction too).
    pub(crate) fn get(&self, key: &[u8]) -> Version {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(key).cloned().unwrap_or(Version::ABSENT)
    }

    /// Remembers `version` of `key`, unless a later one is known already (calls on one
    /// lock may answer out of order).
    pub(crate) fn saw(&self, key: &[u8], version: Version) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map
            .get(key)
            .is_some_and(|known| known.mod_revision > version.mod_revision)
        {
            return;
        }
        if map.len() >= CAPACITY && !map.contains_key(key) {
            map.clear();
        }
        map.insert(key.to_vec(), version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(rev: i64) -> Version {
        Version {
            mod_revision: rev,
            value: Some(vec![b'x']),
        }
    }

    #[test]
    fn a_later_version_is_never_replaced_by_an_earlier_one() {
        let seen = Seen::default();
        assert_eq!(seen.get(b"k"), Version::ABSENT);
        seen.saw(b"k", version(5));
        seen.saw(b"k", version(3));
        assert_eq!(seen.get(b"k"), version(5));
        seen.saw(b"k", version(8));
        assert_eq!(seen.get(b"k"), version(8));
    }

    #[test]
    fn the_map_stays_bounded() {
        let seen = Seen::default();
        for i in 0..=CAPACITY {
            seen.saw(format!("k{i}").as_bytes(), version(1));
        }
        let len = seen.0.lock().unwrap().len();
        assert!(len <= CAPACITY, "{len}");
        assert_eq!(seen.get(format!("k{CAPACITY}").as_bytes()), version(1));
    }
}
