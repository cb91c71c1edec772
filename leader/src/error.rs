//! [`ConnectError`]: why [`connect`](crate::connect) could not build a backend.

/// Why a backend could not be built from a URL.
///
/// Every variant that names the URL shows it with any password replaced by `***`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The text is not a URL (`scheme://...`).
    #[error(
        "not a backend URL: `{url}` (expected `scheme://...`, for instance `redis://127.0.0.1/`)"
    )]
    NotAUrl {
        /// The text given, password masked.
        url: String,
    },
    /// No backend answers to this scheme.
    #[error("unknown backend URL scheme `{scheme}` in `{url}`; known: {}", crate::connect::SCHEMES.join(", "))]
    UnknownScheme {
        /// The scheme.
        scheme: String,
        /// The URL, password masked.
        url: String,
    },
    /// The scheme is known, but the crate was built without the feature it needs.
    #[error("`{scheme}://` URLs need the `{feature}` feature of the `leader` crate")]
    FeatureDisabled {
        /// The scheme.
        scheme: &'static str,
        /// The feature to enable.
        feature: &'static str,
    },
    /// The URL has the right scheme but a part of it is wrong.
    #[error("invalid backend URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL, password masked.
        url: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The Redis backend rejected the URL or its settings.
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Redis(#[from] leader_redis::ConfigError),
    /// The SQLite database could not be used (its path is in the error).
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Sqlite(#[from] leader_sqlite::OpenError),
    /// The MongoDB backend rejected the connection string or could not start.
    #[cfg(feature = "mongodb")]
    #[error("{source} (connection string `{url}`)")]
    Mongo {
        /// The connection string, password masked.
        url: String,
        /// What the MongoDB backend said.
        #[source]
        source: leader_mongodb::ConnectError,
    },
    /// The PostgreSQL backend rejected the URL or its settings, or could not start.
    #[cfg(feature = "postgres")]
    #[error("{source} (URL `{url}`)")]
    Postgres {
        /// The URL, password masked.
        url: String,
        /// What the PostgreSQL backend said.
        #[source]
        source: leader_postgres::ConnectError,
    },
}
