//! Config files (feature `serde`): [`LeaderElectionOptions`] and [`CampaignConfig`] read
//! from and written to any serde format, with durations in human form (`"30s"`,
//! `"1m 30s"`, `"250ms"`, as the `humantime` crate reads and writes them).
//!
//! A field the file leaves out keeps its default, an unknown field is an error (a typo must
//! not be silently ignored), and the result is validated, so a bad value is a deserialize
//! error carrying the [`OptionsError`](crate::OptionsError) message.
//!
//! Why the fields are listed here and not derived on the types themselves: the settings
//! are checked against each other (`min_lease_time` against `lease_time`, the heartbeat and
//! the renew deadline against the lease), which needs all of them read, and serde's derive
//! has no step after the last field. So each type's `Deserialize` is written by hand, and
//! the field list it reads with is a serde `remote` definition of the type: serde builds
//! the type itself from it (no conversion code), the type's `Default` fills what the file
//! leaves out, and a field added to the type but not here does not compile. (Deriving on
//! the type with `remote = "Self"` would do the same but adds a public inherent
//! `deserialize` that skips the checks.)

use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::campaign::{CampaignConfig, DeploymentMode};
use crate::config::options::LeaderElectionOptions;

/// The fields of [`LeaderElectionOptions`] as a file holds them.
#[derive(Serialize, Deserialize)]
#[serde(
    remote = "LeaderElectionOptions",
    default = "LeaderElectionOptions::default",
    deny_unknown_fields
)]
struct OptionsFile {
    #[serde(with = "humantime_serde")]
    wait_time: Duration,
    #[serde(with = "humantime_serde")]
    lease_time: Duration,
    node_id: String,
    #[serde(with = "humantime_serde")]
    min_lease_time: Duration,
    auto_extend: bool,
    use_db_time: bool,
}

impl Serialize for LeaderElectionOptions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OptionsFile::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for LeaderElectionOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let options = OptionsFile::deserialize(deserializer)?;
        options.validate().map_err(D::Error::custom)?;
        Ok(options)
    }
}

/// The fields of [`CampaignConfig`] as a file holds them.
#[derive(Serialize, Deserialize)]
#[serde(
    remote = "CampaignConfig",
    default = "CampaignConfig::default",
    deny_unknown_fields
)]
struct CampaignFile {
    #[serde(with = "humantime_serde")]
    lease_time: Duration,
    #[serde(with = "humantime_serde")]
    heartbeat: Duration,
    /// Left out: two thirds of the lease, whatever the lease is.
    #[serde(with = "humantime_serde", skip_serializing_if = "Option::is_none")]
    renew_deadline: Option<Duration>,
    #[serde(with = "humantime_serde")]
    poll_interval: Duration,
    mode: DeploymentMode,
    /// Left out: an unranked campaign (the race decides).
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u32>,
    preempt: bool,
}

