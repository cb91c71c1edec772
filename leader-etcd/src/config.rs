//! [`EtcdConfig`]: where the locks live under the cluster's keys, the time limits, TLS.

use std::time::Duration;

use leader_core::__private::RootCertificate;

/// Settings of an [`EtcdBackend`](crate::EtcdBackend).
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `prefix` | `leader` | the keys of lock `name` are `{prefix}/lock/{name}`, `{prefix}/holder/{name}` and `{prefix}/fence/{name}` (not empty, at most 128 bytes, no trailing `/`) |
/// | `connect_timeout` | 5 s | how long opening the connection to a member may take |
/// | `operation_timeout` | 10 s | the caller waits at most this long for any one call, connecting included |
/// | `keep_alive` | 2 s | an HTTP/2 ping after this long without traffic, and as long again for its answer: how soon a connection that carries nothing any more (a network gone) is dropped and made again. A member that leaves a call unanswered is passed over for 30 s at once, whatever this is: a paused member's connection is made again at once (its kernel accepts it) |
/// | `release_notifications` | on | a watch on the lock keys, so waiting electors retry as soon as a lock is released or expires |
/// | `tls_root_certificate` | none | a PEM CA to trust for `etcds://` instead of the platform's roots (feature `tls`) |
///
/// When `operation_timeout` runs out the caller gets a transient error (the call may or
/// may not have been applied: a timed-out acquire is released by the electors with the
/// same owner token).
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any serde format, with
/// the settings above as fields and durations in human form (`"5s"`, `"250ms"`). A field
/// left out keeps its default, an unknown field is an error, and the result is checked as
/// [`connect_with`](crate::EtcdBackend::connect_with) checks it. The config holds no
/// secret (user and password are in the URL). `tls_root_certificate` holds the PEM text
/// itself, not a path.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_etcd::EtcdConfig;
///
/// let config: EtcdConfig = toml::from_str(
///     r#"
///     prefix = "billing"
///     operation_timeout = "3s"
///     "#,
/// )?;
/// assert_eq!(config.prefix(), "billing");
/// assert_eq!(config.operation_timeout(), Duration::from_secs(3));
/// assert_eq!(config.connect_timeout(), Duration::from_secs(5)); // the default
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_etcd::EtcdConfig;
///
/// let config = EtcdConfig::new()
///     .with_prefix("billing")
///     .with_operation_timeout(Duration::from_secs(3));
/// assert_eq!(config.prefix(), "billing");
/// assert_eq!(config.operation_timeout(), Duration::from_secs(3));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct EtcdConfig {
    #[cfg_attr(
        feature = "serde",
        serde(deserialize_with = "crate::config_serde::prefix")
    )]
    prefix: String,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::connect_timeout"
        )
    )]
    connect_timeout: Duration,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::operation_timeout"
        )
    )]
    operation_timeout: Duration,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::keep_alive"
        )
    )]
    keep_alive: Duration,
    release_notifications: bool,
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    tls_root_certificate: Option<RootCertificate>,
}

impl EtcdConfig {
    /// The default key prefix.
    pub const DEFAULT_PREFIX: &'static str = "leader";
    /// The longest key prefix.
    pub const MAX_PREFIX_LEN: usize = 128;
    /// The default connect timeout.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// The default operation timeout.
    pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default keep-alive interval.
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(2);

    /// The defaults of the table above.
    pub fn new() -> Self {
        EtcdConfig {
            prefix: Self::DEFAULT_PREFIX.to_owned(),
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            operation_timeout: Self::DEFAULT_OPERATION_TIMEOUT,
            keep_alive: Self::DEFAULT_KEEP_ALIVE,
            release_notifications: true,
            tls_root_certificate: None,
        }
    }

    /// Sets the key prefix (checked when the backend is built).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets how long opening the connection to a member may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how long a caller waits for any one call.
    pub fn with_operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Sets the HTTP/2 keep-alive interval (and how long a ping may go unanswered).
    pub fn with_keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// Turns release notifications (a watch on the lock keys) on or off. Off, waiting
    /// electors poll with backoff.
    pub fn with_release_notifications(mut self, on: bool) -> Self {
        self.release_notifications = on;
        self
    }

    /// Trusts the CA certificate(s) in `pem` for `etcds://` connections instead of the
    /// platform's roots. Needs the `tls` feature to connect.
    pub fn with_tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root_certificate = Some(RootCertificate::new(pem));
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// How long opening the connection to a member may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// How long a caller waits for any one call.
    pub fn operation_timeout(&self) -> Duration {
        self.operation_timeout
    }

    /// The HTTP/2 keep-alive interval.
    pub fn keep_alive(&self) -> Duration {
        self.keep_alive
    }

    /// Whether waiting electors are woken by a watch on the lock keys.
    pub fn release_notifications(&self) -> bool {
        self.release_notifications
    }

    /// The PEM CA certificate(s) to trust, if set.
    pub fn tls_root_certificate(&self) -> Option<&[u8]> {
        self.tls_root_certificate
            .as_ref()
            .map(RootCertificate::as_bytes)
    }

    /// The first setting that cannot work, if any.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        prefix_problem(&self.prefix).or_else(|| {
            [
                (self.connect_timeout, ZERO_CONNECT_TIMEOUT),
                (self.operation_timeout, ZERO_OPERATION_TIMEOUT),
                (self.keep_alive, ZERO_KEEP_ALIVE),
            ]
            .into_iter()
            .find_map(|(timeout, problem)| timeout.is_zero().then_some(problem))
        })
    }
}

/// What is wrong with a key prefix, if anything (config files check it as they read it).
pub(crate) fn prefix_problem(prefix: &str) -> Option<&'static str> {
    if prefix.is_empty() {
        Some("prefix must not be empty")
    } else if prefix.len() > EtcdConfig::MAX_PREFIX_LEN {
        Some("prefix must be at most 128 bytes")
    } else if prefix.ends_with('/') {
        Some("prefix must not end with `/` (the backend adds its own)")
    } else {
        None
    }
}

/// The problem of a zero `connect_timeout`.
pub(crate) const ZERO_CONNECT_TIMEOUT: &str = "connect_timeout must be greater than zero";
/// The problem of a zero `operation_timeout`.
pub(crate) const ZERO_OPERATION_TIMEOUT: &str = "operation_timeout must be greater than zero";
/// The problem of a zero `keep_alive`.
pub(crate) const ZERO_KEEP_ALIVE: &str = "keep_alive must be greater than zero";

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_problems() {
        let config = EtcdConfig::default();
        assert_eq!(config.prefix(), "leader");
        assert_eq!(config.problem(), None);
        for bad in [
            EtcdConfig::new().with_prefix(""),
            EtcdConfig::new().with_prefix("a/"),
            EtcdConfig::new().with_prefix("x".repeat(129)),
            EtcdConfig::new().with_operation_timeout(Duration::ZERO),
            EtcdConfig::new().with_connect_timeout(Duration::ZERO),
            EtcdConfig::new().with_keep_alive(Duration::ZERO),
        ] {
            assert!(bad.problem().is_some(), "{bad:?}");
        }
        let debug = format!("{:?}", config.with_tls_root_certificate(b"pem".to_vec()));
        assert!(debug.contains("Some(3)"), "{debug}");
    }
}
