//! Errors: the public [`ConnectError`] of the constructors, and the private detailed
//! [`OpError`] of one call, classified and converted into `leader_core::Error::Backend`
//! naming the lock.

use std::io;
use std::time::Duration;

use leader_core::BackendErrorKind;
use leader_core::kit::Failure;
use leader_runtime::Stopped;

/// The backend name in errors and traces.
pub(crate) const BACKEND: &str = "etcd";

/// Why an [`EtcdBackend`](crate::EtcdBackend) could not be built.
///
/// Building does not contact the cluster (the client connects on first use), so an
/// unreachable cluster or a wrong password shows up on the first call, as an
/// [`Error::Backend`](leader_core::Error::Backend) naming the lock.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL was rejected (`etcd://[user[:password]@]host:port[,host:port...][/prefix]`,
    /// or `etcds://` for TLS). The message never quotes the password.
    #[error("invalid etcd URL: {0}")]
    InvalidUrl(String),
    /// A setting of the [`EtcdConfig`](crate::EtcdConfig) cannot work.
    #[error("invalid etcd backend setting: {0}")]
    InvalidConfig(&'static str),
    /// The URL asks for TLS (`etcds://`) but the crate was built without its `tls` feature.
    #[error("the URL asks for TLS (etcds://): enable the `tls` feature of leader-etcd")]
    TlsNotBuilt,
    /// The background tokio runtime could not be started.
    #[error("could not start the background tokio runtime: {0}")]
    Runtime(#[source] io::Error),
}

/// What went wrong in one call, in detail; converted by [`OpError::into_failure`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpError {
    /// The client failed: the network, a member, the cluster (no leader, no quorum), or a
    /// refusal (authentication, permissions).
    #[error("{}", describe(.0))]
    Client(#[from] etcd_client::Error),
    /// A key at the lock's path holds a value this backend never writes.
    #[error("corrupted lock record at `{key}`: {problem}")]
    Corrupt {
        /// The etcd key.
        key: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A record (not a lock) in a shape no backend writes: the error of
    /// [`leader_core::corrupt_record`], and the record is never overwritten.
    #[error("corrupted record: {what}")]
    CorruptRecord {
        /// The record's name.
        name: leader_core::LockName,
        /// What is wrong with it.
        what: &'static str,
    },
    /// The cluster answered with something this backend cannot read (a missing answer to a
    /// transaction's operation).
    #[error("unexpected answer from etcd: {0}")]
    Protocol(&'static str),
    /// No answer within the operation timeout.
    #[error("no answer from etcd within {0:?}")]
    TimedOut(Duration),
    /// The task running the call panicked.
    #[error("the task running the etcd call panicked")]
    Panicked,
    /// The backend's runtime shut down before the call finished.
    #[error("the runtime running the etcd call shut down")]
    ShutDown,
    /// A lease longer than etcd's longest TTL.
    #[error(transparent)]
    LeaseTooLong(leader_core::LeaseTooLong),
    /// The fencing counter could not be moved past the stored one (another client kept
    /// writing a larger one).
    #[error("the fencing counter kept moving; try again")]
    FenceContended,
    /// A read/write lock's record kept changing under the call (other clients' calls
    /// landing between each read and write).
    #[error("the read/write lock kept changing; try again")]
    SharedContended,
    /// A list cursor this backend did not make for this listing.
    #[error(transparent)]
    BadCursor(#[from] leader_core::CursorError),
}

impl From<Stopped> for OpError {
    /// The bridge's reason a call gave no result. The backend gives it no deadline (each
    /// call keeps its own), so `TimedOut` does not come from there; it maps to the
    /// timeout it would be.
    fn from(stopped: Stopped) -> Self {
        match stopped {
            Stopped::TimedOut(after) => OpError::TimedOut(after),
            Stopped::Panicked => OpError::Panicked,
            Stopped::ShutDown => OpError::ShutDown,
        }
    }
}

impl OpError {
    /// A corrupted record at `key`.
    pub(crate) fn corrupt(key: &[u8], problem: &'static str) -> Self {
        OpError::Corrupt {
            key: String::from_utf8_lossy(key).into_owned(),
            problem,
        }
    }

    /// Whether the request never left this host: a member refused the connection (it is
    /// down), so nothing of it reached the cluster and another member may be asked.
    pub(crate) fn never_sent(&self) -> bool {
        // The client's error gives no source: start from the status or transport error
        // it holds.
        let mut cause: Option<&(dyn std::error::Error + 'static)> = match self {
            OpError::Client(etcd_client::Error::GRpcStatus(status)) => Some(status),
            OpError::Client(etcd_client::Error::TransportError(err)) => Some(err),
            _ => None,
        };
        while let Some(error) = cause {
            if error
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::ConnectionRefused)
            {
                return true;
            }
            cause = error.source();
        }
        false
    }

    /// Whether the request was surely not carried out: it never left this host, or the
    /// cluster refused it before acting on it (no leader to propose it to, a request it
    /// refuses as invalid or not permitted). A timeout, a broken connection or any other
    /// answer may come after the request was applied.
    pub(crate) fn not_carried_out(&self) -> bool {
        use tonic::Code;
        if self.never_sent() {
            return true;
        }
        let OpError::Client(etcd_client::Error::GRpcStatus(status)) = self else {
            return false;
        };
        match status.code() {
            Code::InvalidArgument
            | Code::PermissionDenied
            | Code::Unauthenticated
            | Code::FailedPrecondition
            | Code::NotFound
            | Code::AlreadyExists
            | Code::OutOfRange
            | Code::Unimplemented => true,
            Code::Unavailable => status.message().contains("no leader"),
            _ => false,
        }
    }

    /// Whether etcd refused a lease id as one that already exists (another client's).
    pub(crate) fn lease_exists(&self) -> bool {
        matches!(self, OpError::Client(etcd_client::Error::GRpcStatus(status))
            if status.code() == tonic::Code::FailedPrecondition
                && status.message().contains("lease already exists"))
    }

    /// Whether retrying `err` later may help.
    pub(crate) fn kind_of(err: &etcd_client::Error) -> BackendErrorKind {
        client_kind(err)
    }

    /// Whether retrying later may help.
    pub(crate) fn kind(&self) -> BackendErrorKind {
        match self {
            OpError::Client(err) => client_kind(err),
            OpError::TimedOut(_)
            | OpError::ShutDown
            | OpError::FenceContended
            | OpError::SharedContended => BackendErrorKind::Transient,
            OpError::Corrupt { .. }
            | OpError::CorruptRecord { .. }
            | OpError::Protocol(_)
            | OpError::Panicked
            | OpError::LeaseTooLong(_)
            | OpError::BadCursor(_) => BackendErrorKind::Permanent,
        }
    }

    /// The backend kit's failure, which names the backend and the lock (or, for a
    /// listing, the prefix); a corrupted record's error is the one every backend gives
    /// ([`leader_core::corrupt_record`]).
    pub(crate) fn into_failure(self) -> Failure {
        if let OpError::CorruptRecord { name, what } = &self {
            return Failure::from_error(leader_core::corrupt_record(BACKEND, name, *what));
        }
        Failure::new(self.kind(), self)
    }
}

/// The client's error with the gRPC status' code and message when the cluster sent one.
fn describe(err: &etcd_client::Error) -> String {
    match err {
        etcd_client::Error::GRpcStatus(status) => {
            format!("etcd answered {:?}: {}", status.code(), status.message())
        }
        other => other.to_string(),
    }
}

/// Transient for a cluster that cannot be reached, has no leader or quorum, restarts or is
/// overloaded; permanent for what needs a person: authentication, permissions, a request
/// the cluster refuses as invalid.
fn client_kind(err: &etcd_client::Error) -> BackendErrorKind {
    use tonic::Code;
    if tls_refused(err) {
        return BackendErrorKind::Permanent;
    }
    match err {
        etcd_client::Error::GRpcStatus(status) => match status.code() {
            Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::ResourceExhausted
            | Code::Cancelled
            | Code::Unknown
            | Code::Internal => BackendErrorKind::Transient,
            // A lease that expired or was revoked between our grant and our transaction
            // (etcd answers NotFound): the next attempt grants another.
            Code::NotFound | Code::FailedPrecondition
                if status.message().contains("lease not found") =>
            {
                BackendErrorKind::Transient
            }
            _ => BackendErrorKind::Permanent,
        },
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
            BackendErrorKind::Transient
        }
        etcd_client::Error::WatchError(_) | etcd_client::Error::LeaseKeepAliveError(_) => {
            BackendErrorKind::Transient
        }
        // An endpoint or option the client refuses, a bad message: nothing a retry fixes.
        _ => BackendErrorKind::Permanent,
    }
}

/// Whether etcd answered that the lease a request named does not exist (it expired, was
/// revoked, or was never granted).
pub(crate) fn is_lease_not_found(err: &etcd_client::Error) -> bool {
    matches!(err, etcd_client::Error::GRpcStatus(status)
        if matches!(status.code(), tonic::Code::NotFound | tonic::Code::FailedPrecondition)
            && status.message().contains("lease not found"))
}

/// Whether the member's certificate was refused (rustls reports it as invalid data under
/// the status "unavailable"): a configuration to fix, not a member to wait for.
fn tls_refused(err: &etcd_client::Error) -> bool {
    // The client's error does not name its cause as a source: start from what it wraps.
    let mut source: Option<&(dyn std::error::Error + 'static)> = match err {
        etcd_client::Error::GRpcStatus(status) => Some(status),
        etcd_client::Error::TransportError(transport) => Some(transport),
        etcd_client::Error::IoError(io) => Some(io),
        _ => None,
    };
    while let Some(cause) = source {
        if cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::InvalidData)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified() {
        let status = |code, message: &str| {
            etcd_client::Error::GRpcStatus(tonic::Status::new(code, message.to_owned()))
        };
        for code in [tonic::Code::Unavailable, tonic::Code::DeadlineExceeded] {
            assert_eq!(
                client_kind(&status(code, "no leader")),
                BackendErrorKind::Transient
            );
        }
        for code in [
            tonic::Code::Unauthenticated,
            tonic::Code::PermissionDenied,
            tonic::Code::InvalidArgument,
        ] {
            assert_eq!(
                client_kind(&status(code, "no")),
                BackendErrorKind::Permanent
            );
        }
        // What etcd answers for a lease that ended between its grant and the transaction
        // that puts a lock on it (gRPC code 5).
        let gone = status(
            tonic::Code::NotFound,
            "etcdserver: requested lease not found",
        );
        assert_eq!(client_kind(&gone), BackendErrorKind::Transient);
        assert!(is_lease_not_found(&gone));
        let exists = status(
            tonic::Code::FailedPrecondition,
            "etcdserver: lease already exists",
        );
        assert!(OpError::Client(exists).lease_exists());
        assert!(!is_lease_not_found(&status(tonic::Code::NotFound, "key")));
    }

    #[test]
    fn only_a_refused_connection_is_a_request_never_sent() {
        let with_source = |kind: io::ErrorKind| {
            let mut status = tonic::Status::unavailable("tcp connect error");
            status.set_source(std::sync::Arc::new(io::Error::from(kind)));
            OpError::Client(etcd_client::Error::GRpcStatus(status))
        };
        assert!(with_source(io::ErrorKind::ConnectionRefused).never_sent());
        // A reset or a timeout may come after the request went out.
        assert!(!with_source(io::ErrorKind::ConnectionReset).never_sent());
        assert!(!with_source(io::ErrorKind::TimedOut).never_sent());
        let bare = tonic::Status::unavailable("etcdserver: no leader");
        assert!(!OpError::Client(etcd_client::Error::GRpcStatus(bare)).never_sent());
        assert!(!OpError::TimedOut(Duration::from_secs(1)).never_sent());
    }

    #[test]
    fn only_a_refusal_before_acting_is_a_request_not_carried_out() {
        let status = |code, message: &str| {
            OpError::Client(etcd_client::Error::GRpcStatus(tonic::Status::new(
                code,
                message.to_owned(),
            )))
        };
        assert!(status(tonic::Code::Unavailable, "etcdserver: no leader").not_carried_out());
        assert!(status(tonic::Code::PermissionDenied, "no").not_carried_out());
        // A proposal that timed out, a dropped connection, our own timeout: perhaps applied.
        for maybe in [
            status(tonic::Code::Unavailable, "etcdserver: request timed out"),
            status(tonic::Code::Unknown, "transport error"),
            status(tonic::Code::DeadlineExceeded, "deadline"),
            OpError::TimedOut(Duration::from_secs(1)),
        ] {
            assert!(!maybe.not_carried_out(), "{maybe}");
        }
    }

    #[test]
    fn converts_to_a_backend_error_naming_the_lock() {
        let err = OpError::TimedOut(Duration::from_secs(1))
            .into_failure()
            .named(BACKEND, "nightly");
        assert_eq!(err.lock_key(), Some("nightly"));
        assert!(err.is_transient());
        assert!(err.to_string().contains("etcd"), "{err}");
        let err = OpError::corrupt(b"leader/lock/x", "not an owner token")
            .into_failure()
            .named(BACKEND, "x");
        assert!(!err.is_transient());
    }
}
