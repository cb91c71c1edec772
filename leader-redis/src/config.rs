//! [`RedisConfig`]: timeouts, key prefix and connection settings of a [`RedisBackend`](crate::RedisBackend).

use std::fmt;
use std::time::Duration;

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
    tls_root_certificate: Option<Vec<u8>>,
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
        self.tls_root_certificate = Some(pem.into());
        self
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
        self.tls_root_certificate.as_deref()
    }

    /// Checks every setting.
    ///
    /// # Errors
    ///
    /// [`ConnectError::ZeroTimeout`] or [`ConnectError::InvalidKeyPrefix`].
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
            .field(
                "tls_root_certificate",
                &self.tls_root_certificate.as_ref().map(|pem| pem.len()),
            )
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
