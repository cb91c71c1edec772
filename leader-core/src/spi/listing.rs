//! Operator requests of the SPI: listing the held locks under a prefix, and freeing a lock
//! whoever holds it (or only if its holder is still the one the operator saw).

use crate::spi::state::{LeaderLease, LeaderState};

/// What `list` asks of a backend: the held locks whose full key starts with `prefix`, one
/// page at a time.
///
/// Build it with [`ListRequest::new`]; pass the [`ListPage::next`] cursor of the previous
/// page with [`after`](Self::after) until it is `None`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireRequest, InMemoryBackend, ListRequest, LockBackend, LockName, OwnerToken};
///
/// let backend = InMemoryBackend::new();
/// for name in ["tenant:acme:sync", "tenant:acme:bill", "tenant:globex:sync"] {
///     let key = LockName::new(name)?;
///     backend.try_acquire(AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30)))?;
/// }
/// let mut names = Vec::new();
/// let mut request = ListRequest::new("tenant:acme:").with_limit(1);
/// loop {
///     let page = backend.list(&request)?;
///     names.extend(page.locks.iter().map(|state| state.lock_name().to_owned()));
///     match page.next {
///         Some(cursor) => request = request.after(cursor),
///         None => break,
///     }
/// }
/// names.sort();
/// assert_eq!(names, ["tenant:acme:bill", "tenant:acme:sync"]);
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListRequest {
    /// Only keys that start with this (byte-wise); empty lists every lock.
    pub prefix: String,
    /// Where to resume: the cursor of the previous page, `None` for the first page.
    pub cursor: Option<ListCursor>,
    /// The page size the backend aims for (at least 1). A page may hold fewer locks, and
    /// on Redis somewhat more (its `SCAN` takes the size as a hint).
    pub limit: usize,
}

impl ListRequest {
    /// The page size of [`ListRequest::new`].
    pub const DEFAULT_LIMIT: usize = 500;

    /// The first page of held locks whose key starts with `prefix`.
    pub fn new(prefix: impl Into<String>) -> Self {
        ListRequest {
            prefix: prefix.into(),
            cursor: None,
            limit: Self::DEFAULT_LIMIT,
        }
    }

    /// The same request for the page after `cursor`.
    pub fn after(mut self, cursor: ListCursor) -> Self {
        self.cursor = Some(cursor);
        self
    }

    /// The same request with another page size (0 counts as 1).
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// The same request under another prefix: for wrappers that map names (tenant scoping).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The page size to serve: `limit`, or 1 if the field was set to 0 by hand.
    pub fn page_size(&self) -> usize {
        self.limit.max(1)
    }

    /// For backends that list by a key range: the smallest string above every string that
    /// starts with `prefix`, byte-wise (the prefix with its last character replaced by the
    /// next one, trailing U+10FFFF dropped, since it has none). UTF-8's byte order is code
    /// point order, so the keys under the prefix are exactly those in
    /// `[prefix, prefix_end)`. `None` when no string is above them all (an empty prefix, or
    /// one of U+10FFFF only).
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::ListRequest;
    ///
    /// assert_eq!(ListRequest::new("tenant:acme:").prefix_end().as_deref(), Some("tenant:acme;"));
    /// assert_eq!(ListRequest::new("").prefix_end(), None);
    /// ```
    pub fn prefix_end(&self) -> Option<String> {
        let mut rest = self.prefix.chars();
        while let Some(last) = rest.next_back() {
            let next = match last {
                '\u{D7FF}' => Some('\u{E000}'),
                _ => char::from_u32(u32::from(last) + 1),
            };
            if let Some(next) = next {
                let mut end = rest.as_str().to_owned();
                end.push(next);
                return Some(end);
            }
        }
        None
    }
}

/// Where a listing resumes: opaque, made by the backend that answered the previous page.
///
/// Only pass it back to the same kind of backend, with the same prefix: backends refuse
/// any other with a permanent error (see [`ListCursor::tagged`], which binds a cursor to
/// its backend and prefix).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListCursor(String);

impl ListCursor {
    /// A cursor holding a backend's position (for backend authors).
    pub fn new(position: impl Into<String>) -> Self {
        ListCursor(position.into())
    }

