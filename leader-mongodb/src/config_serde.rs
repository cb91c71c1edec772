//! Config files (feature `serde`): the field readers and writers of [`MongoConfig`]'s
//! derived serde support (see the type's `# Configuration files`). Each value is checked
//! as it is read; the write concern, a driver type, goes through a table of its own.

use std::fmt;
use std::time::Duration;

use mongodb::options::{Acknowledgment, WriteConcern};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de, ser};

/// A write concern as a file holds it: `w`, `journal`, `w_timeout`. A field left out takes
/// the library's default (majority, journaled, no timeout), never the server's weaker one.
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct WriteConcernFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    w: Option<W>,
    #[serde(skip_serializing_if = "Option::is_none")]
    journal: Option<bool>,
    #[serde(with = "humantime_serde", skip_serializing_if = "Option::is_none")]
    w_timeout: Option<Duration>,
}

impl Default for WriteConcernFile {
    fn default() -> Self {
        WriteConcernFile {
            w: Some(W(Acknowledgment::Majority)),
            journal: Some(true),
            w_timeout: None,
        }
    }
}

/// `w`: `"majority"`, a number of nodes, or the name of a custom write concern (tag set).
struct W(Acknowledgment);

/// Why a config file's values were rejected.
#[derive(Debug, thiserror::Error)]
enum Invalid {
    #[error("{0} must be greater than zero (leave it out for the default)")]
    ZeroDuration(&'static str),
    #[error("{0} must not be empty")]
    EmptyName(&'static str),
    #[error("write_concern.w must be at least 1: a lock needs acknowledged writes")]
    Unacknowledged,
    #[error("write_concern.w is of a kind this version cannot write to a config file")]
    UnknownAcknowledgment,
}

impl Serialize for W {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Acknowledgment::Majority => serializer.serialize_str("majority"),
            Acknowledgment::Nodes(nodes) => serializer.serialize_u32(*nodes),
            Acknowledgment::Custom(name) => serializer.serialize_str(name),
            _ => Err(ser::Error::custom(Invalid::UnknownAcknowledgment)),
        }
    }
}

impl<'de> Deserialize<'de> for W {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WVisitor)
    }
}

struct WVisitor;

impl de::Visitor<'_> for WVisitor {
    type Value = W;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"majority\", a number of nodes (at least 1), or a custom write concern name")
    }

    fn visit_u64<E: de::Error>(self, nodes: u64) -> Result<W, E> {
        match u32::try_from(nodes) {
            Ok(0) => Err(E::custom(Invalid::Unacknowledged)),
            Ok(nodes) => Ok(W(Acknowledgment::Nodes(nodes))),
            Err(_) => Err(E::invalid_value(de::Unexpected::Unsigned(nodes), &self)),
        }
    }

    fn visit_i64<E: de::Error>(self, nodes: i64) -> Result<W, E> {
        match u64::try_from(nodes) {
            Ok(nodes) => self.visit_u64(nodes),
            Err(_) => Err(E::invalid_value(de::Unexpected::Signed(nodes), &self)),
        }
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<W, E> {
        if name.is_empty() {
            return Err(E::custom(Invalid::EmptyName("write_concern.w")));
        }
        Ok(W(Acknowledgment::from(name)))
    }
}

impl WriteConcernFile {
    fn from_concern(concern: &WriteConcern) -> Self {
        WriteConcernFile {
            w: concern.w.clone().map(W),
            journal: concern.journal,
            w_timeout: concern.w_timeout,
        }
    }

    /// The write concern, with the library's defaults for what the file left out.
    fn into_concern(self) -> Result<WriteConcern, Invalid> {
        let defaults = WriteConcernFile::default();
        if self.w_timeout.is_some_and(|t| t.is_zero()) {
            return Err(Invalid::ZeroDuration("write_concern.w_timeout"));
        }
        Ok(WriteConcern::builder()
            .w(self.w.or(defaults.w).map(|w| w.0))
            .journal(self.journal.or(defaults.journal))
            .w_timeout(self.w_timeout)
            .build())
    }
}

/// `Err` with `invalid` when `bad`.
fn refuse<E: de::Error>(bad: bool, invalid: Invalid) -> Result<(), E> {
    if bad {
        return Err(E::custom(invalid));
    }
    Ok(())
}

