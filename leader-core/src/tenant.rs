//! [`TenantId`]: a validated tenant id, [`IntoTenantId`] for the calls that take one, and
//! [`TenantIdError`] for an id that is not valid.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::name::{LockName, NameError};

/// The prefix of every tenant-scoped lock name: `tenant:<id>:<lock>`.
pub const TENANT_PREFIX: &str = LockName::TENANT_NAMESPACE;

/// Why a tenant id was rejected.
///
/// # Examples
///
/// ```
/// use leader_core::{TenantId, TenantIdError};
///
/// assert!(matches!(TenantId::new("acme:eu"), Err(TenantIdError::Colon { index: 4 })));
/// assert!(matches!(TenantId::new(""), Err(TenantIdError::Empty)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TenantIdError {
    /// The tenant id is empty.
    #[error("tenant id is empty")]
    Empty,
    /// The tenant id is longer than [`TenantId::MAX_LEN`] bytes.
    #[error("tenant id `{id}` is {len} bytes long; the limit is {max} bytes")]
    TooLong {
        /// The rejected id, cut to its first 64 characters.
        id: String,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The tenant id contains `:`, the separator of `tenant:<id>:<lock>`.
    #[error("tenant id contains ':' at byte {index}; ':' separates the tenant from the lock name")]
    Colon {
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id contains a control character.
    #[error("tenant id contains the control character {ch:?} at byte {index}")]
    ControlCharacter {
        /// The character.
        ch: char,
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id contains `{` or `}`, which are reserved for Redis Cluster hash tags.
    #[error("tenant id contains {ch:?} at byte {index}; braces are reserved for cluster hash tags")]
    Brace {
        /// The brace.
        ch: char,
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id contains `#`, which separates the names of group slots and ranked
    /// candidates from their lock's ([`LockName::DERIVED_SEPARATOR`]).
    #[error("tenant id contains '#' at byte {index}; '#' is reserved for derived lock names")]
    Hash {
        /// Its byte offset in the id.
        index: usize,
    },
    /// The tenant id starts or ends with whitespace (or is only whitespace): `"acme"` and
    /// `"acme "` from a tenant list would otherwise be two tenants.
    #[error("tenant id {id:?} starts or ends with whitespace; trim it")]
    SurroundingWhitespace {
        /// The rejected id, cut to its first 64 characters.
        id: String,
    },
}

/// A validated tenant id.
///
/// Rules: not empty, at most [`TenantId::MAX_LEN`] bytes, no `:` (it separates the tenant
/// from the lock name, so `a:b` + `c` can never collide with `a` + `b:c`), no control
/// characters, no `{` or `}` (reserved for Redis Cluster hash tags), no `#` (it begins the
/// names of group slots and ranked candidates), and no whitespace at
/// either end (a tenant list with `"acme "` would otherwise run a second, separate `acme`).
/// Any other UTF-8 is fine, inner spaces included. Ids are compared byte for byte: `Acme`
/// and `acme` are two tenants.
///
/// The length limit leaves room for the lock name: the longest prefix,
/// `tenant:` + 128 bytes + `:`, is 136 bytes, so every tenant can use job names of up to
/// 119 bytes within [`LockName::MAX_LEN`]. The whole `tenant:<id>:<lock>` is checked when a
/// scoped elector builds it ([`LockName::prefixed`]), with a [`NameError::TooLong`](NameError::TooLong)
/// naming the length.
///
/// Cloning is cheap (the id is shared).
///
/// # Examples
///
/// ```
/// use leader_core::{TenantId, TenantIdError};
///
/// let acme = TenantId::new("acme")?;
/// assert_eq!(acme.as_str(), "acme");
/// assert_eq!(acme.lock_name("sync-invoices")?.as_str(), "tenant:acme:sync-invoices");
///
/// assert!(matches!(TenantId::new("a\nb"), Err(TenantIdError::ControlCharacter { ch: '\n', index: 1 })));
/// assert!(matches!(TenantId::new("{a}"), Err(TenantIdError::Brace { ch: '{', index: 0 })));
/// assert!(matches!(TenantId::new("x".repeat(129)), Err(TenantIdError::TooLong { len: 129, .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(Arc<str>);

impl TenantId {
    /// The longest accepted id, in bytes.
    pub const MAX_LEN: usize = 128;

    /// Validates `id`.
    ///
    /// # Errors
    ///
    /// [`TenantIdError::Empty`], [`TenantIdError::Colon`], [`TenantIdError::ControlCharacter`],
    /// [`TenantIdError::Brace`], [`TenantIdError::SurroundingWhitespace`] or
    /// [`TenantIdError::TooLong`], for the first problem found.
    pub fn new(id: impl AsRef<str>) -> Result<Self, TenantIdError> {
        let id = id.as_ref();
        check(id)?;
        Ok(TenantId(Arc::from(id)))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The prefix this tenant's lock names get: `tenant:<id>:`.
    pub fn lock_prefix(&self) -> String {
        format!("{TENANT_PREFIX}{}:", self.0)
    }

    /// The full lock name `tenant:<id>:<name>`, as a scoped elector builds it.
    ///
    /// # Errors
    ///
    /// A [`NameError`] when `name` is empty or has a forbidden character, or the whole is
    /// over [`LockName::MAX_LEN`] bytes.
    pub fn lock_name(&self, name: &str) -> Result<LockName, NameError> {
        LockName::from_parts(&[TENANT_PREFIX, &self.0, ":"], name)
    }

    /// The tenant of a `tenant:<id>:` prefix, if `prefix` is one.
    pub(crate) fn from_prefix(prefix: &str) -> Option<Self> {
        let id = prefix.strip_prefix(TENANT_PREFIX)?.strip_suffix(':')?;
        TenantId::new(id).ok()
    }
}

fn check(id: &str) -> Result<(), TenantIdError> {
    if id.is_empty() {
        return Err(TenantIdError::Empty);
    }
    for (index, ch) in id.char_indices() {
        match ch {
            ':' => return Err(TenantIdError::Colon { index }),
            '{' | '}' => return Err(TenantIdError::Brace { ch, index }),
            LockName::DERIVED_SEPARATOR => return Err(TenantIdError::Hash { index }),
            ch if ch.is_control() => return Err(TenantIdError::ControlCharacter { ch, index }),
            _ => {}
        }
    }
    if id.trim() != id {
        return Err(TenantIdError::SurroundingWhitespace {
            id: id.chars().take(64).collect(),
        });
    }
    if id.len() > TenantId::MAX_LEN {
        return Err(TenantIdError::TooLong {
            id: id.chars().take(64).collect(),
            len: id.len(),
            max: TenantId::MAX_LEN,
        });
    }
    Ok(())
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for TenantId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for TenantId {
    type Err = TenantIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TenantId::new(s)
    }
}

impl TryFrom<&str> for TenantId {
    type Error = TenantIdError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        TenantId::new(s)
    }
}

impl TryFrom<String> for TenantId {
    type Error = TenantIdError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        TenantId::new(s)
    }
}

/// Anything `for_tenant` accepts: a [`TenantId`] (already valid) or a string (validated).
///
/// # Examples
///
/// ```
/// use leader_core::{IntoTenantId, TenantId};
/// let id = TenantId::new("acme")?;
/// assert_eq!("acme".into_tenant_id()?, id);
/// assert_eq!((&id).into_tenant_id()?, id);
/// # Ok::<(), leader_core::TenantIdError>(())
/// ```
pub trait IntoTenantId {
    /// The validated id.
    ///
    /// # Errors
    ///
    /// The [`TenantIdError`] of [`TenantId::new`] for an invalid string.
    fn into_tenant_id(self) -> Result<TenantId, TenantIdError>;
}

impl IntoTenantId for TenantId {
    fn into_tenant_id(self) -> Result<TenantId, TenantIdError> {
        Ok(self)
    }
}

impl IntoTenantId for &TenantId {
    fn into_tenant_id(self) -> Result<TenantId, TenantIdError> {
        Ok(self.clone())
    }
}

impl IntoTenantId for &str {
    fn into_tenant_id(self) -> Result<TenantId, TenantIdError> {
        TenantId::new(self)
    }
}

impl IntoTenantId for String {
    fn into_tenant_id(self) -> Result<TenantId, TenantIdError> {
        TenantId::new(self)
    }
}

impl IntoTenantId for &String {
    fn into_tenant_id(self) -> Result<TenantId, TenantIdError> {
        TenantId::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_unicode_spaces_and_the_longest_id() {
        for id in [
            "acme",
            "Zählung GmbH",
            "日本-🚀",
            "a.b/c@d",
            &"x".repeat(128),
        ] {
            assert_eq!(
                TenantId::new(id).map(|t| t.to_string()).ok().as_deref(),
                Some(id)
            );
        }
    }

    #[test]
    fn reports_the_first_problem_with_its_offset() {
        assert!(matches!(
            TenantId::new("é:x"),
            Err(TenantIdError::Colon { index: 2 })
        ));
        assert!(matches!(
            TenantId::new("ab\u{7f}"),
            Err(TenantIdError::ControlCharacter {
                ch: '\u{7f}',
                index: 2
            })
        ));
        assert!(matches!(
            TenantId::new("a}"),
            Err(TenantIdError::Brace { ch: '}', index: 1 })
        ));
        assert!(matches!(
            TenantId::new(format!("{}:", "x".repeat(200))),
            Err(TenantIdError::Colon { index: 200 })
        ));
        for padded in ["acme ", " acme", " ", "\u{a0}acme", "acme\u{3000}"] {
            assert!(
                matches!(
                    TenantId::new(padded),
                    Err(TenantIdError::SurroundingWhitespace { .. })
                ),
                "{padded:?}"
            );
        }
    }

    #[test]
    fn the_longest_prefix_leaves_room_for_a_119_byte_name() {
        let id = TenantId::new("x".repeat(TenantId::MAX_LEN)).unwrap();
        assert_eq!(id.lock_prefix().len(), 136);
        assert!(id.lock_name(&"n".repeat(119)).is_ok());
        assert!(matches!(
            id.lock_name(&"n".repeat(120)),
            Err(NameError::TooLong { len: 256, .. })
        ));
    }

    #[test]
    fn prefixes_round_trip() {
        let id = TenantId::new("acme").unwrap();
        assert_eq!(TenantId::from_prefix(&id.lock_prefix()), Some(id));
        assert_eq!(TenantId::from_prefix("tenant:"), None);
        assert_eq!(TenantId::from_prefix("other:acme:"), None);
    }
}
