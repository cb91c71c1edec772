//! Config files (feature `serde`): [`EtcdConfig`] read from and written to any serde
//! format, through a plain mirror of its settings (see the type's `# Configuration files`).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de, ser};

use crate::config::EtcdConfig;
use crate::error::ConnectError;

/// The settings of [`EtcdConfig`] as a file holds them.
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct EtcdConfigFile {
    prefix: String,
    #[serde(with = "humantime_serde")]
    connect_timeout: Duration,
    #[serde(with = "humantime_serde")]
    operation_timeout: Duration,
    #[serde(with = "humantime_serde")]
    keep_alive: Duration,
    release_notifications: bool,
    /// The PEM text itself (not a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_root_certificate: Option<String>,
}

impl Default for EtcdConfigFile {
    fn default() -> Self {
        let config = EtcdConfig::default();
        EtcdConfigFile {
            prefix: config.prefix().to_owned(),
            connect_timeout: config.connect_timeout(),
            operation_timeout: config.operation_timeout(),
            keep_alive: config.keep_alive(),
            release_notifications: config.release_notifications(),
            tls_root_certificate: None,
        }
    }
}

/// What starts every PEM block; a value without it is most likely a file path.
const PEM_BEGIN: &str = "-----BEGIN ";

impl Serialize for EtcdConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let pem = self
            .tls_root_certificate()
            .map(|pem| String::from_utf8(pem.to_vec()))
            .transpose()
            .map_err(|_| ser::Error::custom("tls_root_certificate is not PEM text (not UTF-8)"))?;
        EtcdConfigFile {
            prefix: self.prefix().to_owned(),
            connect_timeout: self.connect_timeout(),
            operation_timeout: self.operation_timeout(),
            keep_alive: self.keep_alive(),
            release_notifications: self.release_notifications(),
            tls_root_certificate: pem,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EtcdConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = EtcdConfigFile::deserialize(deserializer)?;
        let mut config = EtcdConfig::new()
            .with_prefix(file.prefix)
            .with_connect_timeout(file.connect_timeout)
            .with_operation_timeout(file.operation_timeout)
            .with_keep_alive(file.keep_alive)
            .with_release_notifications(file.release_notifications);
        if let Some(pem) = file.tls_root_certificate {
            if !pem.contains(PEM_BEGIN) {
                return Err(de::Error::custom(
                    "tls_root_certificate must hold the PEM text (-----BEGIN CERTIFICATE-----...), not a file path",
                ));
            }
            config = config.with_tls_root_certificate(pem);
        }
        if let Some(problem) = config.problem() {
            return Err(de::Error::custom(ConnectError::InvalidConfig(problem)));
        }
        Ok(config)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn read(text: &str) -> Result<EtcdConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn round_trips_through_toml() {
        let original = EtcdConfig::new()
            .with_prefix("ops/locks")
            .with_connect_timeout(Duration::from_millis(1500))
            .with_operation_timeout(Duration::from_secs(90))
            .with_keep_alive(Duration::from_secs(1))
            .with_release_notifications(false)
            .with_tls_root_certificate(PEM);
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("connect_timeout = \"1s 500ms\""), "{text}");
        assert!(text.contains("operation_timeout = \"1m 30s\""), "{text}");
        assert_eq!(read(&text).unwrap(), original, "{text}");
        let plain = EtcdConfig::default();
        let text = toml::to_string(&plain).unwrap();
        assert!(!text.contains("tls_root_certificate"), "{text}");
        assert_eq!(read(&text).unwrap(), plain);
    }

    #[test]
    fn unknown_fields_paths_and_bad_values_are_rejected() {
        assert_eq!(read("").unwrap(), EtcdConfig::default());
        let err = read("prefx = \"x\"").unwrap_err();
        assert!(err.to_string().contains("unknown field `prefx`"), "{err}");
        let err = read("tls_root_certificate = \"/etc/ssl/ca.pem\"").unwrap_err();
        assert!(err.to_string().contains("not a file path"), "{err}");
        let err = read("operation_timeout = \"0ms\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("operation_timeout must be greater than zero"),
            "{err}"
        );
        let err = read("prefix = \"a/\"").unwrap_err();
        assert!(err.to_string().contains("must not end with"), "{err}");
    }

    /// The exact text written, so the file format (and what it leaves out) cannot drift.
    #[test]
    fn writes_the_same_text() {
        let full = EtcdConfig::new()
            .with_prefix("ops/locks")
            .with_connect_timeout(Duration::from_millis(1500))
            .with_operation_timeout(Duration::from_secs(90))
            .with_keep_alive(Duration::from_secs(1))
            .with_release_notifications(false)
            .with_tls_root_certificate(PEM);
        assert_eq!(
            toml::to_string(&full).unwrap(),
            "prefix = \"ops/locks\"\nconnect_timeout = \"1s 500ms\"\noperation_timeout = \"1m 30s\"\nkeep_alive = \"1s\"\nrelease_notifications = false\ntls_root_certificate = \"\"\"\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n\"\"\"\n"
        );
        assert_eq!(
            toml::to_string(&EtcdConfig::default()).unwrap(),
            "prefix = \"leader\"\nconnect_timeout = \"5s\"\noperation_timeout = \"10s\"\nkeep_alive = \"2s\"\nrelease_notifications = true\n"
        );
        let err =
            toml::to_string(&EtcdConfig::new().with_tls_root_certificate(vec![0xff])).unwrap_err();
        assert!(
            err.to_string().contains("not PEM text (not UTF-8)"),
            "{err}"
        );
    }
}
