//! Validated lock names, and [`NameError`] for a name that is not valid.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A validated lock name.
///
/// Rules: not empty, at most [`LockName::MAX_LEN`] bytes (counting any tenant
/// prefix), no control characters, no `{` or `}` (the Redis backend wraps names in a
/// cluster hash tag), and no whitespace at either end (`"job"` and `"job "` from a config
/// file would otherwise be two locks). Any other UTF-8 is fine, `:` and inner spaces
/// included.
///
/// The character [`LockName::DERIVED_SEPARATOR`] (`#`) belongs to the names this library
/// derives from a lock's own: slot `i` of the leader group `job` is `job#i`, a ranked
/// candidate's record is `job#rank:…`. The names electors take from callers
/// ([`LockName::unscoped`], [`LockName::prefixed`]) may not contain it, so no lock of a
/// caller's can be another lock's slot; [`LockName::derive`] makes the derived names, and
/// the electors' `state` and `force_release` take them too (an operator's
/// `leader state 'job#1'`).
///
/// The namespace [`LockName::TENANT_NAMESPACE`] (`tenant:`) belongs to tenant scoping: the
/// locks of tenant `acme` are `tenant:acme:<name>`. The names electors take from callers
/// are checked with [`LockName::unscoped`], which refuses that prefix, so an unscoped
/// `run_if_leader("tenant:acme:job")` can never be tenant `acme`'s lock `job`.
///
/// # Examples
///
/// ```
/// use leader_core::{LockName, NameError};
///
/// let name = LockName::new("nightly-report")?;
/// assert_eq!(name.as_str(), "nightly-report");
///
/// assert_eq!(LockName::new(""), Err(NameError::Empty));
/// assert!(matches!(LockName::new("a{b}"), Err(NameError::Brace { ch: '{', index: 1 })));
/// # Ok::<(), NameError>(())
/// ```
///
/// A clone shares the text (an `Arc<str>`): a lease, its tracker and its backend request
/// all carry the name without copying it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockName(Arc<str>);

impl LockName {
    /// The longest accepted name, in bytes.
    pub const MAX_LEN: usize = 255;

    /// The namespace of tenant-scoped lock names: `tenant:<id>:<name>`.
    pub const TENANT_NAMESPACE: &'static str = "tenant:";

    /// Separates a derived name from the lock it derives from: `job#1`, `job#rank:…`.
    pub const DERIVED_SEPARATOR: char = '#';

    /// Validates `name`.
    ///
    /// # Errors
    ///
    /// A [`NameError`] naming the first problem found.
    pub fn new(name: impl AsRef<str>) -> Result<Self, NameError> {
        let name = name.as_ref();
        check_chars(name, 0)?;
        check_len(name)?;
        check_ends(name)?;
        Ok(LockName(Arc::from(name)))
    }

    /// Validates a name a caller gives an elector that is not tenant-scoped: the rules of
    /// [`new`](Self::new), no [`DERIVED_SEPARATOR`](Self::DERIVED_SEPARATOR), and it must
    /// not start with [`TENANT_NAMESPACE`](Self::TENANT_NAMESPACE).
    ///
    /// # Errors
    ///
    /// A [`NameError`]; [`NameError::Hash`] for a `#`, [`NameError::Reserved`] for a name
    /// in the tenant namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::{LockName, NameError};
    ///
    /// assert!(LockName::unscoped("nightly").is_ok());
    /// assert!(matches!(LockName::unscoped("tenant:acme:job"), Err(NameError::Reserved { .. })));
    /// assert!(matches!(LockName::unscoped(" nightly"), Err(NameError::SurroundingWhitespace { .. })));
    /// assert!(matches!(LockName::unscoped("job#1"), Err(NameError::Hash { index: 3 })));
    /// ```
    pub fn unscoped(name: impl AsRef<str>) -> Result<Self, NameError> {
        let name = LockName::new(name)?;
        check_no_separator(name.as_str(), 0)?;
        check_not_reserved(name.as_str())?;
        Ok(name)
    }

    /// Validates a name prefix set by hand on an elector (`with_name_prefix`): not empty,
    /// no forbidden characters (nor `#`), no whitespace at either end, and not in the
    /// tenant namespace (tenant scoping sets those prefixes itself).
    ///
    /// # Errors
    ///
    /// A [`NameError`] naming the problem.
    pub fn check_prefix(prefix: &str) -> Result<(), NameError> {
        if prefix.is_empty() {
            return Err(NameError::Empty);
        }
        check_chars(prefix, 0)?;
        check_no_separator(prefix, 0)?;
        check_ends(prefix)?;
        check_not_reserved(prefix)
    }

