//! [`ConnectError`]: why [`connect`](crate::connect) could not build a backend.

/// Why a backend could not be built from a URL.
///
/// No variant shows a password: a URL is shown as [`redacted_url`](crate::redacted_url)
/// shows it (rebuilt from what the backend's driver parsed, or only its scheme when it did
/// not parse), and the drivers' messages come with the URL's secrets masked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The text is not a URL (`scheme://...`). It is not repeated: where a password ends in
    /// text that is not a URL (a `key=value` string) cannot be told.
    #[error(
        "not a backend URL (expected `scheme://...`, for instance `redis://127.0.0.1/`; the text is not repeated, as it may hold a password)"
    )]
    NotAUrl,
    /// No backend answers to this scheme.
    #[error("unknown backend URL scheme `{scheme}` in `{url}`; known: {}", crate::connect::SCHEMES.join(", "))]
    UnknownScheme {
        /// The scheme.
        scheme: String,
        /// The URL as shown: its scheme only (`mysql://…`), since no driver parsed it.
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
        /// The URL as [`redacted_url`](crate::redacted_url) shows it.
        url: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The Redis backend rejected the URL or its settings.
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Redis(#[from] leader_redis::ConnectError),
    /// The SQLite database could not be used (its path is in the error).
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Sqlite(#[from] leader_sqlite::ConnectError),
    /// The MongoDB backend rejected the connection string or could not start.
    #[cfg(feature = "mongodb")]
    #[error("{source} (connection string `{url}`)")]
    Mongo {
        /// The connection string as [`redacted_url`](crate::redacted_url) shows it.
        url: String,
        /// What the MongoDB backend said.
        #[source]
        source: leader_mongodb::ConnectError,
    },
    /// The PostgreSQL backend rejected the URL or its settings, or could not start.
    #[cfg(feature = "postgres")]
    #[error("{source} (URL `{url}`)")]
    Postgres {
        /// The URL as [`redacted_url`](crate::redacted_url) shows it.
        url: String,
        /// What the PostgreSQL backend said.
        #[source]
        source: leader_postgres::ConnectError,
    },
    /// The etcd backend rejected the URL or its settings, or could not start.
    #[cfg(feature = "etcd")]
    #[error("{source} (URL `{url}`)")]
    Etcd {
        /// The URL as [`redacted_url`](crate::redacted_url) shows it.
        url: String,
        /// What the etcd backend said.
        #[source]
        source: leader_etcd::ConnectError,
    },
}
