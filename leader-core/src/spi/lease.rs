//! What an acquisition holds: the [`Lease`] and its random [`OwnerToken`].

use std::fmt;
use std::str::FromStr;
use std::time::SystemTime;

use crate::name::LockName;

/// A 128-bit random token that identifies one acquisition.
///
/// It comes from rand's thread-local generator (ChaCha, seeded from the OS random source),
/// so it is unpredictable and unique per acquisition — and per process: after a `fork()`
/// the child's generator is reseeded before its first token, so a pre-fork server never
/// hands out its parent's tokens. (A deterministic simulator can seed the thread's tokens
/// through the hidden `__private` engine; that makes them predictable, so it is for
/// simulators and tests only.) Ownership checks in every backend
/// compare this token, never the node id: two electors on one node are different owners.
///
/// `Debug` shows only its first 8 hex digits; `Display` shows all 32 (backends store that).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerToken(u128);

impl OwnerToken {
    /// A fresh random token.
    pub fn random() -> Self {
        OwnerToken(crate::spi::token_source::next_token())
    }

    /// The token's bits.
    pub fn as_u128(self) -> u128 {
        self.0
    }

    /// A token from its bits (for backends decoding a stored token).
    pub fn from_u128(bits: u128) -> Self {
        OwnerToken(bits)
    }

    /// The 32 lowercase ASCII hex digits of its `Display`, as bytes: what a backend
    /// writes into a request it sends on every call, without a formatter or a `String`.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::OwnerToken;
    ///
    /// let token = OwnerToken::from_u128(0xfeed);
    /// assert_eq!(token.hex().as_slice(), token.to_string().as_bytes());
    /// assert_eq!(&token.hex()[28..], b"feed");
    /// ```
    pub fn hex(self) -> [u8; 32] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 32];
        for (pair, byte) in hex.chunks_exact_mut(2).zip(self.0.to_be_bytes()) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0xf)];
        }
        hex
    }
}

impl fmt::Display for OwnerToken {
    /// The 32 lowercase hex digits ([`hex`](OwnerToken::hex)): `{:032x}` costs several
    /// times as much (padding, and the formatter's machinery digit by digit).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        // Every byte is an ASCII hex digit.
        let text = std::str::from_utf8(&hex).map_err(|_| fmt::Error)?;
        f.pad(text)
    }
}

impl fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerToken({:08x}…)", self.0 >> 96)
    }
}

/// Why a string is not an owner token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an owner token: expected 32 hex digits")]
pub struct ParseOwnerTokenError;

impl FromStr for OwnerToken {
    type Err = ParseOwnerTokenError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ParseOwnerTokenError);
        }
        u128::from_str_radix(s, 16)
            .map(OwnerToken)
            .map_err(|_| ParseOwnerTokenError)
    }
}

/// A held acquisition of a lock.
///
/// Backends return it from `try_acquire`; electors pass it back to `extend` and `release`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lease {
    /// The full lock key (tenant prefix included).
    pub key: LockName,
    /// The acquisition's owner token.
    pub owner: OwnerToken,
    /// The holder's node id.
    pub leader_id: String,
    /// The acquisition's fencing token.
    pub fencing_token: u64,
    /// When the lock was acquired (backend or node clock, per `use_db_time`).
    pub acquired_at: SystemTime,
    /// When the lease runs out unless renewed (same clock as `acquired_at`).
    pub expires_at: SystemTime,
}

impl Lease {
    /// A lease record.
    pub fn new(
        key: LockName,
        owner: OwnerToken,
        leader_id: impl Into<String>,
        fencing_token: u64,
        acquired_at: SystemTime,
        expires_at: SystemTime,
    ) -> Self {
        Lease {
            key,
            owner,
            leader_id: leader_id.into(),
            fencing_token,
            acquired_at,
            expires_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique_and_round_trip_through_hex() {
        let a = OwnerToken::random();
        let b = OwnerToken::random();
        assert_ne!(a, b);
        let hex = a.to_string();
        assert_eq!(hex.len(), 32);
        assert_eq!(hex.parse::<OwnerToken>(), Ok(a));
        assert_eq!("xyz".parse::<OwnerToken>(), Err(ParseOwnerTokenError));
        assert_eq!(
            "+".repeat(32).parse::<OwnerToken>(),
            Err(ParseOwnerTokenError)
        );
        assert!(!format!("{a:?}").contains(&hex));
    }

    #[test]
    fn display_is_the_32_digit_lowercase_hex_of_the_bits() {
        let bits = [
            0,
            1,
            0xf,
            0xdead_beef,
            1 << 127,
            u128::MAX,
            OwnerToken::random().as_u128(),
        ];
        for bits in bits {
            let token = OwnerToken::from_u128(bits);
            assert_eq!(token.to_string(), format!("{bits:032x}"));
        }
        // A width and fill still apply, as for any string.
        assert_eq!(
            format!("{:>34}", OwnerToken::from_u128(1)),
            format!("  {:032x}", 1)
        );
    }
}
