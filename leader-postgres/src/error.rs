//! Errors: the public [`ConnectError`] of the constructors, and the private detailed
//! [`OpError`] of one call, classified and converted into `leader_core::Error::Backend`
//! naming the lock.

use std::io;
use std::time::Duration;

use leader_core::kit::Failure;
use leader_core::{BackendErrorKind, BoxError};
use leader_runtime::Stopped;
use tokio_postgres::error::SqlState;

use crate::schema::ShapeError;

/// The backend name in errors and traces.
pub(crate) const BACKEND: &str = "postgres";

/// Why a [`PostgresBackend`](crate::PostgresBackend) could not be built.
///
/// Building does not contact the server (connections open on first use), so an
/// unreachable server, a wrong password or a lock table of the wrong shape shows up on the
/// first call, as an [`Error::Backend`](leader_core::Error::Backend) naming the lock.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The connection URL was rejected (`postgres://user[:password]@host[:port]/db[?...]`,
    /// or the `key=value` form). The driver's message comes with the URL's secrets masked
    /// (a [`RedactedError`](leader_core::RedactedError)): it may quote a piece of the URL.
    #[error("invalid PostgreSQL connection URL: {0}")]
    InvalidUrl(#[source] BoxError),
    /// The table name cannot be used.
    #[error("invalid lock table name `{table}`: {reason}")]
    InvalidTable {
        /// The name given.
        table: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A setting of the [`PostgresConfig`](crate::PostgresConfig) cannot work.
    #[error("invalid PostgreSQL backend setting: {0}")]
    InvalidConfig(&'static str),
    /// The URL asks for TLS (`sslmode=require`) but the crate was built without its `tls`
    /// feature.
    #[error("the URL asks for TLS (sslmode=require): enable the `tls` feature of leader-postgres")]
    TlsNotBuilt,
    /// The TLS setup failed: an unreadable CA certificate, or no usable root certificate.
    #[error("cannot set up TLS: {0}")]
    Tls(#[source] io::Error),
    /// The background tokio runtime could not be started.
    #[error("could not start the background tokio runtime: {0}")]
    Runtime(#[source] io::Error),
}

/// What went wrong in one call, in detail; converted by [`OpError::into_failure`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpError {
    /// The driver failed: the network, the server, or an SQL error.
    #[error("{}", describe(.0))]
    Driver(#[from] tokio_postgres::Error),
    /// A column of a returned row could not be read as this backend wrote it.
    #[error("cannot read a lock row: {0}")]
    Decode(#[source] tokio_postgres::Error),
    /// The lock table (or the records' table) exists but is not one this backend made.
    #[error("the table `{table}` has the wrong shape: {problem}")]
    Shape {
        /// The table.
        table: String,
        /// What differs.
        problem: ShapeError,
    },
    /// A lock row holds values this backend never writes.
    #[error("corrupted lock row: {0}")]
    Corrupt(&'static str),
    /// The session opened before the read/write locks' function was in place; it is now
    /// (made by this call): the next session prepares it.
    #[error(
        "the read/write locks' function was missing when this session opened; it is in place now"
    )]
    SharedUnprepared,
    /// No answer within the operation timeout.
    #[error("no answer from PostgreSQL within {0:?}")]
    TimedOut(Duration),
    /// Opening a connection took longer than the connect timeout.
    #[error("connecting to PostgreSQL took longer than {0:?}")]
    ConnectTimedOut(Duration),
    /// The task running the call panicked.
    #[error("the task running the PostgreSQL call panicked")]
    Panicked,
    /// The backend's runtime shut down before the call finished.
    #[error("the runtime running the PostgreSQL call shut down")]
    ShutDown,
    /// A lease longer than the statements take ([`leader_core::MAX_SERVER_LEASE`]).
    #[error(transparent)]
    LeaseTooLong(leader_core::LeaseTooLong),
    /// A list cursor this backend did not make for this listing.
    #[error(transparent)]
    BadCursor(#[from] leader_core::CursorError),
    /// A record stored in a shape this backend never writes, already the core error
    /// ([`leader_core::corrupt_record`]).
    #[error(transparent)]
    Record(leader_core::Error),
    /// A batch renewal found the lock's row locked by another session (an operator's
    /// transaction, say) and went on without it rather than wait.
    #[error("the lock row is locked by another session; not renewed this time")]
    RowLocked,
}

impl From<Stopped> for OpError {
    /// The bridge's reason a call gave no result: `TimedOut` is a blocking call's
    /// operation timeout (an async call keeps its own, on a timer).
    fn from(stopped: Stopped) -> Self {
        match stopped {
            Stopped::TimedOut(after) => OpError::TimedOut(after),
            Stopped::Panicked => OpError::Panicked,
            Stopped::ShutDown => OpError::ShutDown,
        }
    }
}

impl OpError {
    /// Whether retrying later may help.
    pub(crate) fn kind(&self) -> BackendErrorKind {
        match self {
            OpError::Driver(err) => driver_kind(err),
            OpError::TimedOut(_)
            | OpError::ConnectTimedOut(_)
            | OpError::ShutDown
            | OpError::RowLocked
            | OpError::SharedUnprepared => BackendErrorKind::Transient,
            OpError::Decode(_) | OpError::Shape { .. } | OpError::Corrupt(_) => {
                BackendErrorKind::Permanent
            }
            OpError::Panicked
            | OpError::LeaseTooLong(_)
            | OpError::BadCursor(_)
            | OpError::Record(_) => BackendErrorKind::Permanent,
        }
    }

    /// Whether the connection the call used may serve the next call.
    pub(crate) fn keeps_connection(&self) -> bool {
        match self {
            // A statement the server refused leaves the session as it was, unless the
            // table under the prepared statements changed, or the session cannot write
            // (a standby's, or one turned read-only): the next call opens a new session,
            // on whichever host takes writes now.
            OpError::Driver(err) => {
                err.as_db_error().is_some() && !self.table_changed() && !self.read_only()
            }
            OpError::Decode(_)
            | OpError::Corrupt(_)
            | OpError::LeaseTooLong(_)
            | OpError::BadCursor(_)
            | OpError::Record(_)
            | OpError::RowLocked => true,
            _ => false,
        }
    }

    /// The session refused a write (`25006`): it is not on the primary any more, or
    /// never was.
    pub(crate) fn read_only(&self) -> bool {
        matches!(self, OpError::Driver(err)
            if err.code() == Some(&SqlState::READ_ONLY_SQL_TRANSACTION))
    }

    /// The table (or the read/write locks' function) went away or changed under the
    /// prepared statements: make it (and check it) again before the next call.
    pub(crate) fn table_changed(&self) -> bool {
        matches!(self, OpError::Driver(err) if matches!(
            err.code(),
            Some(code) if *code == SqlState::UNDEFINED_TABLE
                || *code == SqlState::UNDEFINED_COLUMN
                || *code == SqlState::UNDEFINED_FUNCTION
                || *code == SqlState::FEATURE_NOT_SUPPORTED // "cached plan must not change result type"
        ))
    }

    /// The backend kit's failure, which names the backend and the lock (or, for a
    /// listing, the prefix); a record's error is named already.
    pub(crate) fn into_failure(self) -> Failure {
        if let OpError::Record(err) = self {
            return Failure::from_error(err);
        }
        Failure::new(self.kind(), self)
    }
}

/// The driver's error with the server's message and SQLSTATE, when the server sent one
/// (the driver's own text is only "db error" then).
fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => err.to_string(),
    }
}

/// SQLSTATE classes that mean "try again later": the connection (08), resources (53),
/// an operator intervening or the server restarting (57: admin or crash shutdown,
/// cannot connect now, query canceled), system errors such as I/O (58), and
/// serialization failures and deadlocks (40).
const TRANSIENT_CLASSES: &[&str] = &["08", "40", "53", "57", "58"];

/// Single codes outside those classes that pass: a lock not available (`55P03`), and a
/// read-only transaction (`25006`: a standby during a failover).
const TRANSIENT_CODES: &[SqlState] = &[
    SqlState::LOCK_NOT_AVAILABLE,
    SqlState::READ_ONLY_SQL_TRANSACTION,
];

/// Transient for a server that cannot be reached, restarts or is overloaded; permanent
/// for what needs a person: authentication (28), permissions (42501), a missing or
/// different table (42P01, 42703), a missing database (3D000), bad data (22, 23).
fn driver_kind(err: &tokio_postgres::Error) -> BackendErrorKind {
    if let Some(code) = err.code() {
        let class = code.code().get(..2).unwrap_or_default();
        return if TRANSIENT_CLASSES.contains(&class) || TRANSIENT_CODES.contains(code) {
            BackendErrorKind::Transient
        } else {
            BackendErrorKind::Permanent
        };
    }
    if err.is_closed() {
        return BackendErrorKind::Transient;
    }
    // Not an answer of the server: the network (refused, reset, unreachable), unless a
    // TLS handshake failed (rustls reports a bad certificate as invalid data).
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::InvalidData => BackendErrorKind::Permanent,
                _ => BackendErrorKind::Transient,
            };
        }
        source = cause.source();
    }
    // The rest (an unexpected message, an error while authenticating that the server did
    // not send) is taken as transient: a restart or a proxy in between.
    BackendErrorKind::Transient
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_codes() {
        let transient = |code: &str| {
            let class = code.get(..2).unwrap_or_default();
            TRANSIENT_CLASSES.contains(&class)
                || TRANSIENT_CODES.contains(&SqlState::from_code(code))
        };
        for code in [
            "57P01", "57P02", "57P03", "08006", "08001", "40001", "40P01", "53300", "55P03",
            "57014",
        ] {
            assert!(transient(code), "{code}");
        }
        for code in [
            "28000", "28P01", "42501", "42P01", "42703", "3D000", "22003", "23505", "42601",
        ] {
            assert!(!transient(code), "{code}");
        }
    }

    #[test]
    fn converts_to_a_backend_error_naming_the_lock() {
        let key = "nightly";
        let err = OpError::TimedOut(Duration::from_secs(1))
            .into_failure()
            .named(BACKEND, key);
        assert_eq!(err.lock_key(), Some("nightly"));
        assert!(err.is_transient());
        assert!(err.to_string().contains("postgres"), "{err}");
        let err = OpError::Corrupt("a negative fencing token")
            .into_failure()
            .named(BACKEND, key);
        assert!(!err.is_transient());
    }
}
