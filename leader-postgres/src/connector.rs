//! [`Connector`]: opens a session (TCP or Unix socket, TLS when asked, authentication)
//! and spawns the task that drives it.

use std::future::poll_fn;
use std::time::Duration;

use leader_core::{RedactedError, ReleaseEvents, UrlSecrets};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_postgres::config::SslMode;
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls};

use crate::config::PostgresConfig;
use crate::error::{ConnectError, OpError};

/// How sessions are opened: the parsed URL and the TLS connector it needs.
pub(crate) struct Connector {
    config: Config,
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
            config,
            tls,
            timeout: settings.connect_timeout(),
        })
    }

    /// Opens a session and spawns its driver on the current runtime (always the backend's
    /// own: every call runs there). Notifications go to `events`, when given.
    pub(crate) async fn connect(
        &self,
        events: Option<ReleaseEvents>,
    ) -> Result<(Client, Driver), OpError> {
        let connecting = async {
            Ok::<_, tokio_postgres::Error>(match &self.tls {
                Tls::Off => {
                    let (client, connection) = self.config.connect(NoTls).await?;
                    (client, Driver(tokio::spawn(drive(connection, events))))
                }
                #[cfg(feature = "tls")]
                Tls::Rustls(tls) => {
                    let (client, connection) = self.config.connect(tls.clone()).await?;
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
                    events.notify(notification.payload());
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
