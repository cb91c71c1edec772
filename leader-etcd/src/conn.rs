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
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, LeaseGrantOptions};
use tokio::runtime::Handle;
use tokio::sync::OnceCell;

use crate::balance::ByStanding;
use crate::config::EtcdConfig;
use crate::error::{ConnectError, OpError};
use crate::keys::Keys;
use crate::lease::Grant;
use crate::seen::Seen;
use crate::url::Target;

/// How many lease ids a grant tries when etcd says the one chosen is another's (with 63
/// random bits, a second try is already a near impossibility).
const LEASE_ID_TRIES: usize = 3;
/// How long an old lease (one a lock moved off) is revoked in the background at most, when
/// the cluster does not answer: about as long as any lease this backend grants lasts.
const OLD_LEASE_PATIENCE: Duration = Duration::from_secs(60 * 60);

/// The shared client, made on first use.
pub(crate) struct Connection {
    endpoints: Vec<String>,
    options: ConnectOptions,
    client: OnceCell<Client>,
    keys: Keys,
    tokens: Arc<AtomicU64>,
    runtime: Handle,
    seen: Seen,
}

/// What one call runs with: the client, the key layout, the token floor, and the
/// backend's runtime (where leases are revoked in the background).
#[derive(Clone)]
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) keys: Keys,
    tokens: Arc<AtomicU64>,
    runtime: Handle,
    /// The read/write lock keys last seen (see [`Seen`]).
    pub(crate) seen: Seen,
}

impl Connection {
    /// A connection to `target`'s members with `config`, its background work on
    /// `runtime`; nothing is sent yet.
    pub(crate) fn new(
        target: &Target,
        config: &EtcdConfig,
        keys: Keys,
        runtime: Handle,
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
            runtime,
            seen: Seen::default(),
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
            runtime: self.runtime.clone(),
            seen: self.seen.clone(),
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

    /// Grants an etcd lease of `ttl` seconds, on which the call may put the locks `locks`:
    /// its guard (which revokes it in the background unless the call says a lock is on
    /// it, see [`Grant`]) and the TTL the cluster granted (its minimum TTL may be more
    /// than asked for). A grant whose answer never comes leaves the guard to revoke it.
    pub(crate) async fn grant(
        &self,
        ttl: i64,
        locks: Vec<Vec<u8>>,
    ) -> Result<(Grant, Duration), OpError> {
        let mut grant = Grant::asked(
            &self.keys,
            ttl,
            locks,
            self.client.clone(),
            self.runtime.clone(),
        );
        let mut tries = 0;
        loop {
            tries += 1;
            let options = LeaseGrantOptions::new().with_id(grant.on().id);
            let answer = self
                .client
                .lease_client()
                .grant(grant.ttl(), Some(options))
                .await;
            match answer {
                Ok(answer) => {
                    grant.granted();
                    if !answer.error().is_empty()
                        || answer.id() != grant.on().id
                        || answer.ttl() < grant.ttl()
                    {
                        return Err(OpError::Protocol(
                            "etcd granted no lease, or another or a shorter one than asked for",
                        ));
                    }
                    return Ok((grant, crate::time::granted(answer.ttl())));
                }
                Err(err) => {
                    // A grant the cluster surely did not carry out left nothing to
                    // revoke; any other failure may have come after it landed.
                    let err = OpError::from(err);
                    if err.not_carried_out() {
                        grant.not_ours();
                    }
                    if err.lease_exists() && tries < LEASE_ID_TRIES {
                        grant.other_id(&self.keys);
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Revokes the etcd lease `id` in the background: one the lock keys of this call no
    /// longer hang on. Nothing waits for it; it is tried again while the cluster does not
    /// answer, and a lease whose revoke is lost has no keys and expires on its own.
    pub(crate) fn revoke_later(&self, id: i64) {
        let now = Instant::now();
        let ends = now.checked_add(OLD_LEASE_PATIENCE).unwrap_or(now);
        crate::revoke::revoke_later(&self.client, &self.runtime, id, ends);
    }

    /// Revokes the etcd lease `id` `after` from now, in the background (see
    /// [`revoke_at`](crate::revoke::revoke_at)).
    pub(crate) fn revoke_after(&self, id: i64, after: Duration) {
        let now = Instant::now();
        let at = now.checked_add(after).unwrap_or(now);
        let ends = at.checked_add(OLD_LEASE_PATIENCE).unwrap_or(at);
        crate::revoke::revoke_at(&self.client, &self.runtime, id, at, ends);
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
