//! Config files (feature `serde`): the field readers and writers of [`PostgresConfig`]'s
//! derived serde support (see the type's `# Configuration files`). Each value is checked
//! as it is read, with the [`ConnectError`] that
//! [`connect_with`](crate::PostgresBackend::connect_with) would return for it.

use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use crate::config::{ZERO_CONNECT_TIMEOUT, ZERO_OPERATION_TIMEOUT, ZERO_POOL_SIZE};
use crate::error::ConnectError;
use crate::table::Table;

/// `Err` with the [`ConnectError::InvalidConfig`] of `problem` when `bad`.
fn refuse<E: de::Error>(bad: bool, problem: &'static str) -> Result<(), E> {
    if bad {
        return Err(E::custom(ConnectError::InvalidConfig(problem)));
    }
    Ok(())
}

/// `table`, a name the backend can use.
pub(crate) fn table<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let table = String::deserialize(deserializer)?;
    match Table::parse(&table) {
        Ok(_) => Ok(table),
        Err(reason) => Err(de::Error::custom(ConnectError::InvalidTable {
            table,
            reason,
        })),
    }
}

/// `pool_size`, at least 1.
pub(crate) fn pool_size<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let size = usize::deserialize(deserializer)?;
    refuse(size == 0, ZERO_POOL_SIZE)?;
    Ok(size)
}

/// A timeout in human form, refused with `problem` when zero.
fn timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
    problem: &'static str,
) -> Result<Duration, D::Error> {
    let timeout: Duration = humantime_serde::deserialize(deserializer)?;
    refuse(timeout.is_zero(), problem)?;
    Ok(timeout)
}

/// `connect_timeout`, above zero.
pub(crate) fn connect_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    timeout(deserializer, ZERO_CONNECT_TIMEOUT)
}

/// `operation_timeout`, above zero.
pub(crate) fn operation_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    timeout(deserializer, ZERO_OPERATION_TIMEOUT)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::PostgresConfig;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn read(text: &str) -> Result<PostgresConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn round_trips_through_toml() {
        let original = PostgresConfig::new()
            .with_table("ops.leader_locks")
            .with_pool_size(2)
            .with_connect_timeout(Duration::from_millis(1500))
            .with_operation_timeout(Duration::from_secs(90))
            .with_release_notifications(false)
            .with_tls_root_certificate(PEM);
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("connect_timeout = \"1s 500ms\""), "{text}");
        assert!(text.contains("operation_timeout = \"1m 30s\""), "{text}");
        assert_eq!(read(&text).unwrap(), original, "{text}");
        let plain = PostgresConfig::default();
        let text = toml::to_string(&plain).unwrap();
        assert!(!text.contains("tls_root_certificate"), "{text}");
        assert_eq!(read(&text).unwrap(), plain);
    }

    #[test]
    fn human_durations_and_defaults() {
        let config = read("operation_timeout = \"2m\"").unwrap();
        assert_eq!(config.operation_timeout(), Duration::from_secs(120));
        assert_eq!(config.table(), PostgresConfig::DEFAULT_TABLE);
        assert_eq!(read("").unwrap(), PostgresConfig::default());
        let config = read(&format!("tls_root_certificate = '''\n{PEM}'''")).unwrap();
        assert_eq!(config.tls_root_certificate(), Some(PEM.as_bytes()));
    }

    #[test]
    fn unknown_fields_and_paths_for_certificates_are_rejected() {
        let err = read("tabel = \"x\"").unwrap_err();
        assert!(err.to_string().contains("unknown field `tabel`"), "{err}");
        let err = read("tls_root_certificate = \"/etc/ssl/ca.pem\"").unwrap_err();
        assert!(err.to_string().contains("not a file path"), "{err}");
    }

    #[test]
    fn invalid_values_carry_the_typed_message() {
        for (text, expected) in [
            (
                "pool_size = 0",
                ConnectError::InvalidConfig("pool_size must be at least 1"),
            ),
            (
                "connect_timeout = \"0s\"",
                ConnectError::InvalidConfig("connect_timeout must be greater than zero"),
            ),
            (
                "operation_timeout = \"0ms\"",
                ConnectError::InvalidConfig("operation_timeout must be greater than zero"),
            ),
        ] {
            let err = read(text).unwrap_err();
            assert!(
                err.to_string().contains(&expected.to_string()),
                "{text}: {err}"
            );
        }
        let err = read("table = \"locks; DROP TABLE users\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid lock table name `locks; DROP TABLE users`"),
            "{err}"
        );
    }

    /// The exact text written, so the file format (and what it leaves out) cannot drift.
    #[test]
    fn writes_the_same_text() {
        let full = PostgresConfig::new()
            .with_table("ops.leader_locks")
            .with_pool_size(2)
            .with_connect_timeout(Duration::from_millis(1500))
            .with_operation_timeout(Duration::from_secs(90))
            .with_release_notifications(false)
            .with_tls_root_certificate(PEM);
        assert_eq!(
            toml::to_string(&full).unwrap(),
            "table = \"ops.leader_locks\"\npool_size = 2\nconnect_timeout = \"1s 500ms\"\noperation_timeout = \"1m 30s\"\nrelease_notifications = false\ntls_root_certificate = \"\"\"\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n\"\"\"\n"
        );
        assert_eq!(
            toml::to_string(&PostgresConfig::default()).unwrap(),
            "table = \"leader_locks\"\npool_size = 4\nconnect_timeout = \"5s\"\noperation_timeout = \"10s\"\nrelease_notifications = true\n"
        );
        let err = toml::to_string(&PostgresConfig::new().with_tls_root_certificate(vec![0xff]))
            .unwrap_err();
        assert!(
            err.to_string().contains("not PEM text (not UTF-8)"),
            "{err}"
        );
    }

    /// Each value is checked as it is read, so the error points at its line.
    #[test]
    fn a_bad_value_is_refused_at_its_line() {
        let err = read("table = \"ops.locks\"\npool_size = 0").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = read("pool_size = 2\ntable = \"a-b\"").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
