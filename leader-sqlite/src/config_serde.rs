//! Config files (feature `serde`): [`SqliteConfig`] read from and written to any serde
//! format, through a plain mirror of its settings (see the type's `# Configuration files`).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::SqliteConfig;

/// The settings of [`SqliteConfig`] as a file holds them.
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SqliteConfigFile {
    #[serde(with = "humantime_serde")]
    busy_timeout: Duration,
}

impl Default for SqliteConfigFile {
    fn default() -> Self {
        SqliteConfigFile {
            busy_timeout: SqliteConfig::default().busy_timeout(),
        }
    }
}

impl Serialize for SqliteConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SqliteConfigFile {
            busy_timeout: self.busy_timeout(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SqliteConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let file = SqliteConfigFile::deserialize(deserializer)?;
        Ok(SqliteConfig::new().with_busy_timeout(file.busy_timeout))
    }
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