    /// Builds `prefix + name`, validating both parts (the rules of [`unscoped`](Self::unscoped)
    /// but the namespace) and the length of the whole.
    ///
    /// Used for tenant scoping, where the prefix is `tenant:<id>:`.
    ///
    /// # Errors
    ///
    /// A [`NameError`]: `name` is empty or has a forbidden character (`#` included), or the
    /// whole is too long.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::LockName;
    /// let name = LockName::prefixed("tenant:acme:", "sync")?;
    /// assert_eq!(name.as_str(), "tenant:acme:sync");
    /// # Ok::<(), leader_core::NameError>(())
    /// ```
    pub fn prefixed(prefix: &str, name: &str) -> Result<Self, NameError> {
        LockName::from_parts(&[prefix], name)
    }

    /// [`prefixed`](Self::prefixed) with the prefix given in parts (a tenant's
    /// `tenant:`, id and `:`), so that no part is joined before the whole is built.
    pub(crate) fn from_parts(prefix: &[&str], name: &str) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        let parts = || prefix.iter().copied().chain([name]);
        let mut offset = 0;
        for part in parts() {
            check_chars(part, offset)?;
            offset += part.len();
        }
        offset = 0;
        for part in parts() {
            check_no_separator(part, offset)?;
            offset += part.len();
        }
        check_ends(name)?;
        let len: usize = parts().map(str::len).sum();
        if len > LockName::MAX_LEN {
            let start: String = parts().flat_map(str::chars).take(64).collect();
            return Err(NameError::TooLong {
                name: start,
                len,
                max: LockName::MAX_LEN,
            });
        }
        // Joined on the stack, so the name is allocated once, at its size.
        let mut joined = [0u8; LockName::MAX_LEN];
        let mut end = 0;
        for part in parts() {
            if let Some(to) = joined.get_mut(end..end + part.len()) {
                to.copy_from_slice(part.as_bytes());
            }
            end += part.len();
        }
        // Whole strings joined are UTF-8: the heap is only a fallback, never taken.
        match joined.get(..end).map(std::str::from_utf8) {
            Some(Ok(full)) => Ok(LockName(Arc::from(full))),
            _ => Ok(LockName(Arc::from(parts().collect::<String>()))),
        }
    }

    /// The name derived from this one by `suffix` (`self#suffix`): a group's slot (a
    /// number from 1, `job#2`) or a ranked candidate's record (`job#rank:<10 digits>:<16
    /// hex digits>`), the only names `#` may begin.
    ///
    /// # Errors
    ///
    /// [`NameError::Hash`] when this name is already derived or `suffix` is neither form;
    /// [`NameError::TooLong`] when the whole is over [`MAX_LEN`](Self::MAX_LEN).
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::{LockName, NameError};
    ///
    /// let job = LockName::new("job")?;
    /// assert_eq!(job.derive("2")?.as_str(), "job#2");
    /// assert!(matches!(job.derive("02"), Err(NameError::Hash { index: 3 })));
    /// assert!(matches!(job.derive("1:fence"), Err(NameError::Hash { .. })));
    /// # Ok::<(), NameError>(())
    /// ```
    pub fn derive(&self, suffix: &str) -> Result<LockName, NameError> {
        let index = self.0.len();
        if self.0.contains(LockName::DERIVED_SEPARATOR) || !is_derived_suffix(suffix) {
            return Err(NameError::Hash { index });
        }
        let full = format!("{}{}{suffix}", self.0, LockName::DERIVED_SEPARATOR);
        check_len(&full)?;
        Ok(LockName(Arc::from(full)))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as an owned string.
    pub fn into_string(self) -> String {
        String::from(&*self.0)
    }
}

fn check_chars(s: &str, offset: usize) -> Result<(), NameError> {
    // Fast path: plain printable ASCII without braces, the usual case.
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'{' && b != b'}')
    {
        return Ok(());
    }
    for (index, ch) in s.char_indices() {
        if ch.is_control() {
            return Err(NameError::ControlCharacter {
                ch,
                index: offset + index,
            });
        }
        if ch == '{' || ch == '}' {
            return Err(NameError::Brace {
                ch,
                index: offset + index,
            });
        }
    }
    Ok(())
}

