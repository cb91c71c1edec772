//! [`RedisBackend`] on driver clients the application already has, instead of URLs.

use redis::Client;
use redis::cluster::ClusterClient;

use crate::backend::RedisBackend;
use crate::clients::Target;
use crate::config::RedisConfig;
use crate::error::ConnectError;

impl RedisBackend {
    /// A backend for the server of `client`, with `config`: for an application that
    /// already builds its [`redis::Client`] (credentials, TLS, RESP3, ...) and wants the
    /// locks on the same server with the same settings.
    ///
    /// To share a client you already have, pass the `Client` (clone it: a `Client` holds
    /// only the connection settings). The backend opens its own connections from it, as
    /// [`connect_with`](Self::connect_with) does from a URL: a pool of blocking
    /// connections, one async connection, and the dedicated pub/sub connection of the
    /// release subscription. Nothing is opened yet. `config`'s timeouts apply to all of
    /// them; its `tls_root_certificate` does not (the client's own TLS settings are used
    /// as they were built).
    ///
    /// There is no constructor from a `redis::aio::ConnectionManager`: the backend also
    /// needs blocking connections (for the blocking electors) and a connection of its own
    /// for `SUBSCRIBE`, and a connection manager can give neither, nor the `Client` it
    /// was made from. Pass that `Client` here instead.
    ///
    /// # Errors
    ///
    /// [`ConnectError`] when a setting of `config` is rejected.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_redis::redis;
    /// use leader_redis::{RedisBackend, RedisConfig};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let backend = RedisBackend::from_client(client.clone(), RedisConfig::default())?;
    /// // ... the application keeps using `client` for its own commands ...
    /// # let _ = backend;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_client(client: Client, config: RedisConfig) -> Result<Self, ConnectError> {
        config.validate()?;
        warn_if_certificate_unused(&config);
        Ok(RedisBackend::build(
            Target::Single(Box::new(client)),
            config,
        ))
    }

    /// A backend for the Redis Cluster of `client`, with `config`; the release
    /// subscription goes through `subscription_nodes`.
    ///
    /// Lock calls go through the cluster client (blocking and async connections opened
    /// from it, with `config`'s timeouts). The release subscription cannot: a cluster
    /// client gives no plain connection for `SUBSCRIBE`, nor the node addresses it was
    /// built from. So it takes `subscription_nodes`, a [`redis::Client`] for each of one
    /// or more nodes of the same cluster (a cluster forwards every `PUBLISH` to all its
    /// nodes); the subscription uses one at a time and moves to the next when it loses its
    /// connection. With release notifications off (see
    /// [`RedisConfig::with_release_notifications`]) the list may be empty. As with
    /// [`from_client`](Self::from_client), `config`'s `tls_root_certificate` is not used.
    ///
    /// # Errors
    ///
    /// [`ConnectError::NoSubscriptionNodes`] when `subscription_nodes` is empty while
    /// release notifications are on; a rejected setting of `config`.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_redis::redis::{self, cluster::ClusterClient};
    /// use leader_redis::{RedisBackend, RedisConfig};
    ///
    /// let urls = ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"];
    /// let cluster = ClusterClient::new(urls)?;
    /// let nodes = urls
    ///     .iter()
    ///     .map(|url| redis::Client::open(*url))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// let backend = RedisBackend::from_cluster_client(cluster, nodes, RedisConfig::default())?;
    /// # let _ = backend;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_cluster_client<I>(
        client: ClusterClient,
        subscription_nodes: I,
        config: RedisConfig,
    ) -> Result<Self, ConnectError>
    where
        I: IntoIterator<Item = Client>,
    {
        config.validate()?;
        let nodes: Vec<Client> = subscription_nodes.into_iter().collect();
        if nodes.is_empty() && config.release_notifications() {
            return Err(ConnectError::NoSubscriptionNodes);
        }
        warn_if_certificate_unused(&config);
        let target = Target::Cluster {
            client: Box::new(client),
            nodes,
        };
        Ok(RedisBackend::build(target, config))
    }
}

fn warn_if_certificate_unused(config: &RedisConfig) {
    if config.tls_root_certificate().is_some() {
        tracing::warn!(
            "RedisConfig::tls_root_certificate is not used by a backend built on a caller's client: the client's own TLS settings apply"
        );
    }
}
