//! [`RedisConfig`]: timeouts, key prefix and connection settings of a [`RedisBackend`](crate::RedisBackend).

use std::fmt;
use std::time::Duration;

use leader_core::__private::RootCertificate;

use crate::acks::ReplicaAcks;
use crate::error::ConnectError;

/// Settings of a [`RedisBackend`](crate::RedisBackend), beside its URL.
///
/// | setting | default | what it does |
/// |---|---|---|
/// | `connect_timeout` | 2 s | the longest wait for a TCP (and TLS) connection |
/// | `response_timeout` | 2 s | the longest wait for an answer; a dead server is an error after this |
/// | `key_prefix` | `leader` | keys are `{prefix}:{<name>}` and `{prefix}:{<name>}:fence` (a group's slot `<name>#<n>`: `{prefix}:{<name>}#<n>`, same hash tag; the index of a name's derived locks: `{prefix}:{<name>}:derived`) |
/// | `release_notifications` | on | one shared pub/sub subscription wakes waiting electors at a release |
/// | `max_idle_connections` | 8 | blocking connections kept open between calls |
/// | `tls_root_certificate` | none | a PEM CA to trust for `rediss://` instead of the system roots (feature `tls`) |
/// | `replica_acks`, `replica_ack_timeout` | off | after each acquire and renewal, `WAIT` for this many replicas this long (see [`with_replica_acks`](Self::with_replica_acks)) |
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any serde format, with
/// the settings above as fields and durations in human form (`"2s"`, `"1m 30s"`,
/// `"250ms"`). A field left out keeps its default, an unknown field is an error, and the
/// result is validated: a zero timeout or a bad key prefix is a deserialize error carrying
/// the [`ConnectError`] message.
///
/// `tls_root_certificate` holds the PEM text itself (a TOML multi-line string, say), not
/// a path: reading a file is left to the application, which knows where paths are relative
/// to. A value that does not contain `-----BEGIN ` is rejected as the likely path it is.
/// To keep the CA in a file, leave the field out and add the file's contents after
/// reading the config: `config.with_tls_root_certificate(std::fs::read(path)?)`.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_redis::RedisConfig;
///
/// let config: RedisConfig = toml::from_str(
///     r#"
///     key_prefix = "billing"
///     response_timeout = "500ms"
///     tls_root_certificate = """
///     -----BEGIN CERTIFICATE-----
///     MIIBszCCAVmgAwIBAgIU...
///     -----END CERTIFICATE-----
///     """
///     "#,
/// )?;
/// assert_eq!(config.key_prefix(), "billing");
/// assert_eq!(config.response_timeout(), Duration::from_millis(500));
/// assert_eq!(config.connect_timeout(), Duration::from_secs(2)); // the default
///
/// let bad = toml::from_str::<RedisConfig>(r#"key_prefix = "a{b}""#).unwrap_err();
/// assert!(bad.to_string().contains("braces are reserved"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_redis::RedisConfig;
///
/// let config = RedisConfig::default()
///     .with_key_prefix("billing")
///     .with_response_timeout(Duration::from_millis(500));
/// assert_eq!(config.key_prefix(), "billing");
/// assert_eq!(config.connect_timeout(), Duration::from_secs(2));
/// ```
#[derive(Clone)]
pub struct RedisConfig {
    connect_timeout: Duration,
    response_timeout: Duration,
    key_prefix: String,
    release_notifications: bool,
    max_idle_connections: usize,
    /// Written by the config file reader too (`config_serde.rs`).
    pub(crate) tls_root_certificate: Option<RootCertificate>,
    replica_acks: Option<ReplicaAcks>,
}

impl RedisConfig {
    /// The default key prefix.
    pub const DEFAULT_KEY_PREFIX: &'static str = "leader";

    /// The defaults listed above.
    pub fn new() -> Self {
        RedisConfig {
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(2),
            key_prefix: Self::DEFAULT_KEY_PREFIX.to_owned(),
            release_notifications: true,
            max_idle_connections: 8,
            tls_root_certificate: None,
            replica_acks: None,
        }
    }

    /// Sets the connect timeout (must be above zero).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the response timeout (must be above zero).
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Sets the key prefix: not empty, no control characters, no `{` or `}`.
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Turns the shared release subscription on or off. Off, waiting electors only poll.
    pub fn with_release_notifications(mut self, on: bool) -> Self {
        self.release_notifications = on;
        self
    }

    /// Sets how many idle blocking connections are kept (more are opened while busy).
    pub fn with_max_idle_connections(mut self, max: usize) -> Self {
        self.max_idle_connections = max;
        self
    }

