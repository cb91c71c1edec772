//! Config files (feature `serde`): the field reader of [`SqliteConfig`]'s derived serde
//! support (see the type's `# Configuration files`).

use std::time::Duration;

use serde::Deserializer;

use crate::config::SqliteConfig;

/// `busy_timeout` in human form, cut to [`SqliteConfig::MAX_BUSY_TIMEOUT`] as
/// [`SqliteConfig::with_busy_timeout`] cuts it.
pub(crate) fn busy_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    let timeout: Duration = humantime_serde::deserialize(deserializer)?;
    Ok(timeout.min(SqliteConfig::MAX_BUSY_TIMEOUT))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<SqliteConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn round_trips_through_toml() {
        let original = SqliteConfig::new().with_busy_timeout(Duration::from_millis(1500));
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("busy_timeout = \"1s 500ms\""), "{text}");
        assert_eq!(read(&text).unwrap(), original, "{text}");
    }

    #[test]
    fn human_durations_defaults_and_the_longest_timeout() {
        let config = read("busy_timeout = \"1m 30s\"").unwrap();
        assert_eq!(config.busy_timeout(), Duration::from_secs(90));
        assert_eq!(read("").unwrap(), SqliteConfig::default());
        let config = read("busy_timeout = \"100days\"").unwrap();
        assert_eq!(config.busy_timeout(), SqliteConfig::MAX_BUSY_TIMEOUT);
    }

    #[test]
    fn unknown_fields_and_bad_durations_are_rejected() {
        let err = read("busy_timout = \"1s\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `busy_timout`"),
            "{err}"
        );
        let err = read("busy_timeout = \"soon\"").unwrap_err();
        assert!(err.to_string().contains("busy_timeout"), "{err}");
    }

    /// The exact text written, so the file format cannot drift.
    #[test]
    fn writes_the_same_text() {
        let text = toml::to_string(&SqliteConfig::default()).unwrap();
        assert_eq!(text, "busy_timeout = \"5s\"\n");
    }
}
