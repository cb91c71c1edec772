//! Where the backend connects: one server, a cluster, or the master behind sentinels, with
//! the driver's clients built (and every URL checked) once, at construction.

use std::sync::Arc;

use redis::Client;
use redis::cluster::{ClusterClient, ClusterClientBuilder};

use crate::config::RedisConfig;
use crate::error::ConnectError;
use crate::sentinel::SentinelTarget;

/// The server(s) a backend talks to.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// One server (`redis://` or `rediss://`).
    Single(Box<Client>),
    /// A Redis Cluster, and one client per given node for the pub/sub subscription.
    Cluster {
        client: Box<ClusterClient>,
        nodes: Vec<Client>,
    },
    /// The master of a Sentinel-managed set (`redis+sentinel://`), found through its
    /// sentinels and found again after a failover; shared by every clone.
    Sentinel(Arc<SentinelTarget>),
}

/// Where the release subscription connects.
#[derive(Debug, Clone)]
pub(crate) enum Subscription {
    /// These servers in turn (one server, or a cluster's nodes).
    Nodes(Vec<Client>),
    /// The current master of a Sentinel-managed set, asked of the sentinels on each
    /// (re)subscription.
    Sentinel(Arc<SentinelTarget>),
}

impl Target {
    pub(crate) fn single(url: &str, config: &RedisConfig) -> Result<Self, ConnectError> {
        Ok(Target::Single(Box::new(node_client(url, config)?)))
    }

    pub(crate) fn cluster(urls: &[String], config: &RedisConfig) -> Result<Self, ConnectError> {
        if urls.is_empty() {
            return Err(ConnectError::NoClusterNodes);
        }
        let nodes = urls
            .iter()
            .map(|url| node_client(url, config))
            .collect::<Result<Vec<_>, _>>()?;
        let builder = ClusterClientBuilder::new(urls.iter().map(String::as_str))
            .connection_timeout(config.connect_timeout())
            .response_timeout(config.response_timeout())
            .retries(2)
            .min_retry_wait(10)
            .max_retry_wait(100);
        let builder = with_cluster_certs(builder, config);
        let client = builder.build().map_err(|err| {
            let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
            ConnectError::invalid_url(&urls, &err)
        })?;
        Ok(Target::Cluster {
            client: Box::new(client),
            nodes,
        })
    }

    pub(crate) fn sentinel(url: &str, config: &RedisConfig) -> Result<Self, ConnectError> {
        Ok(Target::Sentinel(Arc::new(SentinelTarget::new(
            url, config,
        )?)))
    }

    /// Where the pub/sub subscription goes: the server, each cluster node in turn (a
    /// cluster forwards every `PUBLISH` to all its nodes), or the current master.
    pub(crate) fn subscription(&self) -> Subscription {
        match self {
            Target::Single(client) => Subscription::Nodes(vec![Client::clone(client)]),
            Target::Cluster { nodes, .. } => Subscription::Nodes(nodes.clone()),
            Target::Sentinel(target) => Subscription::Sentinel(Arc::clone(target)),
        }
    }
}

pub(crate) fn node_client(url: &str, config: &RedisConfig) -> Result<Client, ConnectError> {
    let client = match tls_certificates(url, config) {
        #[cfg(feature = "tls")]
        Some(certs) => Client::build_with_tls(url, certs),
        _ => Client::open(url),
    };
    client.map_err(|err| ConnectError::invalid_url(&[url], &err))
}

#[cfg(feature = "tls")]
fn tls_certificates(url: &str, config: &RedisConfig) -> Option<redis::TlsCertificates> {
    if !url.starts_with("rediss:") {
        return None;
    }
    install_crypto_provider();
    config
        .tls_root_certificate()
        .map(|pem| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem.to_vec()),
        })
}

#[cfg(not(feature = "tls"))]
fn tls_certificates(_url: &str, _config: &RedisConfig) -> Option<std::convert::Infallible> {
    None
}

#[cfg(feature = "tls")]
fn with_cluster_certs(builder: ClusterClientBuilder, config: &RedisConfig) -> ClusterClientBuilder {
    install_crypto_provider();
    match config.tls_root_certificate() {
        Some(pem) => builder.certs(redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem.to_vec()),
        }),
        None => builder,
    }
}

#[cfg(not(feature = "tls"))]
fn with_cluster_certs(
    builder: ClusterClientBuilder,
    _config: &RedisConfig,
) -> ClusterClientBuilder {
    builder
}

/// rustls needs a process-wide crypto provider; install ring's unless the application
/// already installed one (then that one is used).
#[cfg(feature = "tls")]
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: some provider is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
