//! [`Connection`]: the one etcd client a backend shares, made on first use, and what
//! every call needs beside it ([`Conn`]).
//!
//! The client spreads its calls over every member of the URL, passing over one that left a
//! call unanswered (see [`balance`](crate::balance)), and reconnects on its own;
//! it is made once, on the background runtime, by the first call that needs it (a call
//! that fails to make it leaves the next call to try again). Each call carries etcd's
//! "require leader" flag, so a member cut off from the others answers "no leader" at once
//! instead of serving what it last knew.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use etcd_client::{Client, ConnectOptions};
use tokio::sync::OnceCell;

use crate::balance::ByStanding;
use crate::config::EtcdConfig;
use crate::error::{ConnectError, OpError};
use crate::keys::Keys;
use crate::url::Target;

/// The shared client, made on first use.
pub(crate) struct Connection {
    endpoints: Vec<String>,
    options: ConnectOptions,
    client: OnceCell<Client>,
    keys: Keys,
    tokens: Arc<AtomicU64>,
}

/// What one call runs with: the client, the key layout, and the token floor.
#[derive(Clone)]
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) keys: Keys,
    tokens: Arc<AtomicU64>,
}

impl Connection {
    /// A connection to `target`'s members with `config`; nothing is sent yet.
    pub(crate) fn new(
        target: &Target,
        config: &EtcdConfig,
        keys: Keys,
    ) -> Result<Self, ConnectError> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout())
            .with_timeout(config.operation_timeout())
            .with_keep_alive(config.keep_alive(), config.keep_alive())
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        if let Some((user, password)) = &target.credentials {
            // etcd's auth tokens expire (after 5 minutes unused, by default): a call that
            // finds its token expired authenticates again and is retried (it was refused,
            // so it did nothing).
            options = options
                .with_user(user.clone(), password.clone())
                .with_auto_token_refresh(true);
        }
        if target.tls {
            options = tls(options, config)?;
        }
        Ok(Connection {
            endpoints: target.endpoints(),
            options,
            client: OnceCell::new(),
            keys,
            tokens: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The client (made now if this is the first call), for one call.
    pub(crate) async fn get(&self) -> Result<Conn, OpError> {
        let client = self
            .client
            // Boxed: connecting is a future of some 6 KB that only the first call runs;
            // inline, every call's future would carry it (see `EtcdBackend::call`).
            .get_or_try_init(|| {
                Box::pin(Client::connect_with_balanced_channel(
                    self.endpoints.clone(),
                    Some(self.options.clone()),
                    ByStanding,
                ))
            })
            .await?;
        Ok(Conn {
            client: client.clone(),
            keys: self.keys.clone(),
            tokens: Arc::clone(&self.tokens),
        })
    }

    /// The key layout.
    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }
}

impl Conn {
    /// A fencing token for a new acquisition, at `now_micros`: at least the clock, and
    /// above every token this backend has seen (see the crate docs on fencing).
    pub(crate) fn next_token(&self, now_micros: u64) -> u64 {
        let floor = self.tokens.load(Ordering::Relaxed).saturating_add(1);
        now_micros.max(floor)
    }

    /// Records `token`, seen in the store, so later tokens of this backend pass it.
    pub(crate) fn saw_token(&self, token: u64) {
        self.tokens.fetch_max(token, Ordering::Relaxed);
    }

    /// Grants an etcd lease of `ttl` seconds: its id and the TTL the cluster granted
    /// (its minimum TTL may be more than asked for).
    pub(crate) async fn grant(&self, ttl: i64) -> Result<(i64, std::time::Duration), OpError> {
        let grant = self.client.lease_client().grant(ttl, None).await?;
        if !grant.error().is_empty() || grant.id() == 0 || grant.ttl() < ttl {
            return Err(OpError::Protocol(
                "etcd granted no lease, or a shorter one than asked for",
            ));
        }
        Ok((grant.id(), crate::time::granted(grant.ttl())))
    }

    /// Revokes the etcd lease `id` in the background: one this call granted but did not
    /// use, or one its lock keys no longer hang on. Nothing waits for it; a lease whose
    /// revoke is lost has no keys and expires on its own.
    pub(crate) fn revoke_later(&self, id: i64) {
        if id == 0 {
            return;
        }
        let mut lease = self.client.lease_client();
        tokio::spawn(async move {
            if let Err(err) = lease.revoke(id).await {
                tracing::debug!(lease = id, error = %err, "etcd lease revoke failed; it expires on its own");
            }
        });
    }
}

#[cfg(feature = "tls")]
fn tls(options: ConnectOptions, config: &EtcdConfig) -> Result<ConnectOptions, ConnectError> {
    // A CA of the config's replaces the platform's roots; without one, those are trusted.
    let tls = match config.tls_root_certificate() {
        Some(pem) => {
            etcd_client::TlsOptions::new().ca_certificate(etcd_client::Certificate::from_pem(pem))
        }
        None => etcd_client::TlsOptions::new().with_native_roots(),
    };
    Ok(options.with_tls(tls))
}

#[cfg(not(feature = "tls"))]
fn tls(_: ConnectOptions, _: &EtcdConfig) -> Result<ConnectOptions, ConnectError> {
    Err(ConnectError::TlsNotBuilt)
}
