//! Errors: [`ConnectError`] at construction, and the crate's detailed failures, which
//! become `leader_core::Error::Backend` with the lock key and a classification.

use leader_core::kit::Failure;
use leader_core::{BackendError, BackendErrorKind, BoxError, Error, RedactedError, UrlSecrets};
use redis::{ErrorKind, RedisError, ServerErrorKind};

/// The backend name in errors and traces.
pub(crate) const BACKEND: &str = "redis";

/// Why a [`RedisBackend`](crate::RedisBackend) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// A URL was not understood.
    #[error("invalid redis URL `{url}`: {source}")]
    InvalidUrl {
        /// The URL as [`redacted_url`](crate::redacted_url) shows it: no password.
        url: String,
        /// What the redis driver said, the URL's secrets masked (a
        /// [`RedactedError`](leader_core::RedactedError)).
        #[source]
        source: BoxError,
    },
    /// A cluster was given no node URLs.
    #[error("a redis cluster needs at least one node URL")]
    NoClusterNodes,
    /// A backend on a caller's cluster client was given no node clients for its release
    /// subscription while release notifications are on.
    #[error(
        "release notifications on a redis cluster client need at least one node client to subscribe through (or turn release notifications off)"
    )]
    NoSubscriptionNodes,
    /// The key prefix cannot be used.
    #[error("invalid key prefix {prefix:?}: {reason}")]
    InvalidKeyPrefix {
        /// The rejected prefix.
        prefix: String,
        /// Why.
        reason: &'static str,
    },
    /// A timeout was zero.
    #[error("{0} must be longer than zero")]
    ZeroTimeout(&'static str),
    /// The replica acknowledgement setting cannot be used (see
    /// [`RedisConfig::with_replica_acks`](crate::RedisConfig::with_replica_acks)).
    #[error("invalid replica acknowledgement ({replicas} replicas within {timeout:?}): {reason}")]
    InvalidReplicaAcks {
        /// The replicas asked for.
        replicas: u32,
        /// The `WAIT` timeout asked for.
        timeout: std::time::Duration,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// A query parameter of this crate's in a URL has a bad value (`replica_acks`,
    /// `replica_ack_timeout`).
    #[error("invalid URL parameter {name}={value:?}: {reason}")]
    InvalidUrlParameter {
        /// The parameter.
        name: &'static str,
        /// Its value (at most 32 characters of it).
        value: String,
        /// What was expected.
        reason: &'static str,
    },
}

impl ConnectError {
    /// The driver refused one of `urls` (a cluster's nodes, or one server's URL): each
    /// shown as [`redacted_url`](crate::redacted_url) shows it, and the driver's message
    /// masked with the secrets of every URL.
    pub(crate) fn invalid_url(urls: &[&str], source: &RedisError) -> Self {
        let shown: Vec<String> = urls.iter().map(|url| crate::redacted_url(url)).collect();
        let mut redacted = RedactedError::new(source, &UrlSecrets::default());
        for url in urls {
            redacted = RedactedError::new(&redacted, &UrlSecrets::from_url(url));
        }
        ConnectError::InvalidUrl {
            url: shown.join(","),
            source: Box::new(redacted),
        }
    }
}

/// What went wrong in one backend call, in detail. Converted to
/// `leader_core::Error::Backend` by [`OpError::into_core`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpError {
    /// The server could not be reached or did not answer in time.
    #[error("redis is unreachable: {0}")]
    Unreachable(#[source] RedisError),
    /// The server is busy or in failover; retrying later may work.
    #[error("redis is temporarily unavailable: {0}")]
    Unavailable(#[source] RedisError),
    /// Someone stored a value of another type at one of the lock's keys.
    #[error("a lock key holds a value of the wrong type (not written by this library): {0}")]
    WrongType(#[source] RedisError),
    /// A Lua script failed on the server.
    #[error("the {op} script failed on the server: {source}")]
    Script {
        op: &'static str,
        #[source]
        source: RedisError,
    },
    /// The TLS handshake failed (an untrusted or mismatched certificate, ...).
    #[error("the TLS handshake with redis failed: {0}")]
    Tls(#[source] RedisError),
    /// Any other refusal by the server or the driver (authentication, permissions, ...).
    #[error("redis refused the {op} call: {source}")]
    Refused {
        op: &'static str,
        #[source]
        source: RedisError,
    },
    /// A command inside a script failed on one key (another type of value stored there).
    #[error("the {op} script failed on this key: {message}")]
    InScript { op: &'static str, message: String },
    /// A call that renewed many leases failed as a whole: each lease's error says so.
    #[error("{message}")]
    Pipeline {
        kind: BackendErrorKind,
        message: String,
    },
    /// The reply did not have the shape the script returns.
    #[error("unexpected reply to {op}: {reply}")]
    BadReply { op: &'static str, reply: String },
    /// The lock record has a missing or unreadable field.
    #[error("corrupted lock record: field `{field}` is missing or invalid")]
    Corrupt { field: &'static str },
    /// A record (not a lock) in a shape no backend writes: reported with
    /// [`leader_core::corrupt_record`], never overwritten.
    #[error("corrupted record: {what}")]
    CorruptRecord { what: String },
    /// A read/write lock's record in a shape this library never writes (another type of
    /// value at its key, a value that is not its JSON): reported, never overwritten.
    #[error("corrupted read/write lock record: {what}")]
    CorruptShared { what: String },
    /// The lock hash exists without an expiry past its own end, so it would never be freed.
    #[error("corrupted lock record: the key has no expiry and its own end has passed")]
    NoExpiry,
    /// One slot's lock hash of a group exists without an expiry past its own end (the error
    /// names it).
    #[error("corrupted lock record: the key has no expiry and its own end has passed")]
    NoExpiryAt { key: String },
    /// Fewer replicas than asked acknowledged the write of an acquire or a renewal within
    /// the `WAIT` timeout (an acquire's grant is released).
    #[error("the {op} reached {acked} of {wanted} replicas within {timeout:?} (WAIT){released}")]
    NotAcknowledged {
        op: &'static str,
        wanted: u32,
        acked: i64,
        timeout: std::time::Duration,
        released: &'static str,
    },
    /// The `WAIT` after an acquire or a renewal failed (an acquire's grant is released).
    #[error("the WAIT for replicas after the {op} failed{released}: {source}")]
    AckFailed {
        op: &'static str,
        released: &'static str,
        #[source]
        source: RedisError,
    },
    /// A listing was given a cursor this backend did not make (cut to 64 characters).
    #[error("not a cursor of a redis listing here: {cursor:?}")]
    BadCursor { cursor: String },
}

impl OpError {
    /// Classifies a driver error from the `op` call.
    ///
    /// Transient: the network (refused, reset, closed, timed out — also during a TLS
    /// handshake) and a server that is starting, failing over or overloaded (`LOADING`,
    /// `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `READONLY`, `MOVED`/`ASK`,
    /// `NOSCRIPT` after a restart emptied the script cache, `OOM`, `NOREPLICAS`,
    /// `MISCONF`, `max number of clients reached`). Permanent: what needs a person — a
    /// certificate, credentials, permissions, foreign data at a lock key, a script error.
    pub(crate) fn from_redis(op: &'static str, err: RedisError) -> Self {
        // The network first: a reset or timeout in a TLS handshake is the network's too.
        if err.is_timeout() || err.is_connection_dropped() || err.is_connection_refusal() {
            return OpError::Unreachable(err);
        }
        if is_tls_error(&err) {
            return OpError::Tls(err);
        }
        if err.is_io_error() {
            return OpError::Unreachable(err);
        }
        match err.kind() {
            ErrorKind::ClusterConnectionNotFound => OpError::Unreachable(err),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ReadOnly
                | ServerErrorKind::Moved
                | ServerErrorKind::Ask
                | ServerErrorKind::NoScript,
            ) => OpError::Unavailable(err),
            _ => match err.code() {
                Some("WRONGTYPE") => OpError::WrongType(err),
                Some("BUSY" | "OOM" | "NOREPLICAS" | "LOADING" | "MISCONF") => {
                    OpError::Unavailable(err)
                }
                _ if is_client_limit(&err) => OpError::Unavailable(err),
                _ if is_script_error(&err) => OpError::Script { op, source: err },
                _ => OpError::Refused { op, source: err },
            },
        }
    }

    /// A reply that does not match what the script returns.
    pub(crate) fn bad_reply(op: &'static str, reply: &redis::Value) -> Self {
        OpError::BadReply {
            op,
            reply: reply_text(reply),
        }
    }

    /// Transient when retrying later may work.
    pub(crate) fn kind(&self) -> BackendErrorKind {
        match self {
            OpError::Unreachable(_)
            | OpError::Unavailable(_)
            | OpError::NotAcknowledged { .. }
            | OpError::AckFailed { .. } => BackendErrorKind::Transient,
            OpError::Pipeline { kind, .. } => *kind,
            _ => BackendErrorKind::Permanent,
        }
    }

    /// The kit's failure, its error naming the lock `key` (a Redis key): the kit hands it
    /// on as it is.
    pub(crate) fn into_failure(self, key: &str) -> Failure {
        Failure::from_error(self.into_core(key))
    }

    /// The toolkit's error, naming the lock `key`.
    pub(crate) fn into_core(self, key: &str) -> Error {
        let kind = self.kind();
        let key = match &self {
            OpError::NoExpiryAt { key } => key.clone(),
            _ => key.to_owned(),
        };
        Error::Backend(BackendError::new(BACKEND, key, kind, self))
    }
}

/// A reply for an error message, cut to about 200 bytes.
pub(crate) fn reply_text(reply: &redis::Value) -> String {
    let mut text = format!("{reply:?}");
    if text.len() > 200 {
        let cut = (0..=200).rev().find(|i| text.is_char_boundary(*i));
        text.truncate(cut.unwrap_or(0));
        text.push('…');
    }
    text
}

/// A connection found dead when used (closed, reset, refused by a restarted server), as
/// opposed to a server that does not answer in time. Such a call is sent once more on a
/// new connection: every script may run twice without harm, since a repeated acquire by
/// the same owner token re-acquires and a repeated release finds nothing to release.
pub(crate) fn is_dead_connection(err: &RedisError) -> bool {
    err.is_connection_dropped() && !err.is_timeout()
}

/// rustls reports certificate problems as I/O errors of kind `InvalidData`; only the
/// message tells them apart from a dropped connection.
fn is_tls_error(err: &RedisError) -> bool {
    if !err.is_io_error() {
        return false;
    }
    let text = err.to_string();
    text.contains("certificate") || text.contains("handshake")
}

/// `ERR max number of clients reached`: the server is full now, not refusing for good.
fn is_client_limit(err: &RedisError) -> bool {
    err.to_string().contains("max number of clients reached")
}

fn is_script_error(err: &RedisError) -> bool {
    let text = err.to_string();
    text.contains("@user_script") || text.contains("script:")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's error reply, as the driver hands it over.
    fn reply(line: &str) -> RedisError {
        let value = redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).unwrap();
        value.extract_error().unwrap_err()
    }

    fn io(kind: std::io::ErrorKind, message: &str) -> RedisError {
        RedisError::from(std::io::Error::new(kind, message.to_owned()))
    }

    #[test]
    fn each_kind_of_trouble_gets_its_class() {
        use std::io::ErrorKind as Io;
        let transient = [
            reply("NOSCRIPT No matching script. Please use EVAL."),
            reply("LOADING Redis is loading the dataset in memory"),
            reply(
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
            ),
            reply("TRYAGAIN Multiple keys request during rehashing of slot"),
            reply(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ),
            reply("READONLY You can't write against a read only replica."),
            reply("ERR max number of clients reached"),
            reply(
                "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
            ),
            reply("CLUSTERDOWN The cluster is down"),
            reply("MOVED 3999 127.0.0.1:6381"),
            reply("OOM command not allowed when used memory > 'maxmemory'."),
            reply("NOREPLICAS Not enough good replicas to write."),
            io(Io::ConnectionRefused, "connection refused"),
            io(
                Io::ConnectionReset,
                "connection reset by peer during the TLS handshake",
            ),
            io(
                Io::UnexpectedEof,
                "peer closed connection without sending TLS close_notify: handshake",
            ),
            io(Io::TimedOut, "TLS handshake timed out"),
            io(Io::BrokenPipe, "broken pipe"),
        ];
        for err in transient {
            let text = err.to_string();
            assert_eq!(
                OpError::from_redis("acquire", err).kind(),
                BackendErrorKind::Transient,
                "{text}"
            );
        }
        let permanent = [
            reply("WRONGTYPE Operation against a key holding the wrong kind of value"),
            reply("NOPERM User has no permissions to run the 'evalsha' command"),
            reply("NOAUTH Authentication required."),
            reply("WRONGPASS invalid username-password pair or user is disabled."),
            reply("ERR unknown command 'EVALSHA'"),
            reply("ERR user_script:12: Script attempted to access nonexistent global variable"),
            io(Io::InvalidData, "invalid peer certificate: UnknownIssuer"),
        ];
        for err in permanent {
            let text = err.to_string();
            assert_eq!(
                OpError::from_redis("acquire", err).kind(),
                BackendErrorKind::Permanent,
                "{text}"
            );
        }
    }

    #[test]
    fn classification() {
        let io = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let failure = OpError::from_redis("acquire", io);
        assert_eq!(failure.kind(), BackendErrorKind::Transient);
        let err = failure.into_core("leader:{job}");
        assert!(err.is_transient());
        assert_eq!(err.lock_key(), Some("leader:{job}"));

        let corrupt = OpError::Corrupt { field: "fence" }.into_core("leader:{job}");
        assert!(!corrupt.is_transient());
        assert!(corrupt.to_string().contains("leader:{job}"), "{corrupt}");
    }
}
