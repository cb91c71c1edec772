//! The values this backend stores: the owner token of a lock key, the holder
//! [`HolderRecord`], and the fencing counter; each written and read here only.

use std::time::SystemTime;

use leader_core::{LeaderLease, Lease, LockName, OwnerToken};

use crate::error::OpError;
use crate::time::{from_micros, micros};

/// The first word of every holder record: its format.
const VERSION: &str = "v1";

/// The holder of a lock as its holder key stores it:
/// `v1 <fencing token> <acquired µs> <expires µs> <owner> <node id>`, times on the
/// acquiring client's clock (etcd has none to read), the node id last so it may hold spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HolderRecord {
    pub(crate) fencing_token: u64,
    pub(crate) acquired_at: SystemTime,
    pub(crate) expires_at: SystemTime,
    pub(crate) owner: OwnerToken,
    pub(crate) leader_id: String,
}

impl HolderRecord {
    /// The stored form.
    pub(crate) fn encode(&self) -> Vec<u8> {
        format!(
            "{VERSION} {} {} {} {} {}",
            self.fencing_token,
            micros(self.acquired_at),
            micros(self.expires_at),
            self.owner,
            self.leader_id
        )
        .into_bytes()
    }

    /// Reads the value of the holder key `key`.
    ///
    /// # Errors
    ///
    /// [`OpError::Corrupt`] for a value this backend did not write.
    pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<Self, OpError> {
        let corrupt = |problem| OpError::corrupt(key, problem);
        let text = std::str::from_utf8(value).map_err(|_| corrupt("not UTF-8"))?;
        let mut words = text.splitn(6, ' ');
        if words.next() != Some(VERSION) {
            return Err(corrupt("not a holder record of this backend"));
        }
        let mut number = |what| {
            words
                .next()
                .and_then(|word| word.parse::<u64>().ok())
                .ok_or_else(|| corrupt(what))
        };
        let fencing_token = number("no fencing token")?;
        let acquired = number("no acquisition time")?;
        let expires = number("no expiry time")?;
        let time = |at| from_micros(at).ok_or_else(|| corrupt("a time out of range"));
        let (acquired_at, expires_at) = (time(acquired)?, time(expires)?);
        let owner = words
            .next()
            .and_then(|word| word.parse::<OwnerToken>().ok())
            .ok_or_else(|| corrupt("no owner token"))?;
        let leader_id = words.next().unwrap_or_default().to_owned();
        Ok(HolderRecord {
            fencing_token,
            acquired_at,
            expires_at,
            owner,
            leader_id,
        })
    }

    /// The holder as the SPI reports it.
    pub(crate) fn holder(&self) -> LeaderLease {
        LeaderLease::new(
            self.leader_id.clone(),
            self.acquired_at,
            self.expires_at,
            self.fencing_token,
        )
    }

    /// The lease of `key` it describes.
    pub(crate) fn lease(&self, key: LockName) -> Lease {
        Lease::new(
            key,
            self.owner,
            self.leader_id.clone(),
            self.fencing_token,
            self.acquired_at,
            self.expires_at,
        )
    }
}

/// The value of the lock key of a lock released but kept for its minimum lease: no
/// owner's token, so no owner renews or re-acquires it.
pub(crate) const RELEASED: &[u8] = b"released";

/// Whether `value` is one a lock key of this backend holds: an owner token, or
/// [`RELEASED`].
pub(crate) fn is_lock_value(value: &[u8]) -> bool {
    value == RELEASED
        || std::str::from_utf8(value).is_ok_and(|text| text.parse::<OwnerToken>().is_ok())
}

/// The value of a lock key: the owner token in hex.
pub(crate) fn owner_value(owner: OwnerToken) -> Vec<u8> {
    owner.to_string().into_bytes()
}

/// The fencing counter's stored form: 20 digits, zero-padded, so that etcd's byte-wise
/// comparison of values orders them as numbers.
pub(crate) fn fence_value(token: u64) -> Vec<u8> {
    format!("{token:020}").into_bytes()
}

/// Reads the fencing counter stored at `key`.
///
/// # Errors
///
/// [`OpError::Corrupt`] for anything but 20 digits.
pub(crate) fn decode_fence(key: &[u8], value: &[u8]) -> Result<u64, OpError> {
    std::str::from_utf8(value)
        .ok()
        .filter(|text| text.len() == 20 && text.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| OpError::corrupt(key, "not a fencing counter"))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn record() -> HolderRecord {
        HolderRecord {
            fencing_token: 1_764_000_000_000_001,
            acquired_at: UNIX_EPOCH + Duration::from_micros(1_764_000_000_000_000),
            expires_at: UNIX_EPOCH + Duration::from_micros(1_764_000_030_000_000),
            owner: OwnerToken::random(),
            leader_id: "node a (eu-1)".to_owned(),
        }
    }

    #[test]
    fn a_record_round_trips_node_ids_with_spaces_included() {
        let record = record();
        assert_eq!(
            HolderRecord::decode(b"k", &record.encode()).ok(),
            Some(record.clone())
        );
        let empty_id = HolderRecord {
            leader_id: String::new(),
            ..record
        };
        assert_eq!(
            HolderRecord::decode(b"k", &empty_id.encode()).ok(),
            Some(empty_id)
        );
    }

    #[test]
    fn values_of_another_shape_are_corrupt() {
        for value in [
            &b""[..],
            b"hello",
            b"v1 12",
            b"v1 x 1 2 00000000000000000000000000000000 n",
            b"v1 1 2 3 nothex n",
            b"v2 1 2 3 00000000000000000000000000000000 n",
            b"\xff\xfe",
        ] {
            assert!(
                matches!(
                    HolderRecord::decode(b"k", value),
                    Err(OpError::Corrupt { .. })
                ),
                "{value:?}"
            );
        }
    }

    #[test]
    fn fencing_counters_compare_as_bytes_in_number_order() {
        assert!(fence_value(9) < fence_value(10));
        assert!(fence_value(u64::MAX - 1) < fence_value(u64::MAX));
        assert_eq!(decode_fence(b"f", &fence_value(42)).ok(), Some(42));
        assert_eq!(
            decode_fence(b"f", &fence_value(u64::MAX)).ok(),
            Some(u64::MAX)
        );
        for value in [&b"42"[..], b"0000000000000000004x", b""] {
            assert!(decode_fence(b"f", value).is_err(), "{value:?}");
        }
    }
}
