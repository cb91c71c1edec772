//! Config files (feature `serde`): [`PostgresConfig`] read from and written to any serde
//! format, through a plain mirror of its settings (see the type's `# Configuration files`).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de, ser};

use crate::config::PostgresConfig;
use crate::error::ConnectError;
use crate::table::Table;

/// The settings of [`PostgresConfig`] as a file holds them.
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PostgresConfigFile {
    table: String,
    pool_size: usize,
    #[serde(with = "humantime_serde")]
    connect_timeout: Duration,
    #[serde(with = "humantime_serde")]
    operation_timeout: Duration,
    release_notifications: bool,
    /// The PEM text itself (not a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_root_certificate: Option<String>,
}

impl Default for PostgresConfigFile {
    fn default() -> Self {
        let config = PostgresConfig::default();
        PostgresConfigFile {
            table: config.table().to_owned(),
            pool_size: config.pool_size(),
            connect_timeout: config.connect_timeout(),
            operation_timeout: config.operation_timeout(),
            release_notifications: config.release_notifications(),
            tls_root_certificate: None,
        }
    }
}

/// What starts every PEM block; a value without it is most likely a file path.
const PEM_BEGIN: &str = "-----BEGIN ";

impl Serialize for PostgresConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let pem = self
            .tls_root_certificate()
            .map(|pem| String::from_utf8(pem.to_vec()))
            .transpose()
            .map_err(|_| ser::Error::custom("tls_root_certificate is not PEM text (not UTF-8)"))?;
        PostgresConfigFile {
            table: self.table().to_owned(),
            pool_size: self.pool_size(),
            connect_timeout: self.connect_timeout(),
            operation_timeout: self.operation_timeout(),
            release_notifications: self.release_notifications(),
            tls_root_certificate: pem,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PostgresConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = PostgresConfigFile::deserialize(deserializer)?;
        let mut config = PostgresConfig::new()
            .with_table(file.table)
            .with_pool_size(file.pool_size)
            .with_connect_timeout(file.connect_timeout)
            .with_operation_timeout(file.operation_timeout)
            .with_release_notifications(file.release_notifications);
        if let Some(pem) = file.tls_root_certificate {
            if !pem.contains(PEM_BEGIN) {
                return Err(de::Error::custom(
                    "tls_root_certificate must hold the PEM text (-----BEGIN CERTIFICATE-----...), not a file path",
                ));
            }
            config = config.with_tls_root_certificate(pem);
        }
        check(&config).map_err(de::Error::custom)?;
        Ok(config)
    }
}

/// The checks [`PostgresBackend::connect_with`](crate::PostgresBackend::connect_with)
/// makes on a config, with its errors, so a file is refused when it is read.
fn check(config: &PostgresConfig) -> Result<(), ConnectError> {
    if let Some(problem) = config.problem() {
        return Err(ConnectError::InvalidConfig(problem));
    }
    Table::parse(config.table()).map_err(|reason| ConnectError::InvalidTable {
        table: config.table().to_owned(),
        reason,
    })?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}
