//! Config files (feature `serde`): [`PollerConfig`] read from and written to any serde
//! format (see the type's `# Configuration files`).
//!
//! Why the fields are listed here and not derived on the type itself: a fixed minimum lease
//! and the cycle-end guard are checked against the interval, which needs all the fields
//! read, and serde's derive has no step after the last field. So the type's `Deserialize`
//! is written by hand, and the field list it reads with is a serde `remote` definition of
//! the type: serde builds the type itself from it (no conversion code), and a field added
//! to the type but not here does not compile. (Deriving on the type with
//! `remote = "Self"` would do the same but adds a public inherent `deserialize` that skips
//! the checks.)

use std::num::NonZeroUsize;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::poller::config::{PollerConfig, ShutdownMode};

/// The fields of [`PollerConfig`] as a file holds them; `job_name` and `interval` are
/// required, the rest optional.
#[derive(Serialize, Deserialize)]
#[serde(remote = "PollerConfig", deny_unknown_fields)]
struct PollerConfigFile {
    job_name: String,
    #[serde(with = "humantime_serde")]
    interval: Duration,
    #[serde(
        default,
        deserialize_with = "at_least_one",
        skip_serializing_if = "Option::is_none"
    )]
    concurrency: Option<usize>,
    /// Left out: [`PollerConfig::DEFAULT_ACQUIRE_BATCH`].
    #[serde(
        default,
        deserialize_with = "at_least_one",
        skip_serializing_if = "Option::is_none"
    )]
    acquire_batch: Option<usize>,
    #[serde(
        rename = "min_lease_time",
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    fixed_min_lease: Option<Duration>,
    /// Left out: derived from the interval, whatever the interval is.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    cycle_end_guard: Option<Duration>,
    #[serde(default)]
    shutdown_mode: ShutdownMode,
}

/// `concurrency` and `acquire_batch`: a zero in a file is refused, not raised to one as the
/// setters raise it.
fn at_least_one<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    Ok(Option::<NonZeroUsize>::deserialize(deserializer)?.map(NonZeroUsize::get))
}

impl Serialize for PollerConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        PollerConfigFile::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for PollerConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let config = PollerConfigFile::deserialize(deserializer)?;
        config.validate().map_err(de::Error::custom)?;
        Ok(config)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::TenantError;

    fn read(text: &str) -> Result<PollerConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn round_trips_through_toml() {
        let original = PollerConfig::new("sync-invoices", Duration::from_secs(90))
            .with_concurrency(16)
            .with_min_lease_time(Duration::from_secs(30))
            .with_cycle_end_guard(Duration::from_millis(500))
            .with_shutdown_mode(ShutdownMode::Abandon);
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("interval = \"1m 30s\""), "{text}");
        assert!(text.contains("shutdown_mode = \"abandon\""), "{text}");
        assert_eq!(read(&text).unwrap(), original);

        let minimal = PollerConfig::new("job", Duration::from_secs(60));
        let text = toml::to_string(&minimal).unwrap();
        assert!(
            !text.contains("cycle_end_guard"),
            "derived, not written: {text}"
        );
        assert_eq!(read(&text).unwrap(), minimal);
    }

    #[test]
    fn optional_fields_keep_the_defaults_and_required_ones_are_required() {
        let config = read("job_name = \"job\"\ninterval = \"250ms\"").unwrap();
        assert_eq!(config, PollerConfig::new("job", Duration::from_millis(250)));
        assert_eq!(config.shutdown_mode(), ShutdownMode::Finish);
        assert_eq!(config.concurrency(), None);
        let err = read("job_name = \"job\"").unwrap_err();
        assert!(
            err.to_string().contains("missing field `interval`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = read("job_name = \"job\"\ninterval = \"1m\"\nconcurency = 4").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `concurency`"),
            "{err}"
        );
    }

    #[test]
    fn invalid_values_carry_the_typed_message() {
        let err =
            read("job_name = \"job\"\ninterval = \"1s\"\nmin_lease_time = \"2s\"").unwrap_err();
        let expected = TenantError::MinLeaseAboveInterval {
            min: Duration::from_secs(2),
            interval: Duration::from_secs(1),
        };
        assert!(err.to_string().contains(&expected.to_string()), "{err}");
        let err = read("job_name = \"job\"\ninterval = \"0s\"").unwrap_err();
        let expected = TenantError::IntervalTooShort(Duration::ZERO);
        assert!(err.to_string().contains(&expected.to_string()), "{err}");
        let err = read("job_name = \"a{b}\"\ninterval = \"1s\"").unwrap_err();
        let expected = PollerConfig::new("a{b}", Duration::from_secs(1))
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains(&expected.to_string()), "{err}");
        let err = read("job_name = \"job\"\ninterval = \"1s\"\nconcurrency = 0").unwrap_err();
        assert!(err.to_string().contains("nonzero"), "{err}");
    }

    /// The exact text written, so the file format (and what it leaves out) cannot drift.
    #[test]
    fn writes_the_same_text() {
        let full = PollerConfig::new("sync-invoices", Duration::from_secs(90))
            .with_concurrency(16)
            .with_acquire_batch(32)
            .with_min_lease_time(Duration::from_secs(30))
            .with_cycle_end_guard(Duration::from_millis(500))
            .with_shutdown_mode(ShutdownMode::Abandon);
        assert_eq!(
            toml::to_string(&full).unwrap(),
            "job_name = \"sync-invoices\"\ninterval = \"1m 30s\"\nconcurrency = 16\nacquire_batch = 32\nmin_lease_time = \"30s\"\ncycle_end_guard = \"500ms\"\nshutdown_mode = \"abandon\"\n"
        );
        let minimal = PollerConfig::new("job", Duration::from_secs(60));
        assert_eq!(
            toml::to_string(&minimal).unwrap(),
            "job_name = \"job\"\ninterval = \"1m\"\nshutdown_mode = \"finish\"\n"
        );
    }
}