    /// Trusts this PEM-encoded CA certificate for `rediss://` URLs (instead of the
    /// system's roots). Needs the `tls` feature to connect.
    pub fn with_tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root_certificate = Some(RootCertificate::new(pem));
        self
    }

    /// After each acquire and each renewal, waits until `replicas` replicas have the
    /// write (`WAIT replicas timeout`, on the connection and node that ran the script),
    /// at most `timeout`. Zero replicas turns it off (the default). The same from a URL:
    /// `?replica_acks=1&replica_ack_timeout=50ms` (a bare number is milliseconds; without
    /// a timeout, 100 ms), taken out of the query before the driver reads it.
    ///
    /// An acquire that fewer replicas acknowledged in time is released (by its owner
    /// token) and answered with a transient [`Error::Backend`](leader_core::Error::Backend)
    /// naming the lock and how many replicas acknowledged; a renewal is answered with the
    /// same transient error (the lease stays until it runs out; an elector retries the
    /// renewal until its deadline). Releases do not wait.
    ///
    /// # The trade
    ///
    /// Redis replicates asynchronously: without this, a master that dies right after a
    /// grant may be replaced by a replica that never saw it, and a second owner gets the
    /// lock while the first still acts. With it, the grant is in `replicas` replicas'
    /// memory before the caller acts, so a failover that promotes one of them keeps it.
    /// It costs one more reply per acquire and renewal (the `WAIT` rides in the same round
    /// trip as the script, and returns as soon as the replicas answer: about one
    /// replication round trip), and an acquire fails while fewer replicas are reachable.
    /// It is not consensus: with `replicas` below the number of replicas a failover may
    /// still promote one that did not get the write, a replica restarted without
    /// persistence forgets it, and a master restarted without persistence loses it too.
    /// Acknowledged is not durable; fencing tokens at the resource stay the last line.
    ///
    /// On one connection a `WAIT` holds the commands queued behind it on that connection
    /// (the async side shares one multiplexed connection per runtime) until it returns.
    ///
    /// `timeout` must be at least 1 ms, at most 60 s, and shorter than the response
    /// timeout ([`ConnectError::InvalidReplicaAcks`] from [`validate`](Self::validate)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_redis::{ConnectError, RedisConfig};
    ///
    /// let config = RedisConfig::default().with_replica_acks(1, Duration::from_millis(50));
    /// assert_eq!(config.replica_acks(), Some((1, Duration::from_millis(50))));
    /// assert!(config.validate().is_ok());
    ///
    /// let off = RedisConfig::default().with_replica_acks(0, Duration::ZERO);
    /// assert_eq!(off.replica_acks(), None);
    ///
    /// let bad = RedisConfig::default().with_replica_acks(1, Duration::from_secs(5));
    /// assert!(matches!(bad.validate(), Err(ConnectError::InvalidReplicaAcks { .. })));
    /// ```
    pub fn with_replica_acks(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_acks = (replicas > 0).then_some(ReplicaAcks { replicas, timeout });
        self
    }

    /// The replicas to wait for after each acquire and renewal, and how long; `None`
    /// when off.
    pub fn replica_acks(&self) -> Option<(u32, Duration)> {
        self.replica_acks.map(|acks| (acks.replicas, acks.timeout))
    }

    /// The setting, for the runners.
    pub(crate) fn acks(&self) -> Option<ReplicaAcks> {
        self.replica_acks
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The response timeout.
    pub fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// Whether waiting electors are woken through pub/sub.
    pub fn release_notifications(&self) -> bool {
        self.release_notifications
    }

    /// How many idle blocking connections are kept.
    pub fn max_idle_connections(&self) -> usize {
        self.max_idle_connections
    }

    /// The CA certificate trusted for `rediss://`, if one was set.
    pub fn tls_root_certificate(&self) -> Option<&[u8]> {
        self.tls_root_certificate
            .as_ref()
            .map(RootCertificate::as_bytes)
    }

    /// Checks every setting.
    ///
    /// # Errors
    ///
    /// [`ConnectError::ZeroTimeout`], [`ConnectError::InvalidKeyPrefix`] or
    /// [`ConnectError::InvalidReplicaAcks`].
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_redis::{ConnectError, RedisConfig};
    /// let bad = RedisConfig::default().with_key_prefix("a{b}");
    /// assert!(matches!(bad.validate(), Err(ConnectError::InvalidKeyPrefix { .. })));
    /// ```
    pub fn validate(&self) -> Result<(), ConnectError> {
        if self.connect_timeout.is_zero() {
            return Err(ConnectError::ZeroTimeout("connect_timeout"));
        }
        if self.response_timeout.is_zero() {
            return Err(ConnectError::ZeroTimeout("response_timeout"));
        }
        if let Some(acks) = &self.replica_acks {
            acks.validate(self.response_timeout)?;
        }
        let reason = if self.key_prefix.is_empty() {
            Some("it is empty")
        } else if self.key_prefix.contains(['{', '}']) {
            Some("braces are reserved for the cluster hash tag")
        } else if self.key_prefix.chars().any(char::is_control) {
            Some("it contains a control character")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(ConnectError::InvalidKeyPrefix {
                prefix: self.key_prefix.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig::new()
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("key_prefix", &self.key_prefix)
            .field("release_notifications", &self.release_notifications)
            .field("max_idle_connections", &self.max_idle_connections)
            .field("tls_root_certificate", &self.tls_root_certificate)
            .field("replica_acks", &self.replica_acks())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_setting_is_named() {
        let zero = RedisConfig::default().with_connect_timeout(Duration::ZERO);
        assert!(matches!(
            zero.validate(),
            Err(ConnectError::ZeroTimeout("connect_timeout"))
        ));
        let zero = RedisConfig::default().with_response_timeout(Duration::ZERO);
        assert!(matches!(
            zero.validate(),
            Err(ConnectError::ZeroTimeout("response_timeout"))
        ));
        for prefix in ["", "a}", "a\nb"] {
            let config = RedisConfig::default().with_key_prefix(prefix);
            assert!(
                matches!(
                    config.validate(),
                    Err(ConnectError::InvalidKeyPrefix { .. })
                ),
                "{prefix:?}"
            );
        }
        assert!(RedisConfig::default().validate().is_ok());
    }
}