/// A duration in human form, refused when zero.
fn duration<'de, D: Deserializer<'de>>(
    deserializer: D,
    field: &'static str,
) -> Result<Duration, D::Error> {
    let value: Duration = humantime_serde::deserialize(deserializer)?;
    refuse(value.is_zero(), Invalid::ZeroDuration(field))?;
    Ok(value)
}

/// An optional duration in human form, refused when zero.
fn optional_duration<'de, D: Deserializer<'de>>(
    deserializer: D,
    field: &'static str,
) -> Result<Option<Duration>, D::Error> {
    let value: Option<Duration> = humantime_serde::deserialize(deserializer)?;
    refuse(
        value.is_some_and(|v| v.is_zero()),
        Invalid::ZeroDuration(field),
    )?;
    Ok(value)
}

/// A name, refused when empty.
fn name<'de, D: Deserializer<'de>>(
    deserializer: D,
    field: &'static str,
) -> Result<String, D::Error> {
    let name = String::deserialize(deserializer)?;
    refuse(name.is_empty(), Invalid::EmptyName(field))?;
    Ok(name)
}

/// `database`, not empty (leave it out for the connection string's).
pub(crate) fn database<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let name = Option::<String>::deserialize(deserializer)?;
    refuse(name.as_deref() == Some(""), Invalid::EmptyName("database"))?;
    Ok(name)
}

/// `collection`, not empty.
pub(crate) fn collection<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    name(deserializer, "collection")
}

/// `max_time`, above zero.
pub(crate) fn max_time<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    duration(deserializer, "max_time")
}

/// `server_selection_timeout`, above zero (leave it out for the URI's).
pub(crate) fn server_selection_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    optional_duration(deserializer, "server_selection_timeout")
}

/// `connect_timeout`, above zero (leave it out for the URI's).
pub(crate) fn connect_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    optional_duration(deserializer, "connect_timeout")
}

/// `operation_timeout`, above zero.
pub(crate) fn operation_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    duration(deserializer, "operation_timeout")
}

/// `write_concern`: the driver's [`WriteConcern`] in the config, a [`WriteConcernFile`]
/// table in a file (the driver's own serde form has other names and no human durations,
/// and takes the server's defaults for what it leaves out).
pub(crate) mod write_concern {
    use mongodb::options::WriteConcern;
    use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

    use super::WriteConcernFile;

    /// Writes the set parts of `concern`.
    pub(crate) fn serialize<S: Serializer>(
        concern: &WriteConcern,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        WriteConcernFile::from_concern(concern).serialize(serializer)
    }

    /// Reads a write concern, with this crate's defaults for what the file leaves out.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<WriteConcern, D::Error> {
        WriteConcernFile::deserialize(deserializer)?
            .into_concern()
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::MongoConfig;

    fn read(text: &str) -> Result<MongoConfig, toml::de::Error> {
        toml::from_str(text)
    }

    fn concern(config: &MongoConfig) -> (Option<Acknowledgment>, Option<bool>, Option<Duration>) {
        let c = config.write_concern();
        (c.w.clone(), c.journal, c.w_timeout)
    }

