//! [`SqliteConfig`]: how the backend uses its database file.

use std::time::Duration;

/// Settings of a [`SqliteBackend`](crate::SqliteBackend).
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `busy_timeout` | 5 s | how long a call waits for another process's write to finish before it fails with a transient error |
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
pub struct SqliteConfig {
    busy_timeout: Duration,
}

impl SqliteConfig {
    /// The default busy timeout.
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// The defaults.
    pub fn new() -> Self {
        SqliteConfig {
            busy_timeout: Self::DEFAULT_BUSY_TIMEOUT,
        }
    }

    /// How long a call waits for the database's write lock, held by another connection,
    /// before it gives up with a transient [`Error::Backend`](leader_core::Error::Backend).
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
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
