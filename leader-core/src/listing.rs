//! Operator requests of the SPI: listing the held locks under a prefix, and freeing a lock
//! whoever holds it.

use crate::state::{LeaderLease, LeaderState};

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
}

/// Where a listing resumes: opaque, made by the backend that answered the previous page.
///
/// Only pass it back to the same kind of backend, with the same prefix.
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

/// The answer to `force_release`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForceReleaseOutcome {
    /// The lock was held, by this holder, and is free now.
    Released(LeaderLease),
    /// Nobody held the lock; nothing changed.
    NotHeld,
}

impl ForceReleaseOutcome {
    /// A short label for logs and metrics: `"released"` or `"not_held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ForceReleaseOutcome::Released(_) => "released",
            ForceReleaseOutcome::NotHeld => "not_held",
        }
    }
}
