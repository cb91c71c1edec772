//! [`PostgresConfig`]: where the locks live, the pool, the time limits, TLS.

use std::time::Duration;

use leader_core::__private::RootCertificate;

/// Settings of a [`PostgresBackend`](crate::PostgresBackend).
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `table` | `leader_locks` | the lock table (`table` or `schema.table`; ASCII letters, digits and `_`, at most 54 bytes), created on first use |
/// | `pool_size` | 4 | at most this many connections for lock calls (plus one for release notifications) |
/// | `connect_timeout` | 5 s | how long opening one connection may take, TCP to authenticated session |
/// | `operation_timeout` | 10 s | the caller waits at most this long for any one call, a new connection included; also each session's `statement_timeout`, so the server ends a statement the caller gave up on |
/// | `release_notifications` | on | `LISTEN` for releases, so waiting electors retry at once |
/// | `tls_root_certificate` | none | a PEM CA to trust for `sslmode=require` instead of the platform's roots (feature `tls`) |
///
/// When `operation_timeout` runs out the caller gets a transient error and the connection
/// the call was using is closed (its statement may or may not have been applied: a
/// timed-out acquire is released by the electors with the same owner token). The server
/// ends the statement by the same deadline (`statement_timeout`, set on every session
/// from `operation_timeout`): one stuck behind a row lock another transaction holds does
/// not keep its server process, and its place in the lock queue, after the caller left.
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any serde format, with
/// the settings above as fields and durations in human form (`"5s"`, `"1m 30s"`,
/// `"250ms"`). A field left out keeps its default, an unknown field is an error, and the
/// result is checked as [`connect_with`](crate::PostgresBackend::connect_with) checks it: a
/// zero `pool_size` or timeout, or a table name that cannot be used, is a deserialize error
/// carrying the [`ConnectError`](crate::ConnectError) message. The config holds no secret
/// (the password is in the connection URL, which is not part of it).
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
/// use leader_postgres::PostgresConfig;
///
/// let config: PostgresConfig = toml::from_str(
///     r#"
///     table = "ops.leader_locks"
///     pool_size = 2
///     operation_timeout = "1m 30s"
///     "#,
/// )?;
/// assert_eq!(config.table(), "ops.leader_locks");
/// assert_eq!(config.operation_timeout(), Duration::from_secs(90));
/// assert_eq!(config.connect_timeout(), Duration::from_secs(5)); // the default
///
/// let bad = toml::from_str::<PostgresConfig>(r#"table = "a-b""#).unwrap_err();
/// assert!(bad.to_string().contains("invalid lock table name `a-b`"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_postgres::PostgresConfig;
///
/// let config = PostgresConfig::new()
///     .with_table("ops.leader_locks")
///     .with_pool_size(2)
///     .with_operation_timeout(Duration::from_secs(3));
/// assert_eq!(config.table(), "ops.leader_locks");
/// assert_eq!(config.pool_size(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct PostgresConfig {
    #[cfg_attr(
        feature = "serde",
        serde(deserialize_with = "crate::config_serde::table")
    )]
    table: String,
    #[cfg_attr(
        feature = "serde",
        serde(deserialize_with = "crate::config_serde::pool_size")
    )]
    pool_size: usize,
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
    release_notifications: bool,
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    tls_root_certificate: Option<RootCertificate>,
}

impl PostgresConfig {
    /// The default lock table.
    pub const DEFAULT_TABLE: &'static str = "leader_locks";
    /// The default number of pooled connections.
    pub const DEFAULT_POOL_SIZE: usize = 4;
    /// The default connect timeout.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// The default operation timeout.
    pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(10);

    /// The defaults of the table above.
    pub fn new() -> Self {
        PostgresConfig {
            table: Self::DEFAULT_TABLE.to_owned(),
            pool_size: Self::DEFAULT_POOL_SIZE,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            operation_timeout: Self::DEFAULT_OPERATION_TIMEOUT,
            release_notifications: true,
            tls_root_certificate: None,
        }
    }

    /// Sets the lock table (checked when the backend is built).
    pub fn with_table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Sets how many connections lock calls may use at once (at least 1).
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Sets how long opening one connection may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how long a caller waits for any one call.
    pub fn with_operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Turns release notifications (`LISTEN`/`NOTIFY`) on or off. Off, waiting electors
    /// poll with backoff; releases still send their `NOTIFY` for other backends.
    pub fn with_release_notifications(mut self, on: bool) -> Self {
        self.release_notifications = on;
        self
    }

    /// Trusts the CA certificate(s) in `pem` for `sslmode=require` connections instead of
    /// the platform's roots. Needs the `tls` feature to connect.
    pub fn with_tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root_certificate = Some(RootCertificate::new(pem));
        self
    }

    /// The lock table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// How many connections lock calls may use at once.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// How long opening one connection may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// How long a caller waits for any one call.
    pub fn operation_timeout(&self) -> Duration {
        self.operation_timeout
    }

    /// Whether waiting electors are woken by `NOTIFY`.
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
        if self.pool_size == 0 {
            Some(ZERO_POOL_SIZE)
        } else if self.connect_timeout.is_zero() {
            Some(ZERO_CONNECT_TIMEOUT)
        } else if self.operation_timeout.is_zero() {
            Some(ZERO_OPERATION_TIMEOUT)
        } else {
            None
        }
    }
}

/// The problem of a zero `pool_size` (config files check it as they read it).
pub(crate) const ZERO_POOL_SIZE: &str = "pool_size must be at least 1";
/// The problem of a zero `connect_timeout`.
pub(crate) const ZERO_CONNECT_TIMEOUT: &str = "connect_timeout must be greater than zero";
/// The problem of a zero `operation_timeout`.
pub(crate) const ZERO_OPERATION_TIMEOUT: &str = "operation_timeout must be greater than zero";

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_problems() {
        let config = PostgresConfig::default();
        assert_eq!(config.table(), "leader_locks");
        assert_eq!(config.problem(), None);
        assert!(PostgresConfig::new().with_pool_size(0).problem().is_some());
        assert!(
            PostgresConfig::new()
                .with_operation_timeout(Duration::ZERO)
                .problem()
                .is_some()
        );
        let debug = format!("{:?}", config.with_tls_root_certificate(b"pem".to_vec()));
        assert!(debug.contains("Some(3)"), "{debug}");
    }
}
