//! [`Call`]: one store call planned as data; [`Failure`]: how it failed, before the kit
//! names the lock.

use std::fmt;

use crate::error::{BackendError, BackendErrorKind, BoxError, Error};

/// One call to the store, planned as data: what it sends is in the value; sending it is
/// the backend's runner's ([`Runs`](crate::kit::Runs)). The kit knows the lock a call is
/// about from the request it was planned from, and names it in the call's failure.
pub trait Call: Send {
    /// What the store answers.
    type Output: Send;

    /// The call's name in traces (`"acquire"`, `"extend_batch"`, ...).
    const NAME: &'static str;

    /// A short label of `output`, for traces (`"acquired"`, `"held"`, ...).
    fn outcome(output: &Self::Output) -> &'static str {
        let _ = output;
        "ok"
    }
}

/// Why a call failed: transient (the store did not answer, or may answer later) or
/// permanent (it never will: a corrupted record, a lease the store cannot hold), and the
/// backend's own error. The kit names the backend and the lock
/// ([`named`](Self::named)).
///
/// # Examples
///
/// ```
/// use leader_core::kit::Failure;
/// use leader_core::BackendErrorKind;
///
/// let failure = Failure::transient("connection reset");
/// assert_eq!(failure.kind(), BackendErrorKind::Transient);
/// let error = failure.named("redis", "nightly");
/// assert!(error.is_transient());
/// assert!(error.to_string().contains("nightly"));
/// ```
pub struct Failure {
    kind: BackendErrorKind,
    source: BoxError,
    /// An error the backend named already (a corrupted record names the record's key, in
    /// the form every backend gives it): [`named`](Self::named) returns it as it is.
    named: Option<Error>,
}

impl Failure {
    /// A failure of `kind`, for `source`.
    pub fn new(kind: BackendErrorKind, source: impl Into<BoxError>) -> Self {
        Failure {
            kind,
            source: source.into(),
            named: None,
        }
    }

    /// A failure the backend made into an [`Error`] itself (a corrupted record, see
    /// [`corrupt_record`](crate::corrupt_record)): the kit gives it back unchanged.
    pub fn from_error(error: Error) -> Self {
        let kind = if error.is_transient() {
            BackendErrorKind::Transient
        } else {
            BackendErrorKind::Permanent
        };
        Failure {
            kind,
            source: error.to_string().into(),
            named: Some(error),
        }
    }

    /// A transient failure: the call may succeed if tried again.
    pub fn transient(source: impl Into<BoxError>) -> Self {
        Failure::new(BackendErrorKind::Transient, source)
    }

    /// A permanent failure: trying again will not help.
    pub fn permanent(source: impl Into<BoxError>) -> Self {
        Failure::new(BackendErrorKind::Permanent, source)
    }

    /// Transient or permanent.
    pub fn kind(&self) -> BackendErrorKind {
        self.kind
    }

    /// The failure of one lock of a batch call that failed as a whole: the same kind, and
    /// the batch's failure as text (each lock's error owns its own copy).
    pub fn of_batch(&self) -> Failure {
        Failure::new(self.kind, format!("the batch call failed: {}", self.source))
    }

    /// The error of `backend`'s call on `key` (or the error the backend named itself).
    pub fn named(self, backend: &'static str, key: &str) -> Error {
        match self.named {
            Some(error) => error,
            None => BackendError::new(backend, key, self.kind, self.source).into(),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failure")
            .field("kind", &self.kind)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}