    /// `MongoConfig` has no `PartialEq`; its `Debug` shows every setting.
    fn same(a: &MongoConfig, b: &MongoConfig) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn round_trips_through_toml() {
        let original = MongoConfig::new()
            .with_database("ops")
            .with_collection("locks")
            .with_write_concern(
                WriteConcern::builder()
                    .w(Acknowledgment::Nodes(2))
                    .journal(false)
                    .w_timeout(Duration::from_secs(3))
                    .build(),
            )
            .with_max_time(Duration::from_millis(2500))
            .with_server_selection_timeout(Duration::from_secs(2))
            .with_connect_timeout(Duration::from_secs(1))
            .with_operation_timeout(Duration::from_secs(20))
            .with_release_notifications(false);
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("release_notifications = false"), "{text}");
        assert!(text.contains("max_time = \"2s 500ms\""), "{text}");
        assert!(same(&read(&text).unwrap(), &original), "{text}");
        let custom = MongoConfig::new().with_write_concern(WriteConcern::custom("two-dcs"));
        let text = toml::to_string(&custom).unwrap();
        let back = read(&text).unwrap();
        assert_eq!(
            back.write_concern().w,
            Some(Acknowledgment::Custom("two-dcs".into()))
        );
    }

    #[test]
    fn defaults_fill_what_the_file_leaves_out() {
        assert!(same(&read("").unwrap(), &MongoConfig::default()));
        let config = read("[write_concern]\nw_timeout = \"5s\"").unwrap();
        assert_eq!(
            concern(&config),
            (
                Some(Acknowledgment::Majority),
                Some(true),
                Some(Duration::from_secs(5))
            ),
            "never the server's weaker default"
        );
        let config = read("write_concern = { w = 3, journal = false }").unwrap();
        assert_eq!(
            concern(&config),
            (Some(Acknowledgment::Nodes(3)), Some(false), None)
        );
        let config = read("operation_timeout = \"1m 30s\"").unwrap();
        assert_eq!(config.operation_timeout(), Duration::from_secs(90));
        assert_eq!(config.database(), None);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = read("colection = \"x\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `colection`"),
            "{err}"
        );
        let err = read("[write_concern]\nj = true").unwrap_err();
        assert!(err.to_string().contains("unknown field `j`"), "{err}");
    }

    #[test]
    fn invalid_values_are_rejected_with_their_reason() {
        for (text, reason) in [
            (
                "operation_timeout = \"0s\"",
                Invalid::ZeroDuration("operation_timeout"),
            ),
            ("max_time = \"0ms\"", Invalid::ZeroDuration("max_time")),
            ("collection = \"\"", Invalid::EmptyName("collection")),
            ("database = \"\"", Invalid::EmptyName("database")),
            ("write_concern = { w = 0 }", Invalid::Unacknowledged),
        ] {
            let err = read(text).unwrap_err();
            assert!(
                err.to_string().contains(&reason.to_string()),
                "{text}: {err}"
            );
        }
        let err = read("write_concern = { w = true }").unwrap_err();
        assert!(err.to_string().contains("a number of nodes"), "{err}");
    }

    /// The exact text written, so the file format (and what it leaves out) cannot drift.
    #[test]
    fn writes_the_same_text() {
        let full = MongoConfig::new()
            .with_database("ops")
            .with_collection("locks")
            .with_write_concern(
                WriteConcern::builder()
                    .w(Acknowledgment::Nodes(2))
                    .journal(false)
                    .w_timeout(Duration::from_secs(3))
                    .build(),
            )
            .with_max_time(Duration::from_millis(2500))
            .with_server_selection_timeout(Duration::from_secs(2))
            .with_connect_timeout(Duration::from_secs(1))
            .with_operation_timeout(Duration::from_secs(20))
            .with_release_notifications(false);
        assert_eq!(
            toml::to_string(&full).unwrap(),
            "database = \"ops\"\ncollection = \"locks\"\nmax_time = \"2s 500ms\"\nserver_selection_timeout = \"2s\"\nconnect_timeout = \"1s\"\noperation_timeout = \"20s\"\nrelease_notifications = false\n\n[write_concern]\nw = 2\njournal = false\nw_timeout = \"3s\"\n"
        );
        assert_eq!(
            toml::to_string(&MongoConfig::default()).unwrap(),
            "collection = \"leader_locks\"\nmax_time = \"5s\"\noperation_timeout = \"15s\"\nrelease_notifications = true\n\n[write_concern]\nw = \"majority\"\njournal = true\n"
        );
        let bare = MongoConfig::new().with_write_concern(WriteConcern::custom("two-dcs"));
        assert_eq!(
            toml::to_string(&bare).unwrap(),
            "collection = \"leader_locks\"\nmax_time = \"5s\"\noperation_timeout = \"15s\"\nrelease_notifications = true\n\n[write_concern]\nw = \"two-dcs\"\n"
        );
    }

    /// Each value is checked as it is read, so the error points at its line.
    #[test]
    fn a_bad_value_is_refused_at_its_line() {
        let err = read("collection = \"locks\"\nmax_time = \"0s\"").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = read("max_time = \"1s\"\ncollection = \"\"").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
