//! Errors: [`ConnectError`] when a database cannot be used, and the classification of a
//! failed call into `leader_core::Error::Backend`.

use std::path::PathBuf;
use std::time::Duration;

use leader_core::kit::Failure;
use leader_core::{BackendErrorKind, CursorError, Error};
use rusqlite::ErrorCode;

/// The backend name in errors and traces.
pub(crate) const BACKEND: &str = "sqlite";

/// Why [`SqliteBackend::open`](crate::SqliteBackend::open) could not use a database file.
///
/// Nothing is written on any of these: every check is made before the first write, so a
/// corrupted, foreign, read-only or newer file stays byte for byte as it was, with no
/// journal or WAL file left beside it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The file cannot be opened or created: a missing directory, no permission, a path
    /// that is a directory.
    #[error("cannot open the SQLite database `{}`: {source}", path.display())]
    CannotOpen {
        /// The path given.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The file exists but is not an SQLite database, or is corrupted.
    #[error("`{}` is not a usable SQLite database (corrupted, or another kind of file): {source}", path.display())]
    NotADatabase {
        /// The path given.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The database can only be read (a read-only file or directory, a read-only mount):
    /// the backend must write.
    #[error("the SQLite database `{}` is read-only: {source}", path.display())]
    ReadOnly {
        /// The path given.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// Another connection held the database locked for longer than the busy timeout.
    #[error("the SQLite database `{}` stayed locked by another connection: {source}", path.display())]
    Locked {
        /// The path given.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The database holds a table (or view) of one of this backend's names
    /// (`leader_locks`, `leader_fences`, `leader_records`, `leader_rw`,
    /// `leader_rw_holders`, `leader_schema`) of another shape.
    #[error("the SQLite database `{}` has a `{table}` table this backend did not create", path.display())]
    ForeignTable {
        /// The path given.
        path: PathBuf,
        /// The table.
        table: &'static str,
    },
    /// The tables were made by a newer version of this crate, whose rows this version
    /// could misread.
    #[error("the SQLite database `{}` has lock tables of schema version {found}; this version of leader-sqlite reads version {supported} and older", path.display())]
    NewerSchema {
        /// The path given.
        path: PathBuf,
        /// The version the file's tables have.
        found: i64,
        /// The newest version this crate reads.
        supported: i64,
    },
    /// The path would open a database that other processes cannot share, or one without
    /// SQLite's file locking, so locks in it would exclude nobody: an in-memory database
    /// (`:memory:`, `file::memory:`, `mode=memory`), a private temporary one (an empty
    /// path), or a `file:` URI with `nolock`, `immutable` or `vfs=`.
    #[error("`{}` cannot hold locks shared between processes: {reason}", path.display())]
    NotShared {
        /// The path given.
        path: PathBuf,
        /// What in it loses the sharing.
        reason: &'static str,
    },
    /// The kernel's boot id, which tells the host's monotonic clock of one boot from the
    /// next, cannot be read (`/proc/sys/kernel/random/boot_id`).
    #[error("cannot read the host's boot id, on which the expiry of the locks in `{}` depends: {source}", path.display())]
    HostClock {
        /// The path given.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// Any other failure while preparing the database.
    #[error("cannot prepare the SQLite database `{}`: {source}", path.display())]
    Other {
        /// The path given.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
}

impl ConnectError {
    pub(crate) fn classify(path: PathBuf, source: rusqlite::Error) -> Self {
        match source.sqlite_error_code() {
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
                ConnectError::CannotOpen { path, source }
            }
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                ConnectError::NotADatabase { path, source }
            }
            Some(ErrorCode::ReadOnly) => ConnectError::ReadOnly { path, source },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                ConnectError::Locked { path, source }
            }
            _ => ConnectError::Other { path, source },
        }
    }
}

/// A failed call, in detail.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpError {
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// A lock row holds values this backend never writes.
    #[error("corrupted lock record: {0}")]
    Corrupt(&'static str),
    /// The host's clock reads before 1970 or beyond what the tables hold.
    #[error("the host's clock is out of range")]
    Clock,
    /// A lease time the tables (microseconds in an `i64`) or a `SystemTime` cannot hold.
    #[error(transparent)]
    LeaseTooLong(leader_core::LeaseTooLong),
    /// This process's earlier calls on the same backend value kept its connection for the
    /// whole busy timeout.
    #[error("this process's other calls kept the database connection busy for {0:?}")]
    Queued(Duration),
    /// A list cursor this backend did not make for this listing.
    #[error(transparent)]
    BadCursor(#[from] CursorError),
    /// A record stored in a shape this backend never writes, already the core error
    /// ([`leader_core::corrupt_record`]).
    #[error(transparent)]
    Record(Error),
}

impl OpError {
    /// `Transient` when another connection holds the database (busy, locked) or the
    /// disk or memory ran short; `Permanent` for what needs someone to intervene.
    pub(crate) fn kind(&self) -> BackendErrorKind {
        match self {
            OpError::Sqlite(err) => match err.sqlite_error_code() {
                Some(
                    ErrorCode::DatabaseBusy
                    | ErrorCode::DatabaseLocked
                    | ErrorCode::SystemIoFailure
                    | ErrorCode::DiskFull
                    | ErrorCode::OutOfMemory,
                ) => BackendErrorKind::Transient,
                _ => BackendErrorKind::Permanent,
            },
            OpError::Queued(_) => BackendErrorKind::Transient,
            OpError::Corrupt(_)
            | OpError::Clock
            | OpError::LeaseTooLong(_)
            | OpError::BadCursor(_)
            | OpError::Record(_) => BackendErrorKind::Permanent,
        }
    }

    /// The kit's failure (a corrupted record's error, named by the record, as it is).
    pub(crate) fn into_failure(self) -> Failure {
        if let OpError::Record(err) = self {
            return Failure::from_error(err);
        }
        Failure::new(self.kind(), self)
    }
}
