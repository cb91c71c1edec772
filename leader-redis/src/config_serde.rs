//! Config files (feature `serde`): [`RedisConfig`] read from and written to any serde
//! format, through a plain mirror of its settings (see the type's `# Configuration files`).
//!
//! Why a mirror here, where the other backends derive serde on their config type: one
//! setting of the type is two fields of the file (`replica_acks: Option<ReplicaAcks>` is
//! `replica_acks` and `replica_ack_timeout`, written even when off), which neither a derive
//! on the type nor a serde `remote` definition can express (`flatten` does not go with
//! `deny_unknown_fields`); and the acknowledgement timeout is checked against
//! `response_timeout`, which needs every field read.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use leader_core::__private::RootCertificate;

use crate::config::RedisConfig;

/// The settings of [`RedisConfig`] as a file holds them.
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RedisConfigFile {
    #[serde(with = "humantime_serde")]
    connect_timeout: Duration,
    #[serde(with = "humantime_serde")]
    response_timeout: Duration,
    key_prefix: String,
    release_notifications: bool,
    max_idle_connections: usize,
    /// The PEM text itself (not a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_root_certificate: Option<RootCertificate>,
    /// Replicas to `WAIT` for after each acquire and renewal (0: off).
    replica_acks: u32,
    #[serde(with = "humantime_serde")]
    replica_ack_timeout: Duration,
}

/// The `replica_ack_timeout` a file without one gets.
const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_millis(100);

impl Default for RedisConfigFile {
    fn default() -> Self {
        let config = RedisConfig::default();
        RedisConfigFile {
            connect_timeout: config.connect_timeout(),
            response_timeout: config.response_timeout(),
            key_prefix: config.key_prefix().to_owned(),
            release_notifications: config.release_notifications(),
            max_idle_connections: config.max_idle_connections(),
            tls_root_certificate: None,
            replica_acks: 0,
            replica_ack_timeout: DEFAULT_ACK_TIMEOUT,
        }
    }
}

impl Serialize for RedisConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RedisConfigFile {
            connect_timeout: self.connect_timeout(),
            response_timeout: self.response_timeout(),
            key_prefix: self.key_prefix().to_owned(),
            release_notifications: self.release_notifications(),
            max_idle_connections: self.max_idle_connections(),
            tls_root_certificate: self.tls_root_certificate.clone(),
            replica_acks: self.replica_acks().map_or(0, |(replicas, _)| replicas),
            replica_ack_timeout: self
                .replica_acks()
                .map_or(DEFAULT_ACK_TIMEOUT, |(_, timeout)| timeout),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RedisConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = RedisConfigFile::deserialize(deserializer)?;
        let mut config = RedisConfig::new()
            .with_connect_timeout(file.connect_timeout)
            .with_response_timeout(file.response_timeout)
            .with_key_prefix(file.key_prefix)
            .with_release_notifications(file.release_notifications)
            .with_max_idle_connections(file.max_idle_connections)
            .with_replica_acks(file.replica_acks, file.replica_ack_timeout);
        config.tls_root_certificate = file.tls_root_certificate;
        config.validate().map_err(de::Error::custom)?;
        Ok(config)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ConnectError;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn read(text: &str) -> Result<RedisConfig, toml::de::Error> {
        toml::from_str(text)
    }

    /// `RedisConfig` has no `PartialEq`: compare what it shows, and the certificate.
    fn same(a: &RedisConfig, b: &RedisConfig) -> bool {
        format!("{a:?}") == format!("{b:?}") && a.tls_root_certificate() == b.tls_root_certificate()
    }

    #[test]
    fn round_trips_through_toml() {
        let original = RedisConfig::default()
            .with_connect_timeout(Duration::from_millis(1500))
            .with_response_timeout(Duration::from_millis(250))
            .with_key_prefix("billing")
            .with_release_notifications(false)
            .with_max_idle_connections(3)
            .with_tls_root_certificate(PEM)
            .with_replica_acks(2, Duration::from_millis(40));
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("connect_timeout = \"1s 500ms\""), "{text}");
        assert!(same(&read(&text).unwrap(), &original), "{text}");
        let plain = RedisConfig::default();
        let text = toml::to_string(&plain).unwrap();
        assert!(!text.contains("tls_root_certificate"), "{text}");
        assert!(same(&read(&text).unwrap(), &plain));
    }

    #[test]
    fn human_durations_and_defaults() {
        let config = read("response_timeout = \"1m 30s\"").unwrap();
        assert_eq!(config.response_timeout(), Duration::from_secs(90));
        assert!(same(&read("").unwrap(), &RedisConfig::default()));
        let config = read(&format!("tls_root_certificate = '''\n{PEM}'''")).unwrap();
        assert_eq!(config.tls_root_certificate(), Some(PEM.as_bytes()));
    }

    #[test]
    fn unknown_fields_and_paths_for_certificates_are_rejected() {
        let err = read("key_prefx = \"x\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `key_prefx`"),
            "{err}"
        );
        let err = read("tls_root_certificate = \"/etc/ssl/ca.pem\"").unwrap_err();
        assert!(err.to_string().contains("not a file path"), "{err}");
    }

    #[test]
    fn invalid_values_carry_the_typed_message() {
        let err = read("connect_timeout = \"0s\"").unwrap_err();
        let expected = ConnectError::ZeroTimeout("connect_timeout").to_string();
        assert!(err.to_string().contains(&expected), "{err}");
        let err = read("key_prefix = \"a{b}\"").unwrap_err();
        let expected = RedisConfig::default()
            .with_key_prefix("a{b}")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.to_string().contains(&expected), "{err}");
        let err = read("replica_acks = 1\nreplica_ack_timeout = \"0s\"").unwrap_err();
        assert!(
            err.to_string().contains("invalid replica acknowledgement"),
            "{err}"
        );
        let config = read("replica_acks = 1").unwrap();
        assert_eq!(config.replica_acks(), Some((1, DEFAULT_ACK_TIMEOUT)));
    }

    /// The exact text written, so the file format (and what it leaves out) cannot drift.
    #[test]
    fn writes_the_same_text() {
        let full = RedisConfig::default()
            .with_connect_timeout(Duration::from_millis(1500))
            .with_response_timeout(Duration::from_millis(250))
            .with_key_prefix("billing")
            .with_release_notifications(false)
            .with_max_idle_connections(3)
            .with_tls_root_certificate(PEM)
            .with_replica_acks(2, Duration::from_millis(40));
        assert_eq!(
            toml::to_string(&full).unwrap(),
            "connect_timeout = \"1s 500ms\"\nresponse_timeout = \"250ms\"\nkey_prefix = \"billing\"\nrelease_notifications = false\nmax_idle_connections = 3\ntls_root_certificate = \"\"\"\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n\"\"\"\nreplica_acks = 2\nreplica_ack_timeout = \"40ms\"\n"
        );
        assert_eq!(
            toml::to_string(&RedisConfig::default()).unwrap(),
            "connect_timeout = \"2s\"\nresponse_timeout = \"2s\"\nkey_prefix = \"leader\"\nrelease_notifications = true\nmax_idle_connections = 8\nreplica_acks = 0\nreplica_ack_timeout = \"100ms\"\n"
        );
    }
}
