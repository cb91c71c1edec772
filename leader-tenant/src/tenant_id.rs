//! [`TenantId`]: a validated tenant id, and [`IntoTenantId`] for the calls that take one.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use leader_core::LockName;

use crate::error::TenantError;

/// The prefix of every tenant-scoped lock name: `tenant:<id>:<lock>`.
pub const TENANT_PREFIX: &str = "tenant:";

/// A validated tenant id.
///
/// Rules: not empty, at most [`TenantId::MAX_LEN`] bytes, no `:` (it separates the tenant
/// from the lock name, so `a:b` + `c` can never collide with `a` + `b:c`), no control
/// characters, no `{` or `}` (reserved for Redis Cluster hash tags), and no whitespace at
/// either end (a tenant list with `"acme "` would otherwise run a second, separate `acme`).
/// Any other UTF-8 is fine, inner spaces included. Ids are compared byte for byte: `Acme`
/// and `acme` are two tenants.
///
/// The length limit leaves room for the lock name: the longest prefix,
/// `tenant:` + 128 bytes + `:`, is 136 bytes, so every tenant can use job names of up to
/// 119 bytes within [`LockName::MAX_LEN`]. The whole `tenant:<id>:<lock>` is checked when a
/// scoped elector builds it ([`LockName::prefixed`]), with a [`NameError::TooLong`](leader_core::NameError::TooLong)
/// naming the length.
///
/// Cloning is cheap (the id is shared).
///
/// # Examples
///
/// ```
/// use leader_tenant::{TenantError, TenantId};
///
/// let acme = TenantId::new("acme")?;
/// assert_eq!(acme.as_str(), "acme");
/// assert_eq!(acme.lock_name("sync-invoices")?.as_str(), "tenant:acme:sync-invoices");
///
/// assert!(matches!(TenantId::new("a\nb"), Err(TenantError::ControlCharacter { ch: '\n', index: 1 })));
/// assert!(matches!(TenantId::new("{a}"), Err(TenantError::Brace { ch: '{', index: 0 })));
/// assert!(matches!(TenantId::new("x".repeat(129)), Err(TenantError::IdTooLong { len: 129, .. })));
/// # Ok::<(), TenantError>(())
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
    /// [`TenantError::EmptyId`], [`TenantError::Colon`], [`TenantError::ControlCharacter`],
    /// [`TenantError::Brace`], [`TenantError::SurroundingWhitespace`] or
    /// [`TenantError::IdTooLong`], for the first problem found.
    pub fn new(id: impl AsRef<str>) -> Result<Self, TenantError> {
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
    /// [`TenantError::Name`] when `name` is empty or has a forbidden character, or the
    /// whole is over [`LockName::MAX_LEN`] bytes.
    pub fn lock_name(&self, name: &str) -> Result<LockName, TenantError> {
        Ok(LockName::prefixed(&self.lock_prefix(), name)?)
    }

    /// The tenant of a `tenant:<id>:` prefix, if `prefix` is one.
    pub(crate) fn from_prefix(prefix: &str) -> Option<Self> {
        let id = prefix.strip_prefix(TENANT_PREFIX)?.strip_suffix(':')?;
        TenantId::new(id).ok()
    }
}

fn check(id: &str) -> Result<(), TenantError> {
    if id.is_empty() {
        return Err(TenantError::EmptyId);
    }
    for (index, ch) in id.char_indices() {
        match ch {
            ':' => return Err(TenantError::Colon { index }),
            '{' | '}' => return Err(TenantError::Brace { ch, index }),
            ch if ch.is_control() => return Err(TenantError::ControlCharacter { ch, index }),
            _ => {}
        }
    }
    if id.trim() != id {
        return Err(TenantError::SurroundingWhitespace {
            id: id.chars().take(64).collect(),
        });
    }
    if id.len() > TenantId::MAX_LEN {
        return Err(TenantError::IdTooLong {
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
    type Err = TenantError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TenantId::new(s)
    }
}

impl TryFrom<&str> for TenantId {
    type Error = TenantError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        TenantId::new(s)
    }
}

impl TryFrom<String> for TenantId {
    type Error = TenantError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        TenantId::new(s)
    }
}

/// Anything `for_tenant` accepts: a [`TenantId`] (already valid) or a string (validated).
///
/// # Examples
///
/// ```
/// use leader_tenant::{IntoTenantId, TenantId};
/// let id = TenantId::new("acme")?;
/// assert_eq!("acme".into_tenant_id()?, id);
/// assert_eq!((&id).into_tenant_id()?, id);
/// # Ok::<(), leader_tenant::TenantError>(())
/// ```
pub trait IntoTenantId {
    /// The validated id.
    ///
    /// # Errors
    ///
    /// The [`TenantError`] of [`TenantId::new`] for an invalid string.
    fn into_tenant_id(self) -> Result<TenantId, TenantError>;
}

impl IntoTenantId for TenantId {
    fn into_tenant_id(self) -> Result<TenantId, TenantError> {
        Ok(self)
    }
}

impl IntoTenantId for &TenantId {
    fn into_tenant_id(self) -> Result<TenantId, TenantError> {
        Ok(self.clone())
    }
}

impl IntoTenantId for &str {
    fn into_tenant_id(self) -> Result<TenantId, TenantError> {
        TenantId::new(self)
    }
}

impl IntoTenantId for String {
    fn into_tenant_id(self) -> Result<TenantId, TenantError> {
        TenantId::new(self)
    }
}

impl IntoTenantId for &String {
    fn into_tenant_id(self) -> Result<TenantId, TenantError> {
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
            Err(TenantError::Colon { index: 2 })
        ));
        assert!(matches!(
            TenantId::new("ab\u{7f}"),
            Err(TenantError::ControlCharacter {
                ch: '\u{7f}',
                index: 2
            })
        ));
        assert!(matches!(
            TenantId::new("a}"),
            Err(TenantError::Brace { ch: '}', index: 1 })
        ));
        assert!(matches!(
            TenantId::new(format!("{}:", "x".repeat(200))),
            Err(TenantError::Colon { index: 200 })
        ));
        for padded in ["acme ", " acme", " ", "\u{a0}acme", "acme\u{3000}"] {
            assert!(
                matches!(
                    TenantId::new(padded),
                    Err(TenantError::SurroundingWhitespace { .. })
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
            Err(TenantError::Name(leader_core::NameError::TooLong {
                len: 256,
                ..
            }))
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
