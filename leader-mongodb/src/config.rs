//! [`MongoConfig`]: where the locks live and how long each operation may take.

use std::time::Duration;

use mongodb::options::{Acknowledgment, ClientOptions, WriteConcern};

/// Where [`MongoBackend`](crate::MongoBackend) keeps its lock documents, and its time limits.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `database` | the connection string's database, else `leader` | database of the lock collection |
/// | `collection` | `leader_locks` | one document per lock |
/// | `write_concern` | majority, journaled | write concern of acquire, extend and release: a lock a failover or a crash can roll back is no lock |
/// | `max_time` | 5 s | server-side limit (`maxTimeMS`) of acquire, extend and state |
/// | `server_selection_timeout` | the URI's, else 5 s | how long to look for a usable server |
/// | `connect_timeout` | the URI's, else 5 s | how long one connection attempt may take |
/// | `operation_timeout` | 15 s | the caller waits at most this long for any one operation |
/// | `release_notifications` | on | a change stream on the lock collection, so waiting electors retry at once after a release |
///
/// The two driver timeouts apply only to clients the backend builds from a connection string;
/// a client passed to [`MongoBackend::from_client`](crate::MongoBackend::from_client) keeps its
/// own. `operation_timeout` bounds every operation either way, whatever the network does (the
/// driver has no socket timeout): when it runs out the caller gets a transient error and the
/// operation itself finishes in the background (it is never cut off mid-flight).
///
/// Release notifications need a server that offers change streams (a replica set or a
/// sharded cluster). A standalone server refuses them: the backend then logs it once and
/// its waiters poll, as they do with notifications off. They cost one connection of the
/// pool, held by the stream, and a read of the released document per release.
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any self-describing
/// serde format (TOML, YAML, JSON, ...), with the settings above as fields and durations in
/// human form (`"5s"`, `"1m 30s"`, `"250ms"`). A field left out keeps its default and an
/// unknown field is an error. A zero duration, an empty name and `w = 0` are rejected.
///
/// `write_concern` is a table of `w` (`"majority"`, a number of nodes, or the name of a
/// custom write concern), `journal` (a bool) and `w_timeout` (a duration). A field the
/// table leaves out takes this crate's default (majority, journaled, no timeout), never
/// the server's weaker one. (So a write concern built in code with `w` or `journal` unset
/// is written without them and reads back with the defaults.)
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_mongodb::MongoConfig;
/// use leader_mongodb::mongodb::options::Acknowledgment;
///
/// let config: MongoConfig = toml::from_str(
///     r#"
///     database = "ops"
///     operation_timeout = "10s"
///     server_selection_timeout = "2s"
///
///     [write_concern]
///     w = "majority"
///     journal = true
///     w_timeout = "5s"
///     "#,
/// )?;
/// assert_eq!(config.database(), Some("ops"));
/// assert_eq!(config.collection(), "leader_locks"); // the default
/// assert_eq!(config.write_concern().w, Some(Acknowledgment::Majority));
/// assert_eq!(config.write_concern().w_timeout, Some(Duration::from_secs(5)));
///
/// let bad = toml::from_str::<MongoConfig>(r#"operation_timeout = "0s""#).unwrap_err();
/// assert!(bad.to_string().contains("operation_timeout must be greater than zero"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_mongodb::MongoConfig;
///
/// let config = MongoConfig::new()
///     .with_database("ops")
///     .with_collection("locks")
///     .with_server_selection_timeout(Duration::from_secs(2))
///     .with_operation_timeout(Duration::from_secs(5));
/// assert_eq!(config.collection(), "locks");
/// assert_eq!(config.database(), Some("ops"));
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct MongoConfig {
    #[cfg_attr(
        feature = "serde",
        serde(
            deserialize_with = "crate::config_serde::database",
            skip_serializing_if = "Option::is_none",
        )
    )]
    database: Option<String>,
    #[cfg_attr(
        feature = "serde",
        serde(deserialize_with = "crate::config_serde::collection",)
    )]
    collection: String,
    #[cfg_attr(feature = "serde", serde(with = "crate::config_serde::write_concern",))]
    write_concern: WriteConcern,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::max_time",
        )
    )]
    max_time: Duration,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::server_selection_timeout",
            skip_serializing_if = "Option::is_none",
        )
    )]
    server_selection_timeout: Option<Duration>,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::connect_timeout",
            skip_serializing_if = "Option::is_none",
        )
    )]
    connect_timeout: Option<Duration>,
    #[cfg_attr(
        feature = "serde",
        serde(
            serialize_with = "humantime_serde::serialize",
            deserialize_with = "crate::config_serde::operation_timeout",
        )
    )]
    operation_timeout: Duration,
    release_notifications: bool,
}

impl MongoConfig {
    /// The database used when neither the config nor the connection string names one.
    pub const DEFAULT_DATABASE: &'static str = "leader";
    /// The default collection.
    pub const DEFAULT_COLLECTION: &'static str = "leader_locks";
    /// The driver's default connection pool size (`maxPoolSize`).
    const DRIVER_POOL_SIZE: u32 = 10;

    /// The default driver timeouts (server selection, connect) when the URI sets none.
    pub const DEFAULT_DRIVER_TIMEOUT: Duration = Duration::from_secs(5);