impl Serialize for CampaignConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CampaignFile::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for CampaignConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let config = CampaignFile::deserialize(deserializer)?;
        config.validate().map_err(D::Error::custom)?;
        Ok(config)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::OptionsError;

    fn options(text: &str) -> Result<LeaderElectionOptions, toml::de::Error> {
        toml::from_str(text)
    }

    fn campaign(text: &str) -> Result<CampaignConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn options_round_trip_through_toml() {
        let original = LeaderElectionOptions::default()
            .with_wait_time(Duration::ZERO)
            .with_lease_time(Duration::from_millis(90_250))
            .with_node_id("worker-7")
            .with_min_lease_time(Duration::from_secs(10))
            .with_auto_extend(true)
            .with_use_db_time(true);
        let text = toml::to_string(&original).unwrap();
        assert!(text.contains("lease_time = \"1m 30s 250ms\""), "{text}");
        assert_eq!(options(&text).unwrap(), original);
    }

    #[test]
    fn durations_are_read_in_human_form() {
        let o = options("wait_time = \"250ms\"\nlease_time = \"1m 30s\"").unwrap();
        assert_eq!(o.wait_time(), Duration::from_millis(250));
        assert_eq!(o.lease_time(), Duration::from_secs(90));
        let err = options("lease_time = \"5 parsecs\"").unwrap_err();
        assert!(err.to_string().contains("lease_time"), "{err}");
        assert!(
            options("lease_time = 30").is_err(),
            "a bare number has no unit"
        );
    }

    #[test]
    fn missing_fields_keep_the_defaults() {
        assert_eq!(options("").unwrap(), LeaderElectionOptions::default());
        let o = options("auto_extend = true").unwrap();
        assert!(o.auto_extend());
        assert_eq!(o.node_id(), LeaderElectionOptions::default().node_id());
        assert!(o.node_id().ends_with(&format!(":{}", std::process::id())));
        assert_eq!(campaign("").unwrap(), CampaignConfig::default());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = options("lease_tme = \"5s\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `lease_tme`"),
            "{err}"
        );
        let err = campaign("heartbeats = \"1s\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `heartbeats`"),
            "{err}"
        );
    }

    #[test]
    fn invalid_options_carry_the_typed_message() {
        let err = options("lease_time = \"10s\"\nmin_lease_time = \"11s\"").unwrap_err();
        let expected = OptionsError::MinLeaseAboveLease {
            min: Duration::from_secs(11),
            lease: Duration::from_secs(10),
        };
        assert!(err.to_string().contains(&expected.to_string()), "{err}");
        let err = options("node_id = \"\"").unwrap_err();
        assert!(
            err.to_string()
                .contains(&OptionsError::EmptyNodeId.to_string()),
            "{err}"
        );
        let err = campaign("heartbeat = \"0s\"").unwrap_err();
        let expected = OptionsError::ZeroDuration { field: "heartbeat" };
        assert!(err.to_string().contains(&expected.to_string()), "{err}");
    }

    #[test]
    fn campaign_round_trips_with_and_without_a_renew_deadline() {
        let implicit = CampaignConfig::default()
            .with_lease_time(Duration::from_secs(30))
            .with_mode(DeploymentMode::AllInstances);
        let text = toml::to_string(&implicit).unwrap();
        assert!(!text.contains("renew_deadline"), "{text}");
        assert!(text.contains("mode = \"all_instances\""), "{text}");
        assert_eq!(campaign(&text).unwrap(), implicit);

        let explicit = implicit.with_renew_deadline(Duration::from_secs(12));
        let text = toml::to_string(&explicit).unwrap();
        assert!(text.contains("renew_deadline = \"12s\""), "{text}");
        assert_eq!(campaign(&text).unwrap(), explicit);
    }

    #[test]
    fn campaign_reads_its_mode_and_durations() {
        let c = campaign(
            "lease_time = \"10s\"\nheartbeat = \"2s\"\npoll_interval = \"250ms\"\nmode = \"single_leader\"",
        )
        .unwrap();
        assert_eq!(c.lease_time(), Duration::from_secs(10));
        assert_eq!(c.heartbeat(), Duration::from_secs(2));
        assert_eq!(c.poll_interval(), Duration::from_millis(250));
        assert_eq!(c.mode(), DeploymentMode::SingleLeader);
        assert!(campaign("mode = \"everyone\"").is_err());
    }

    #[test]
    fn campaign_reads_and_writes_its_rank() {
        let ranked = campaign("rank = 3\npreempt = false").unwrap();
        assert_eq!((ranked.rank(), ranked.preempts()), (Some(3), false));
        let text = toml::to_string(&ranked).unwrap();
        assert!(
            text.contains("rank = 3") && text.contains("preempt = false"),
            "{text}"
        );
        assert_eq!(campaign(&text).unwrap(), ranked);

        let unranked = campaign("").unwrap();
        assert_eq!((unranked.rank(), unranked.preempts()), (None, true));
        assert!(!toml::to_string(&unranked).unwrap().contains("rank ="));
        assert!(campaign("rank = -1").is_err());
    }

    /// The exact text written, so the file format (and what it leaves out) cannot drift.
    #[test]
    fn writes_the_same_text() {
        let options = LeaderElectionOptions::default()
            .with_wait_time(Duration::ZERO)
            .with_lease_time(Duration::from_millis(90_250))
            .with_node_id("worker-7")
            .with_min_lease_time(Duration::from_secs(10))
            .with_auto_extend(true)
            .with_use_db_time(true);
        assert_eq!(
            toml::to_string(&options).unwrap(),
            "wait_time = \"0s\"\nlease_time = \"1m 30s 250ms\"\nnode_id = \"worker-7\"\nmin_lease_time = \"10s\"\nauto_extend = true\nuse_db_time = true\n"
        );
        let full = CampaignConfig::default()
            .with_lease_time(Duration::from_secs(30))
            .with_heartbeat(Duration::from_secs(2))
            .with_renew_deadline(Duration::from_secs(12))
            .with_poll_interval(Duration::from_millis(250))
            .with_mode(DeploymentMode::AllInstances)
            .with_rank(3)
            .with_preemption(false);
        assert_eq!(
            toml::to_string(&full).unwrap(),
            "lease_time = \"30s\"\nheartbeat = \"2s\"\nrenew_deadline = \"12s\"\npoll_interval = \"250ms\"\nmode = \"all_instances\"\nrank = 3\npreempt = false\n"
        );
        assert_eq!(
            toml::to_string(&CampaignConfig::default()).unwrap(),
            "lease_time = \"5s\"\nheartbeat = \"1s\"\npoll_interval = \"500ms\"\nmode = \"single_leader\"\npreempt = true\n"
        );
    }
}
