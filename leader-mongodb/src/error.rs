//! Errors: the public [`ConnectError`] of the constructors, and the private detailed
//! operation error that becomes a `leader_core::Error::Backend` naming the lock.

use std::time::Duration;

use leader_core::kit::Failure;
use leader_core::{BackendErrorKind, BoxError};
use mongodb::error::{Error as DriverError, ErrorKind, WriteFailure};

use crate::document::ShapeError;
use leader_runtime::Stopped;

/// The backend name in errors and traces.
pub(crate) const BACKEND: &str = "mongodb";

/// Why a [`MongoBackend`](crate::MongoBackend) could not be built.
///
/// Building does not contact the server (the driver connects lazily), so an unreachable
/// server shows up on the first operation, as a transient backend error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The connection string was rejected, or the options it gives are inconsistent. The
    /// driver's message comes with the string's secrets masked (a
    /// [`RedactedError`](leader_core::RedactedError)): it may quote a piece of the string.
    #[error("invalid MongoDB connection string: {0}")]
    InvalidUri(#[source] BoxError),
    /// A `mongodb+srv://` connection string could not be resolved (the driver's message
    /// masked likewise).
    #[error("could not resolve the MongoDB connection string: {0}")]
    Resolve(#[source] BoxError),
    /// The background tokio runtime could not be started.
    #[error("could not start the background tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// Parsing the connection string did not finish within the operation timeout.
    #[error("parsing the MongoDB connection string took longer than {0:?}")]
    TimedOut(Duration),
    /// The background runtime stopped (or the driver panicked) while building the client.
    #[error("the background runtime stopped while building the MongoDB client")]
    Interrupted,
}

impl From<Stopped> for ConnectError {
    fn from(stopped: Stopped) -> Self {
        match stopped {
            Stopped::TimedOut(after) => ConnectError::TimedOut(after),
            Stopped::Panicked | Stopped::ShutDown => ConnectError::Interrupted,
        }
    }
}

/// What went wrong in one operation, in detail; converted by [`OpError::into_failure`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpError {
    /// The driver failed (network, server selection, server error, ...).
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// The stored document is not a lock document (someone else wrote there).
    #[error("the lock document has the wrong shape: {0}")]
    Shape(#[from] ShapeError),
    /// No answer within the operation timeout; the operation goes on in the background.
    #[error("no answer from MongoDB within {0:?}")]
    TimedOut(Duration),
    /// An upsert returned no document and re-reading found none, on every attempt.
    #[error("the server returned no lock document after an upsert, {0} times")]
    NoDocument(usize),
    /// The task running the operation panicked.
    #[error("the task running the MongoDB operation panicked")]
    Panicked,
    /// The runtime running the operation shut down before it finished.
    #[error("the runtime running the MongoDB operation shut down")]
    ShutDown,
    /// A lease longer than this backend holds (see `time::lease_millis`).
    #[error(transparent)]
    LeaseTooLong(#[from] leader_core::LeaseTooLong),
    /// A list cursor this backend did not make for this listing.
    #[error(transparent)]
    BadCursor(#[from] leader_core::CursorError),
    /// A record stored in a shape this backend never writes, already the core error
    /// ([`leader_core::corrupt_record`]).
    #[error(transparent)]
    Record(leader_core::Error),
}

impl From<Stopped> for OpError {
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
            OpError::Shape(_)
            | OpError::Panicked
            | OpError::LeaseTooLong(_)
            | OpError::BadCursor(_)
            | OpError::Record(_) => BackendErrorKind::Permanent,
            OpError::TimedOut(_) | OpError::NoDocument(_) | OpError::ShutDown => {
                BackendErrorKind::Transient
            }
        }
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

/// The duplicate-key error a losing upsert gets when two upserts insert one `_id` at once.
pub(crate) fn is_duplicate_key(err: &DriverError) -> bool {
    server_code(err) == Some(DUPLICATE_KEY)
}

const DUPLICATE_KEY: i32 = 11000;

/// Server error codes that mean "try again later": time limits, elections, shutdowns,
/// network trouble seen by the server, stale routing in a sharded cluster, write
/// conflicts, write concern timeouts. The retryable codes of the drivers' retryable-writes
/// and retryable-reads specifications are all here.
const TRANSIENT_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    50,    // MaxTimeMSExpired
    63,    // StaleShardVersion
    64,    // WriteConcernFailed (wtimeout)
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    112,   // WriteConflict
    133,   // FailedToSatisfyReadPreference
    134,   // ReadConcernMajorityNotAvailableYet
    150,   // StaleEpoch
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10058, // LegacyNotPrimary
    10107, // NotWritablePrimary
    11000, // DuplicateKey (a racing upsert that lost twice)
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13388, // StaleConfig
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

fn server_code(err: &DriverError) -> Option<i32> {
    match err.kind.as_ref() {
        ErrorKind::Command(command) => Some(command.code),
        ErrorKind::Write(WriteFailure::WriteError(write)) => Some(write.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => Some(concern.code),
        _ => None,
    }
}

/// Transient for an unreachable or restarting server, permanent for what needs a person
/// (credentials, invalid commands, unexpected data).
fn driver_kind(err: &DriverError) -> BackendErrorKind {
    if err.contains_label("RetryableWriteError") || err.contains_label("TransientTransactionError")
    {
        return BackendErrorKind::Transient;
    }
    match err.kind.as_ref() {
        ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::ServerSelection { .. }
        | ErrorKind::DnsResolve { .. } => BackendErrorKind::Transient,
        ErrorKind::Command(_) | ErrorKind::Write(_) => match server_code(err) {
            Some(code) if TRANSIENT_CODES.contains(&code) => BackendErrorKind::Transient,
            _ => BackendErrorKind::Permanent,
        },
        _ => BackendErrorKind::Permanent,
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::Arc;

    use super::*;

    fn io_error() -> DriverError {
        DriverError::from(ErrorKind::Io(Arc::new(
            io::ErrorKind::ConnectionRefused.into(),
        )))
    }

    #[test]
    fn classifies_network_trouble_as_transient_and_bad_arguments_as_permanent() {
        assert_eq!(driver_kind(&io_error()), BackendErrorKind::Transient);
        let invalid = mongodb::options::ConnectionString::parse("postgres://x").unwrap_err();
        assert_eq!(driver_kind(&invalid), BackendErrorKind::Permanent);
        assert!(!is_duplicate_key(&invalid));
    }

    fn command_error(code: i32, name: &str) -> DriverError {
        let doc = mongodb::bson::doc! { "code": code, "codeName": name, "errmsg": name };
        let command = mongodb::bson::from_document(doc).unwrap();
        DriverError::from(ErrorKind::Command(command))
    }

    fn write_concern_error(code: i32, name: &str) -> DriverError {
        let doc = mongodb::bson::doc! { "code": code, "codeName": name, "errmsg": name };
        let concern = mongodb::bson::from_document(doc).unwrap();
        DriverError::from(ErrorKind::Write(WriteFailure::WriteConcernError(concern)))
    }

    #[test]
    fn each_server_code_gets_its_class() {
        let transient = [
            (10107, "NotWritablePrimary"),
            (13388, "StaleConfig"),
            (11600, "InterruptedAtShutdown"),
            (11602, "InterruptedDueToReplStateChange"),
            (13435, "NotPrimaryNoSecondaryOk"),
            (13436, "NotPrimaryOrSecondary"),
            (189, "PrimarySteppedDown"),
            (91, "ShutdownInProgress"),
            (7, "HostNotFound"),
            (6, "HostUnreachable"),
            (89, "NetworkTimeout"),
            (9001, "SocketException"),
            (262, "ExceededTimeLimit"),
            (63, "StaleShardVersion"),
            (150, "StaleEpoch"),
            (133, "FailedToSatisfyReadPreference"),
            (134, "ReadConcernMajorityNotAvailableYet"),
            (10058, "LegacyNotPrimary"),
            (50, "MaxTimeMSExpired"),
            (112, "WriteConflict"),
        ];
        for (code, name) in transient {
            assert_eq!(
                driver_kind(&command_error(code, name)),
                BackendErrorKind::Transient,
                "{name}"
            );
        }
        assert_eq!(
            driver_kind(&write_concern_error(64, "WriteConcernFailed")),
            BackendErrorKind::Transient
        );
        assert_eq!(
            driver_kind(&write_concern_error(91, "ShutdownInProgress")),
            BackendErrorKind::Transient
        );
        let permanent = [
            (13, "Unauthorized"),
            (18, "AuthenticationFailed"),
            (2, "BadValue"),
            (9, "FailedToParse"),
            (40324, "Unrecognized pipeline stage name"),
        ];
        for (code, name) in permanent {
            assert_eq!(
                driver_kind(&command_error(code, name)),
                BackendErrorKind::Permanent,
                "{name}"
            );
        }
    }

    #[test]
    fn converts_to_a_backend_error_naming_the_lock() {
        let key = "nightly";
        let err = OpError::Shape(ShapeError::Missing("owner"))
            .into_failure()
            .named(BACKEND, key);
        assert_eq!(err.lock_key(), Some("nightly"));
        assert!(!err.is_transient());
        let leader_core::Error::Backend(backend) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(backend.backend(), "mongodb");
        assert!(err.to_string().contains("owner"), "{err}");

        let err = OpError::TimedOut(Duration::from_secs(1))
            .into_failure()
            .named(BACKEND, key);
        assert!(err.is_transient());
        let err = OpError::Driver(io_error())
            .into_failure()
            .named(BACKEND, key);
        assert!(err.is_transient());
    }
}