    /// The backend's position, as it made it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One page of a listing: snapshots of held locks, and where the next page starts.
///
/// Like [`LeaderState`], best-effort: a lock taken or freed while the listing runs may or
/// may not appear, and on Redis a lock may appear on two pages (its `SCAN` guarantee).
/// Free locks are never listed, since backends differ in whether they remember them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ListPage {
    /// The held locks of this page, each an [`Occupied`](crate::LockStatus::Occupied)
    /// snapshot named by its full key.
    pub locks: Vec<LeaderState>,
    /// The cursor of the next page; `None` when this is the last one.
    pub next: Option<ListCursor>,
}

impl ListPage {
    /// A page of `locks`, followed by the page at `next` if any.
    pub fn new(locks: Vec<LeaderState>, next: Option<ListCursor>) -> Self {
        ListPage { locks, next }
    }
}

/// The answer to `force_release` and `force_release_if`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::{AcquireOutcome, AcquireRequest, ForceReleaseOutcome, InMemoryBackend, LockBackend, LockName, OwnerToken};
///
/// let backend = InMemoryBackend::new();
/// let key = LockName::new("nightly")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// let AcquireOutcome::Acquired(lease) = backend.try_acquire(request)? else { unreachable!() };
/// // Another acquisition's token: the holder is not the one the operator saw.
/// let outcome = backend.force_release_if(&key, lease.fencing_token + 1)?;
/// assert!(matches!(&outcome, ForceReleaseOutcome::HolderChanged(now) if now.leader_id == "node-a"));
/// assert_eq!(outcome.as_str(), "holder_changed");
/// let outcome = backend.force_release_if(&key, lease.fencing_token)?;
/// assert!(matches!(outcome, ForceReleaseOutcome::Released(freed) if freed.fencing_token == lease.fencing_token));
/// assert_eq!(backend.force_release(&key)?, ForceReleaseOutcome::NotHeld);
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForceReleaseOutcome {
    /// The lock was held, by this holder, and is free now.
    Released(LeaderLease),
    /// Only from `force_release_if`: the lock is held by another acquisition than the one
    /// named (its fencing token differs), shown here; nothing changed.
    HolderChanged(LeaderLease),
    /// Nobody held the lock; nothing changed.
    NotHeld,
}

impl ForceReleaseOutcome {
    /// A short label for logs and metrics: `"released"`, `"holder_changed"` or
    /// `"not_held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ForceReleaseOutcome::Released(_) => "released",
            ForceReleaseOutcome::HolderChanged(_) => "holder_changed",
            ForceReleaseOutcome::NotHeld => "not_held",
        }
    }

    /// The answer of a conditional force release, from the live holder seen (if any) and
    /// whether it was freed: for backends, which decide in one atomic step and then
    /// report. `freed` with no holder is [`NotHeld`](Self::NotHeld).
    pub fn conditional(holder: Option<LeaderLease>, freed: bool) -> Self {
        match (holder, freed) {
            (Some(holder), true) => ForceReleaseOutcome::Released(holder),
            (Some(holder), false) => ForceReleaseOutcome::HolderChanged(holder),
            (None, _) => ForceReleaseOutcome::NotHeld,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ListRequest;

    fn end(prefix: &str) -> Option<String> {
        ListRequest::new(prefix).prefix_end()
    }

    #[test]
    fn the_prefix_end_bounds_exactly_the_keys_under_the_prefix() {
        assert_eq!(end("ab").as_deref(), Some("ac"));
        assert_eq!(end("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(end("\u{10FFFF}"), None);
        for key in ["ab", "ab\u{10FFFF}\u{10FFFF}", "abz", "ab\u{0}"] {
            let upper = end("ab").unwrap();
            assert!(key >= "ab" && key < upper.as_str(), "{key:?} is under `ab`");
        }
        assert!("ac" >= end("ab").unwrap().as_str());
        for prefix in ["job:", "é", "a\u{D7FF}", "z\u{10FFFF}", "a.*[x]%_"] {
            let upper = end(prefix).unwrap();
            for name in [
                prefix.to_owned(),
                format!("{prefix}\u{10FFFF}"),
                format!("{prefix}~~"),
            ] {
                assert!(
                    prefix <= name.as_str() && name < upper,
                    "{name:?} < {upper:?}"
                );
            }
            assert!(upper.as_str() > prefix && !upper.starts_with(prefix));
        }
    }

    #[test]
    fn a_zero_limit_serves_pages_of_one() {
        let mut request = ListRequest::new("x");
        request.limit = 0;
        assert_eq!(request.page_size(), 1);
    }
}