    /// The defaults of the table above.
    pub fn new() -> Self {
        MongoConfig {
            database: None,
            collection: Self::DEFAULT_COLLECTION.to_owned(),
            write_concern: WriteConcern::builder()
                .w(Acknowledgment::Majority)
                .journal(true)
                .build(),
            max_time: Duration::from_secs(5),
            server_selection_timeout: None,
            connect_timeout: None,
            operation_timeout: Duration::from_secs(15),
            release_notifications: true,
        }
    }

    /// Sets the database of the lock collection.
    pub fn with_database(mut self, database: impl Into<String>) -> Self {
        self.database = Some(database.into());
        self
    }

    /// Sets the lock collection.
    pub fn with_collection(mut self, collection: impl Into<String>) -> Self {
        self.collection = collection.into();
        self
    }

    /// Sets the write concern of acquire, extend and release.
    pub fn with_write_concern(mut self, write_concern: WriteConcern) -> Self {
        self.write_concern = write_concern;
        self
    }

    /// Sets the server-side time limit of each operation.
    pub fn with_max_time(mut self, max_time: Duration) -> Self {
        self.max_time = max_time;
        self
    }

    /// Sets how long the driver looks for a usable server (overrides the URI).
    pub fn with_server_selection_timeout(mut self, timeout: Duration) -> Self {
        self.server_selection_timeout = Some(timeout);
        self
    }

    /// Sets how long one connection attempt may take (overrides the URI).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Sets how long a caller waits for any one operation.
    pub fn with_operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Turns release notifications (a change stream on the lock collection) on or off.
    /// Off, waiting electors find a released lock at their next attempt.
    pub fn with_release_notifications(mut self, on: bool) -> Self {
        self.release_notifications = on;
        self
    }

    /// The database, if set here.
    pub fn database(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// The lock collection.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The write concern of acquire, extend and release.
    pub fn write_concern(&self) -> &WriteConcern {
        &self.write_concern
    }

    /// The server-side time limit of each operation.
    pub fn max_time(&self) -> Duration {
        self.max_time
    }

    /// The server selection timeout, if set here.
    pub fn server_selection_timeout(&self) -> Option<Duration> {
        self.server_selection_timeout
    }

    /// The connect timeout, if set here.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// How long a caller waits for any one operation.
    pub fn operation_timeout(&self) -> Duration {
        self.operation_timeout
    }

    /// Whether release notifications are on.
    pub fn release_notifications(&self) -> bool {
        self.release_notifications
    }

    /// Applies the driver timeouts: this config's when set, else the URI's, else the default.
    pub(crate) fn apply_to(&self, options: &mut ClientOptions) {
        let pick = |ours: Option<Duration>, uri: Option<Duration>| {
            Some(ours.or(uri).unwrap_or(Self::DEFAULT_DRIVER_TIMEOUT))
        };
        options.server_selection_timeout = pick(
            self.server_selection_timeout,
            options.server_selection_timeout,
        );
        options.connect_timeout = pick(self.connect_timeout, options.connect_timeout);
        // The driver's handshake has no timeout: a connection being made when a partition
        // drops its bytes never finishes. With the driver's default of two at a time, two
        // such connections stopped the pool from ever making another one; allow as many
        // as the pool holds, so calls after the partition get new connections.
        if options.max_connecting.is_none() {
            options.max_connecting = Some(options.max_pool_size.unwrap_or(Self::DRIVER_POOL_SIZE));
        }
    }

    /// The database to use: this config's, else the URI's, else [`Self::DEFAULT_DATABASE`].
    pub(crate) fn database_or(&self, from_uri: Option<&str>) -> String {
        self.database
            .as_deref()
            .or(from_uri)
            .unwrap_or(Self::DEFAULT_DATABASE)
            .to_owned()
    }
}

impl Default for MongoConfig {
    fn default() -> Self {
        MongoConfig::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_timeouts_win_over_the_uri_and_defaults_fill_gaps() {
        let mut options = ClientOptions::default();
        options.connect_timeout = Some(Duration::from_secs(9));
        MongoConfig::new()
            .with_server_selection_timeout(Duration::from_secs(1))
            .apply_to(&mut options);
        assert_eq!(
            options.server_selection_timeout,
            Some(Duration::from_secs(1))
        );
        assert_eq!(options.connect_timeout, Some(Duration::from_secs(9)));

        let mut options = ClientOptions::default();
        MongoConfig::new().apply_to(&mut options);
        assert_eq!(
            options.connect_timeout,
            Some(MongoConfig::DEFAULT_DRIVER_TIMEOUT)
        );
        assert_eq!(
            options.max_connecting,
            Some(10),
            "as many as the pool holds"
        );
        let mut options = ClientOptions::default();
        options.max_pool_size = Some(3);
        MongoConfig::new().apply_to(&mut options);
        assert_eq!(options.max_connecting, Some(3));
        options.max_connecting = Some(1);
        MongoConfig::new().apply_to(&mut options);
        assert_eq!(options.max_connecting, Some(1), "the URI's setting wins");
    }

    #[test]
    fn database_falls_back_to_the_uri_then_the_default() {
        assert_eq!(MongoConfig::new().database_or(None), "leader");
        assert_eq!(MongoConfig::new().database_or(Some("app")), "app");
        assert_eq!(
            MongoConfig::new()
                .with_database("x")
                .database_or(Some("app")),
            "x"
        );
        let concern = MongoConfig::new().write_concern().clone();
        assert_eq!(concern.w, Some(Acknowledgment::Majority));
        assert_eq!(concern.journal, Some(true));
    }
}