/// A slot number (`[1-9][0-9]*`) or a ranked record (`rank:` 10 digits `:` 16 hex digits).
fn is_derived_suffix(suffix: &str) -> bool {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(record) = suffix.strip_prefix("rank:") {
        return record.split_once(':').is_some_and(|(rank, id)| {
            digits(rank, 10)
                && id.len() == 16
                && id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
    }
    !suffix.is_empty()
        && !suffix.starts_with('0')
        && suffix.len() <= 10
        && suffix.bytes().all(|b| b.is_ascii_digit())
}

/// No [`LockName::DERIVED_SEPARATOR`]: a caller's name never names a derived lock.
fn check_no_separator(s: &str, offset: usize) -> Result<(), NameError> {
    // A byte search: the separator is ASCII, so its byte never occurs inside another
    // character's UTF-8 encoding.
    const SEPARATOR: u8 = LockName::DERIVED_SEPARATOR as u8;
    match s.bytes().position(|b| b == SEPARATOR) {
        Some(index) => Err(NameError::Hash {
            index: offset + index,
        }),
        None => Ok(()),
    }
}

/// No whitespace at either end (a whitespace-only name included).
fn check_ends(s: &str) -> Result<(), NameError> {
    let starts = s.chars().next().is_some_and(char::is_whitespace);
    let ends = s.chars().next_back().is_some_and(char::is_whitespace);
    if starts || ends {
        return Err(NameError::SurroundingWhitespace {
            name: s.chars().take(64).collect(),
        });
    }
    Ok(())
}

fn check_not_reserved(s: &str) -> Result<(), NameError> {
    if s.starts_with(LockName::TENANT_NAMESPACE) {
        return Err(NameError::Reserved {
            name: s.chars().take(64).collect(),
            namespace: LockName::TENANT_NAMESPACE,
        });
    }
    Ok(())
}

fn check_len(s: &str) -> Result<(), NameError> {
    if s.is_empty() {
        return Err(NameError::Empty);
    }
    if s.len() > LockName::MAX_LEN {
        return Err(NameError::TooLong {
            name: s.chars().take(64).collect(),
            len: s.len(),
            max: LockName::MAX_LEN,
        });
    }
    Ok(())
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for LockName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for LockName {
    type Err = NameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LockName::new(s)
    }
}

impl TryFrom<&str> for LockName {
    type Error = NameError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        LockName::new(s)
    }
}

impl TryFrom<String> for LockName {
    type Error = NameError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        LockName::new(s)
    }
}

