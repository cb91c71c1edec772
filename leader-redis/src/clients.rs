//! Where the backend connects: one server or a cluster, with the driver's clients built
//! (and every URL checked) once, at construction.

use redis::Client;
use redis::cluster::{ClusterClient, ClusterClientBuilder};

use crate::config::RedisConfig;
use crate::error::ConnectError;

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

    /// Clients for the pub/sub subscription: the server, or each cluster node in turn
    /// (a cluster forwards every `PUBLISH` to all its nodes).
    pub(crate) fn subscription_clients(&self) -> Vec<Client> {
        match self {
            Target::Single(client) => vec![Client::clone(client)],
            Target::Cluster { nodes, .. } => nodes.clone(),
        }
    }
}

fn node_client(url: &str, config: &RedisConfig) -> Result<Client, ConnectError> {
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
