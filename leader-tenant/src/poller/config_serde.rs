//! Config files (feature `serde`): [`PollerConfig`] read from and written to any serde
//! format, through a plain mirror of its settings (see the type's `# Configuration files`).

use std::num::NonZeroUsize;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::poller::config::{PollerConfig, ShutdownMode};

/// The settings of [`PollerConfig`] as a file holds them; `job_name` and `interval` are
/// required, the rest optional.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PollerConfigFile {
    job_name: String,
    #[serde(with = "humantime_serde")]
    interval: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    concurrency: Option<NonZeroUsize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    acquire_batch: Option<NonZeroUsize>,
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    min_lease_time: Option<Duration>,
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    cycle_end_guard: Option<Duration>,
    #[serde(default)]
    shutdown_mode: ShutdownMode,
}

impl Serialize for PollerConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        PollerConfigFile {
            job_name: self.job_name().to_owned(),
            interval: self.interval(),
            concurrency: self.concurrency().and_then(NonZeroUsize::new),
            acquire_batch: self.explicit_acquire_batch().and_then(NonZeroUsize::new),
            min_lease_time: self.fixed_min_lease_time(),
            cycle_end_guard: self.explicit_cycle_end_guard(),
            shutdown_mode: self.shutdown_mode(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PollerConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = PollerConfigFile::deserialize(deserializer)?;
        let mut config =
            PollerConfig::new(file.job_name, file.interval).with_shutdown_mode(file.shutdown_mode);
        if let Some(concurrency) = file.concurrency {
            config = config.with_concurrency(concurrency.get());
        }
        if let Some(batch) = file.acquire_batch {
            config = config.with_acquire_batch(batch.get());
        }
        if let Some(min_lease) = file.min_lease_time {
            config = config.with_min_lease_time(min_lease);
        }
        if let Some(guard) = file.cycle_end_guard {
            config = config.with_cycle_end_guard(guard);
        }
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
