//! [`SqliteConfig`]: how the backend uses its database file.

use std::time::Duration;

/// Settings of a [`SqliteBackend`](crate::SqliteBackend).
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `busy_timeout` | 5 s | how long a call may wait, in all, for this process's other calls on the backend value and for another process's write, before it fails with a transient error |
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any serde format, with
/// the setting above as a field and durations in human form (`"2s"`, `"1m 30s"`,
/// `"250ms"`). A field left out keeps its default and an unknown field is an error; a
/// `busy_timeout` longer than [`MAX_BUSY_TIMEOUT`](Self::MAX_BUSY_TIMEOUT) is cut to it,
/// as [`with_busy_timeout`](Self::with_busy_timeout) does.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_sqlite::SqliteConfig;
///
/// let config: SqliteConfig = toml::from_str(r#"busy_timeout = "1m 30s""#)?;
/// assert_eq!(config.busy_timeout(), Duration::from_secs(90));
/// assert_eq!(toml::from_str::<SqliteConfig>("")?, SqliteConfig::default());
///
/// let bad = toml::from_str::<SqliteConfig>(r#"busy_timout = "1s""#).unwrap_err();
/// assert!(bad.to_string().contains("unknown field `busy_timout`"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_sqlite::SqliteConfig;
///
/// let config = SqliteConfig::new().with_busy_timeout(Duration::from_secs(2));
/// assert_eq!(config.busy_timeout(), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct SqliteConfig {
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::busy_timeout"
        )
    )]
    busy_timeout: Duration,
}

impl SqliteConfig {
    /// The default busy timeout.
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// The longest busy timeout: SQLite counts it in milliseconds in an `i32` (about 24.8
    /// days). Longer ones are cut to it.
    pub const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

    /// The defaults.
    pub fn new() -> Self {
        SqliteConfig {
            busy_timeout: Self::DEFAULT_BUSY_TIMEOUT,
        }
    }

    /// How long each call may wait before it gives up with a transient
    /// [`Error::Backend`](leader_core::Error::Backend): for the backend value's connection,
    /// which this process's calls take in turns, then for the database's write lock, held
    /// by another connection. The budget is the call's own, counted from when it starts,
    /// so callers queued behind a stalled writer each fail after about one timeout, not
    /// one after the other. At most [`MAX_BUSY_TIMEOUT`](Self::MAX_BUSY_TIMEOUT).
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout.min(Self::MAX_BUSY_TIMEOUT);
        self
    }

    /// The busy timeout.
    pub fn busy_timeout(&self) -> Duration {
        self.busy_timeout
    }
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig::new()
    }
}
