//! [`Connector`]: opens a session (TCP or Unix socket, TLS when asked, authentication)
//! and spawns the task that drives it.

use std::future::poll_fn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use leader_core::{RedactedError, ReleaseEvents, UrlSecrets};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_postgres::config::{SslMode, TargetSessionAttrs};
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls};

use crate::config::PostgresConfig;
use crate::error::{ConnectError, OpError};
use crate::hosts::one_per_host;

/// How sessions are opened: the parsed URL, one configuration per host, and the TLS
/// connector it needs.
pub(crate) struct Connector {
    hosts: Vec<Config>,
    /// The host that gave the last session: tried first (after a failover, the new
    /// primary, instead of the dead host before it in the URL).
    preferred: AtomicUsize,
    tls: Tls,
    timeout: Duration,
}

enum Tls {
    /// `sslmode=disable` or `prefer` (the default): plain connections.
    Off,
    /// `sslmode=require`: TLS, the server's certificate verified.
    #[cfg(feature = "tls")]
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

/// The task driving a session: it reads the server's messages and hands notifications
/// to the release events. Aborted when dropped, which closes the socket at once (a call
/// that timed out on a paused server must not leave its session waiting).
#[derive(Debug)]
pub(crate) struct Driver(pub(crate) JoinHandle<Result<(), tokio_postgres::Error>>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Connector {
    /// The connector for `url`; contacts nothing.
    pub(crate) fn new(url: &str, settings: &PostgresConfig) -> Result<Self, ConnectError> {
        let mut config: Config = url.parse().map_err(|err: tokio_postgres::Error| {
            let redacted = RedactedError::new(&err, &UrlSecrets::from_url(url));
            ConnectError::InvalidUrl(Box::new(redacted))
        })?;
        config.connect_timeout(settings.connect_timeout());
        if config.get_application_name().is_none() {
            config.application_name("leader-postgres");
        }
        writable_only(&mut config)?;
        bound_statements(&mut config, settings.operation_timeout());
        let tls = match config.get_ssl_mode() {
            SslMode::Require => require_tls(settings)?,
            // `prefer` would try TLS and fail on a certificate it cannot verify: plain,
            // as asked when TLS is not required.
            _ => {
                config.ssl_mode(SslMode::Disable);
                Tls::Off
            }
        };
        Ok(Connector {
            hosts: one_per_host(&config),
            preferred: AtomicUsize::new(0),
            tls,
            timeout: settings.connect_timeout(),
        })
    }

    /// Opens a session and spawns its driver on the current runtime (always the backend's
    /// own: every call runs there). Notifications go to `events`, when given.
    ///
    /// The hosts are tried in turn, the one that gave the last session first, each for at
    /// most the connect timeout (TCP, TLS, authentication and the read-write check): a
    /// host that hangs costs one connect timeout, then the next is tried.
    pub(crate) async fn connect(
        &self,
        events: Option<ReleaseEvents>,
    ) -> Result<(Client, Driver), OpError> {
        let first = self.preferred.load(Ordering::Relaxed);
        let mut failure = None;
        for offset in 0..self.hosts.len() {
            let index = (first + offset) % self.hosts.len();
            let Some(host) = self.hosts.get(index) else {
                continue;
            };
            match self.connect_to(host, events.clone()).await {
                Ok(session) => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(session);
                }
                Err(err) => failure = Some(err),
            }
        }
        Err(failure.unwrap_or(OpError::ConnectTimedOut(self.timeout)))
    }

    /// Opens a session on `host`, within the connect timeout.
    async fn connect_to(
        &self,
        host: &Config,
        events: Option<ReleaseEvents>,
    ) -> Result<(Client, Driver), OpError> {
        let connecting = async {
            Ok::<_, tokio_postgres::Error>(match &self.tls {
                Tls::Off => {
                    let (client, connection) = host.connect(NoTls).await?;
                    (client, Driver(tokio::spawn(drive(connection, events))))
                }
                #[cfg(feature = "tls")]
                Tls::Rustls(tls) => {
                    let (client, connection) = host.connect(tls.clone()).await?;
                    (client, Driver(tokio::spawn(drive(connection, events))))
                }
            })
        };
        match tokio::time::timeout(self.timeout, connecting).await {
            Ok(connected) => Ok(connected?),
            Err(_) => Err(OpError::ConnectTimedOut(self.timeout)),
        }
    }
}

/// Every session must take writes: `target_session_attrs=read-write`, on one host as on
/// several. With several hosts (`postgres://h1:5432,h2:5432/db`) each new session tries
/// them in turn ([`Connector::connect`]) and keeps the first that is not read-only, so
/// after a standby is promoted new sessions find the new primary. `any` (the driver's default) is raised to `read-write`
/// even when written out: a lock call on a standby could only fail (every lock call
/// writes), and a read there (`state`, a listing) would answer from a copy that may lag.
/// `read-only` is refused.
fn writable_only(config: &mut Config) -> Result<(), ConnectError> {
    if config.get_target_session_attrs() == TargetSessionAttrs::ReadOnly {
        return Err(ConnectError::InvalidUrl(
            "target_session_attrs=read-only: the lock table is written by every lock call, \
             so a read-only session cannot serve it"
                .into(),
        ));
    }
    config.target_session_attrs(TargetSessionAttrs::ReadWrite);
    Ok(())
}

/// The server ends any statement of ours still running when the caller's operation
/// timeout ends (`statement_timeout`, sent with the session's startup options): a
/// statement stuck behind another transaction's row lock would otherwise keep its server
/// process (and its place in the lock queue) after the caller gave up and closed the
/// socket, since PostgreSQL only notices a closed socket when it next talks to it.
/// Cancelling from the client instead would need a new connection to the same server at
/// the moment it is least reachable (paused, overloaded, failing over); the server's own
/// timer needs nothing from the client. A `statement_timeout` in the URL's `options` is
/// overridden by this one, which comes after it.
fn bound_statements(config: &mut Config, operation_timeout: Duration) {
    let millis = operation_timeout.as_millis().clamp(1, i32::MAX as u128);
    let ours = format!("-c statement_timeout={millis}");
    let options = match config.get_options() {
        Some(theirs) if !theirs.trim().is_empty() => format!("{theirs} {ours}"),
        _ => ours,
    };
    config.options(options);
}

#[cfg(feature = "tls")]
fn require_tls(settings: &PostgresConfig) -> Result<Tls, ConnectError> {
    crate::tls::connector(settings.tls_root_certificate()).map(Tls::Rustls)
}

#[cfg(not(feature = "tls"))]
fn require_tls(_settings: &PostgresConfig) -> Result<Tls, ConnectError> {
    Err(ConnectError::TlsNotBuilt)
}

/// Reads the session's messages until it ends: what polling the `Connection` future
/// does, with notifications forwarded instead of dropped.
async fn drive<S, T>(
    mut connection: Connection<S, T>,
    events: Option<ReleaseEvents>,
) -> Result<(), tokio_postgres::Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        match poll_fn(|cx| connection.poll_message(cx)).await {
            Some(Ok(AsyncMessage::Notification(notification))) => {
                if let Some(events) = &events {
                    events.notify_message(notification.payload());
                }
            }
            Some(Ok(_notice)) => {}
            Some(Err(err)) => return Err(err),
            None => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_and_key_value_strings_without_contacting_anything() {
        let settings = PostgresConfig::new();
        assert!(Connector::new("postgres://app:pw@127.0.0.1:1/app", &settings).is_ok());
        assert!(Connector::new("postgresql://127.0.0.1/app?sslmode=disable", &settings).is_ok());
        assert!(Connector::new("host=127.0.0.1 user=app", &settings).is_ok());
        assert!(matches!(
            Connector::new("postgres://h/db?sslmode=sometimes", &settings),
            Err(ConnectError::InvalidUrl(_))
        ));
        assert!(matches!(
            Connector::new("postgres://h:notaport/db", &settings),
            Err(ConnectError::InvalidUrl(_))
        ));
    }

    #[test]
    fn every_session_must_take_writes_on_one_host_or_several() {
        let settings = PostgresConfig::new();
        for url in [
            "postgres://app@h1:5432,h2:5433/app",
            "postgres://app@h1,h2/app?target_session_attrs=any",
            "postgres://app@h1/app?target_session_attrs=read-write",
            "postgres://app@h1/app",
        ] {
            let connector = Connector::new(url, &settings).unwrap();
            for host in &connector.hosts {
                assert_eq!(
                    host.get_target_session_attrs(),
                    TargetSessionAttrs::ReadWrite,
                    "{url}"
                );
            }
        }
        assert!(matches!(
            Connector::new(
                "postgres://h1,h2/db?target_session_attrs=read-only",
                &settings
            ),
            Err(ConnectError::InvalidUrl(_))
        ));
    }

    #[test]
    fn statements_are_bounded_by_the_operation_timeout_after_any_options_given() {
        let settings = PostgresConfig::new().with_operation_timeout(Duration::from_millis(1500));
        let connector = Connector::new("postgres://h/db", &settings).unwrap();
        assert_eq!(
            connector.hosts[0].get_options(),
            Some("-c statement_timeout=1500")
        );
        let connector = Connector::new(
            "postgres://h/db?options=-c%20statement_timeout%3D99999",
            &settings,
        )
        .unwrap();
        assert_eq!(
            connector.hosts[0].get_options(),
            Some("-c statement_timeout=99999 -c statement_timeout=1500")
        );
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn required_tls_without_the_feature_is_refused() {
        let settings = PostgresConfig::new();
        assert!(matches!(
            Connector::new("postgres://h/db?sslmode=require", &settings),
            Err(ConnectError::TlsNotBuilt)
        ));
    }
}
