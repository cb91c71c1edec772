//! Config files (feature `serde`): the field readers and writers of [`EtcdConfig`]'s
//! derived serde support (see the type's `# Configuration files`). Each value is checked
//! as it is read, with the [`ConnectError`] that
//! [`connect_with`](crate::EtcdBackend::connect_with) would return for it.

use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use crate::config::{
    ZERO_CONNECT_TIMEOUT, ZERO_KEEP_ALIVE, ZERO_OPERATION_TIMEOUT, prefix_problem,
};
use crate::error::ConnectError;

/// `Err` with the [`ConnectError`] of `problem`, if there is one.
fn refuse<E: de::Error>(problem: Option<&'static str>) -> Result<(), E> {
    match problem {
        Some(problem) => Err(E::custom(ConnectError::InvalidConfig(problem))),
        None => Ok(()),
    }
}

/// `prefix`, checked.
pub(crate) fn prefix<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let prefix = String::deserialize(deserializer)?;
    refuse(prefix_problem(&prefix))?;
    Ok(prefix)
}

/// A timeout in human form, refused with `problem` when zero.
fn timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
    problem: &'static str,
) -> Result<Duration, D::Error> {
    let timeout: Duration = humantime_serde::deserialize(deserializer)?;
    refuse(timeout.is_zero().then_some(problem))?;
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

/// `keep_alive`, above zero.
pub(crate) fn keep_alive<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    timeout(deserializer, ZERO_KEEP_ALIVE)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::EtcdConfig;

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

    /// Each value is checked as it is read, so the error points at its line.
    #[test]
    fn a_bad_value_is_refused_at_its_line() {
        let err = read("release_notifications = true\nkeep_alive = \"0s\"").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(
            err.to_string()
                .contains("keep_alive must be greater than zero"),
            "{err}"
        );
    }
}