/// Why a lock name (or a tenant-prefixed lock name) was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("lock name is empty")]
    Empty,
    /// The name is longer than [`LockName::MAX_LEN`] bytes.
    #[error("lock name `{name}` is {len} bytes long; the limit is {max} bytes")]
    TooLong {
        /// The rejected name, cut to the first 64 characters.
        name: String,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The name contains a control character.
    #[error("lock name contains the control character {ch:?} at byte {index}")]
    ControlCharacter {
        /// The character.
        ch: char,
        /// Its byte offset in the name.
        index: usize,
    },
    /// The name contains `{` or `}`, which are reserved for Redis Cluster hash tags.
    #[error("lock name contains {ch:?} at byte {index}; braces are reserved for cluster hash tags")]
    Brace {
        /// The brace.
        ch: char,
        /// Its byte offset in the name.
        index: usize,
    },
    /// The name starts or ends with whitespace (or is only whitespace).
    #[error(
        "lock name {name:?} starts or ends with whitespace; trim it (\"job\" and \"job \" would be two locks)"
    )]
    SurroundingWhitespace {
        /// The rejected name (or name prefix), cut to the first 64 characters.
        name: String,
    },
    /// A caller's name (or name prefix) contains `#`, which separates the names this
    /// library derives from a lock's: the slots of a leader group (`job#1`) and the
    /// candidates of a ranked campaign (`job#rank:…`).
    #[error(
        "lock name contains '#' at byte {index}; '#' is reserved for the names of group slots and ranked candidates"
    )]
    Hash {
        /// Its byte offset in the name.
        index: usize,
    },
    /// An unscoped name (or a name prefix) starts with the namespace of tenant-scoped locks.
    #[error(
        "lock name {name:?} starts with `{namespace}`, which is reserved for tenant-scoped locks; scope the elector to the tenant (`for_tenant`) instead"
    )]
    Reserved {
        /// The rejected name (or name prefix), cut to the first 64 characters.
        name: String,
        /// The reserved namespace, [`LockName::TENANT_NAMESPACE`].
        namespace: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name built from a prefix in parts is the name, or the error, of the prefix
    /// joined first: for good names, each kind of bad one, and lengths around the limit.
    #[test]
    fn a_prefix_in_parts_builds_what_the_joined_prefix_builds() {
        let long = "n".repeat(240);
        let names = [
            "sync", "", " sync", "a\nb", "{a}", "a#b", "zählung", &long, "x:y",
        ];
        let prefixes: [&[&str]; 5] = [
            &["tenant:", "acme", ":"],
            &["tenant:", "a#b", ":"],
            &["tenant:", "a\u{7}b", ":"],
            &["tenant:", "日本", ":"],
            &["p", "q"],
        ];
        for parts in prefixes {
            let joined = parts.concat();
            for name in names {
                assert_eq!(
                    LockName::from_parts(parts, name),
                    LockName::prefixed(&joined, name),
                    "{parts:?} + {name:?}"
                );
            }
        }
        // The limit, exactly: 255 bytes in all is a name, 256 is too long.
        let at_limit = "m".repeat(LockName::MAX_LEN - "tenant:acme:".len());
        let joined = LockName::from_parts(&["tenant:", "acme", ":"], &at_limit);
        assert_eq!(joined.map(|n| n.as_str().len()), Ok(LockName::MAX_LEN));
        let over = format!("{at_limit}m");
        assert!(matches!(
            LockName::from_parts(&["tenant:", "acme", ":"], &over),
            Err(NameError::TooLong { len: 256, .. })
        ));
    }

    #[test]
    fn accepts_max_len_and_unicode() {
        assert!(LockName::new("x".repeat(255)).is_ok());
        assert!(LockName::new("zählung-日本-🚀").is_ok());
        assert!(LockName::new("a:b:c").is_ok());
    }

    #[test]
    fn rejects_each_problem_with_a_precise_error() {
        assert_eq!(LockName::new(""), Err(NameError::Empty));
        assert!(matches!(
            LockName::new("x".repeat(256)),
            Err(NameError::TooLong {
                len: 256,
                max: 255,
                ..
            })
        ));
        assert_eq!(
            LockName::new("ab\ncd"),
            Err(NameError::ControlCharacter { ch: '\n', index: 2 })
        );
        assert_eq!(
            LockName::new("ab}"),
            Err(NameError::Brace { ch: '}', index: 2 })
        );
        for padded in [" job", "job ", "job\u{a0}", "\u{2003}job", " ", "\u{3000}"] {
            assert!(
                matches!(
                    LockName::new(padded),
                    Err(NameError::SurroundingWhitespace { .. })
                ),
                "{padded:?}"
            );
        }
        assert!(
            LockName::new("nightly report").is_ok(),
            "inner spaces are fine"
        );
    }

    #[test]
    fn the_tenant_namespace_is_reserved_for_scoped_names() {
        assert!(LockName::new("tenant:acme:job").is_ok(), "a full key");
        assert!(matches!(
            LockName::unscoped("tenant:acme:job"),
            Err(NameError::Reserved {
                namespace: "tenant:",
                ..
            })
        ));
        assert!(LockName::unscoped("tenants:job").is_ok());
        assert!(LockName::unscoped("my-tenant:job").is_ok());
        assert!(
            LockName::prefixed("tenant:acme:", "tenant:x").is_ok(),
            "inside a scope"
        );
        assert!(matches!(
            LockName::check_prefix("tenant:acme:"),
            Err(NameError::Reserved { .. })
        ));
        assert!(matches!(
            LockName::check_prefix("team "),
            Err(NameError::SurroundingWhitespace { .. })
        ));
        assert_eq!(LockName::check_prefix(""), Err(NameError::Empty));
        assert!(LockName::check_prefix("team-x:").is_ok());
        let err = LockName::unscoped("tenant:acme:job").unwrap_err();
        assert!(err.to_string().contains("for_tenant"), "{err}");
    }

    #[test]
    fn prefixed_counts_the_whole_length_and_reports_offsets_in_the_whole() {
        assert!(LockName::prefixed("tenant:a:", &"x".repeat(246)).is_ok());
        assert!(matches!(
            LockName::prefixed("tenant:a:", &"x".repeat(247)),
            Err(NameError::TooLong { len: 256, .. })
        ));
        assert_eq!(LockName::prefixed("tenant:a:", ""), Err(NameError::Empty));
        assert!(matches!(
            LockName::prefixed("tenant:a:", " job"),
            Err(NameError::SurroundingWhitespace { .. })
        ));
        assert_eq!(
            LockName::prefixed("p:", "a\u{7f}"),
            Err(NameError::ControlCharacter {
                ch: '\u{7f}',
                index: 3
            })
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_accepts_exactly_the_valid_names(s in "\\PC{0,300}|[\\x00-\\x7f]{0,10}") {
            let valid = !s.is_empty()
                && s.len() <= 255
                && !s.chars().any(|c| c.is_control() || c == '{' || c == '}')
                && s.trim() == s;
            proptest::prop_assert_eq!(LockName::new(s.clone()).is_ok(), valid);
        }
    }
}
