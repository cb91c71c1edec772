//! [`CampaignConfig`] and [`DeploymentMode`]: how a continuous leadership campaign runs,
//! renews and fails over.

use std::time::Duration;

use crate::config::options::LeaderElectionOptions;
use crate::error::OptionsError;

/// Whether a campaign elects one leader or lets every instance lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum DeploymentMode {
    /// One instance leads; the others stand by and take over when it goes.
    #[default]
    SingleLeader,
    /// Every instance leads at once (backed by [`NoopBackend`](crate::NoopBackend)), so the
    /// same service code runs in deployments that shard work some other way.
    AllInstances,
}

/// How a continuous-leadership campaign behaves.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `lease_time` | 5 s | the lock's TTL; a crashed leader blocks others at most this long |
/// | `heartbeat` | 1 s | how often the leader renews (at most `lease_time / 3`) |
/// | `renew_deadline` | 2/3 of the lease | the leader steps down if no renewal succeeded for this long |
/// | `poll_interval` | 500 ms | how often standbys retry (they also wake at once on a release notification) |
/// | `mode` | single leader | or every instance leads |
/// | `rank` | none | ranked leadership: the live candidate of the highest rank leads |
/// | `preempt` | on | with a rank: a leader hands over to a higher-ranked candidate |
///
/// **Ranked leadership.** With [`with_rank`](Self::with_rank), candidates publish their
/// rank in the backend: each holds a membership record of its own, the lock
/// `<name>#rank:<rank>:<hash of the node id>`, renewed every heartbeat and expired by the
/// backend like any lease, so a crashed candidate drops out within `lease_time`. A standby
/// only tries for the lock while no live candidate ranks above it (equal ranks race). With
/// `preempt` on, a leader surveys the candidates after each renewal and, when it sees a
/// higher-ranked one, ends its term
/// ([`RevokeReason::Preempted`](crate::RevokeReason::Preempted)) and releases, and that
/// candidate takes over: within one heartbeat plus a few round trips where the backend
/// notifies releases (Redis, PostgreSQL, in-memory), plus up to `poll_interval` where it
/// does not. With `preempt` off, rank decides only among the standbys when the leader goes.
/// The price is one listing per poll (a leader lists only when it can be preempted) and one
/// membership renewal per heartbeat. A listing costs O(candidates) on every backend: a
/// primary-key range on SQLite and PostgreSQL, an `_id` range on MongoDB, and on Redis one
/// read of the name's own index of candidates (never a `SCAN` of the keyspace).
///
/// A leader's term is its lock's. Its survey (the membership renewal and the listing) runs
/// beside its renewals, one at a time, and the verdict counts when it arrives: a survey
/// that is slow, hangs or fails never ends a term whose renewals succeed, however many
/// renew deadlines it outlasts; only a higher live rank it finds does (the trade-off: a
/// leader whose listing hangs does not hand over until the listing answers, which is
/// preferable to leaderless gaps while a busy store is slow to list).
///
/// A candidate that resigns, or whose handle is dropped, releases its record before its
/// lock, so the standby that the lock's release wakes no longer sees it, and so does an
/// async campaign whose runtime shuts down (in the background). A heartbeat still on its
/// way when it resigns (a leader does not wait for its survey) may land afterwards and
/// write the record again: the record is then released again, with backoff, for as long
/// as such a heartbeat could land, so it lives at most about half a second after landing,
/// not a lease. A campaign stopped with its handle's `abandon` leaves its record to run
/// out, as a crash would.
///
/// The record is named by the node id, so each candidate of a name needs a node id of its
/// own (two candidates with one id share one record: only one of them is counted), and
/// one that stays the same across restarts: each distinct node id leaves its small record
/// in the store after it goes (backends keep every lock's fencing counter; on Redis a
/// `:fence` key), and the listing reads past them. The default node id, `hostname:pid`,
/// changes with every restart: give ranked campaigns a stable one (a pod's name in a
/// StatefulSet, the host's name, `region-a`).
///
/// Rank is a preference; the lock alone keeps one leader. So a listing that fails never
/// stops a takeover: that standby tries for the lock as if unranked (a leader keeps its
/// term), and rank applies again once listing works. Campaigns on one name should agree
/// on ranking: an unranked candidate neither publishes a rank nor defers to one. Ranked
/// leadership elects one leader: a group campaign with a rank is refused
/// ([`OptionsError::RankedGroup`]).
///
/// **Failover bounds.** A leader that crashes stops renewing; its lock frees when its lease
/// runs out, and a standby takes it at its next poll: at most `lease_time + poll_interval`
/// (5.5 s with the defaults). A leader that resigns (or is dropped) releases at once and
/// standbys are notified where the backend can (Redis pub/sub, in-memory): a takeover in
/// about one notification plus one round trip; otherwise within `poll_interval`.
///
/// **Fail-stop.** The leader counts its term from *before* each renewal request and stops
/// being leader when `renew_deadline` has passed since the last successful one, or at once
/// when a renewal fails or finds the lease gone — always before the lease could have passed
/// to another instance (`renew_deadline < lease_time`, like client-go's `RenewDeadline`).
/// The same deadline applies to the attempt that would start a term: a standby whose
/// acquire is answered after `renew_deadline` from its send (a paused process, a stalled
/// server) starts no term and fires no `Elected` event; it releases that lease in the
/// background and keeps campaigning with a new owner token.
///
/// # Configuration files
///
/// With the `serde` feature the config reads from (and writes to) any serde format, with
/// the settings above as fields, durations in human form (`"10s"`, `"1m 30s"`, `"250ms"`)
/// and `mode` as `"single_leader"` or `"all_instances"`. A field left out keeps its default
/// (`renew_deadline`: two thirds of the lease), an unknown field is an error, and the result
/// is validated: a bad value is a deserialize error carrying the [`OptionsError`] message.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_core::CampaignConfig;
///
/// let config: CampaignConfig = toml::from_str(
///     r#"
///     lease_time = "10s"
///     heartbeat = "2s"
///     "#,
/// )?;
/// assert_eq!(config.renew_deadline(), Duration::from_secs(10) * 2 / 3);
/// assert_eq!(config.poll_interval(), Duration::from_millis(500));
///
/// let bad = toml::from_str::<CampaignConfig>(r#"heartbeat = "4s""#).unwrap_err();
/// assert!(bad.to_string().contains("at most a third of the lease"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::CampaignConfig;
///
/// let config = CampaignConfig::default()
///     .with_lease_time(Duration::from_secs(10))
///     .with_heartbeat(Duration::from_secs(2));
/// config.validate()?;
/// assert_eq!(config.renew_deadline(), Duration::from_secs(10) * 2 / 3);
/// # Ok::<(), leader_core::OptionsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CampaignConfig {
    // `pub(super)` at least: the config file form (`config_serde`) reads and writes them.
    pub(crate) lease_time: Duration,
    pub(crate) heartbeat: Duration,
    pub(super) renew_deadline: Option<Duration>,
    pub(crate) poll_interval: Duration,
    pub(super) mode: DeploymentMode,
    pub(crate) rank: Option<u32>,
    pub(super) preempt: bool,
}

impl Default for CampaignConfig {
    fn default() -> Self {
        CampaignConfig {
            lease_time: Duration::from_secs(5),
            heartbeat: Duration::from_secs(1),
            renew_deadline: None,
            poll_interval: Duration::from_millis(500),
            mode: DeploymentMode::SingleLeader,
            rank: None,
            preempt: true,
        }
    }
}

impl CampaignConfig {
    /// Sets the lock's TTL.
    pub fn with_lease_time(mut self, lease_time: Duration) -> Self {
        self.lease_time = lease_time;
        self
    }

    /// Sets how often the leader renews.
    pub fn with_heartbeat(mut self, heartbeat: Duration) -> Self {
        self.heartbeat = heartbeat;
        self
    }

    /// Sets how long the leader may go without a successful renewal before stepping down.
    pub fn with_renew_deadline(mut self, renew_deadline: Duration) -> Self {
        self.renew_deadline = Some(renew_deadline);
        self
    }

    /// Sets how often standbys retry.
    pub fn with_poll_interval(mut self, poll_interval: Duration) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Sets the deployment mode.
    pub fn with_mode(mut self, mode: DeploymentMode) -> Self {
        self.mode = mode;
        self
    }

    /// Makes the campaign ranked: among the live candidates for the name, the highest
    /// `rank` leads (see the type's docs). The candidate heartbeats a membership record,
    /// and its surveys of the others cost O(candidates) on every backend, run beside a
    /// leader's renewals and never end a term whose renewals succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::CampaignConfig;
    ///
    /// let primary = CampaignConfig::default().with_rank(2);
    /// let fallback = CampaignConfig::default().with_rank(1).with_preemption(false);
    /// assert_eq!((primary.rank(), primary.preempts()), (Some(2), true));
    /// assert_eq!((fallback.rank(), fallback.preempts()), (Some(1), false));
    /// ```
    pub fn with_rank(mut self, rank: u32) -> Self {
        self.rank = Some(rank);
        self
    }

    /// With a rank: whether a leader hands over to a higher-ranked candidate that appears
    /// (on by default). Off, rank only decides among standbys when the leader goes.
    pub fn with_preemption(mut self, preempt: bool) -> Self {
        self.preempt = preempt;
        self
    }

    /// The campaign's rank, if it is ranked.
    pub fn rank(&self) -> Option<u32> {
        self.rank
    }

    /// Whether a ranked leader hands over to a higher-ranked candidate.
    pub fn preempts(&self) -> bool {
        self.preempt
    }

    /// The lock's TTL.
    pub fn lease_time(&self) -> Duration {
        self.lease_time
    }

    /// How often the leader renews.
    pub fn heartbeat(&self) -> Duration {
        self.heartbeat
    }

    /// How long the leader may go without a successful renewal (default: 2/3 of the lease).
    pub fn renew_deadline(&self) -> Duration {
        self.renew_deadline.unwrap_or(self.lease_time * 2 / 3)
    }

    /// How often standbys retry.
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval
    }

    /// The deployment mode.
    pub fn mode(&self) -> DeploymentMode {
        self.mode
    }

    /// Checks the settings against each other.
    ///
    /// # Errors
    ///
    /// An [`OptionsError`] naming the bad setting.
    pub fn validate(&self) -> Result<(), OptionsError> {
        LeaderElectionOptions::default()
            .with_lease_time(self.lease_time)
            .validate()?;
        for (field, value) in [
            ("heartbeat", self.heartbeat),
            ("poll_interval", self.poll_interval),
        ] {
            if value.is_zero() {
                return Err(OptionsError::ZeroDuration { field });
            }
        }
        if self.heartbeat * 3 > self.lease_time {
            return Err(OptionsError::HeartbeatTooLong {
                heartbeat: self.heartbeat,
                lease: self.lease_time,
            });
        }
        let deadline = self.renew_deadline();
        if deadline <= self.heartbeat || deadline >= self.lease_time {
            return Err(OptionsError::RenewDeadlineOutOfRange {
                renew_deadline: deadline,
                heartbeat: self.heartbeat,
                lease: self.lease_time,
            });
        }
        if self.poll_interval > self.lease_time {
            return Err(OptionsError::DurationTooLong {
                field: "poll_interval",
                value: self.poll_interval,
                max: self.lease_time,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_fail_over_in_seconds() {
        let c = CampaignConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert!(c.lease_time() + c.poll_interval() <= Duration::from_secs(6));
    }

    #[test]
    fn each_inconsistent_setting_is_a_typed_error() {
        let c = CampaignConfig::default;
        assert!(matches!(
            c().with_heartbeat(Duration::from_secs(2)).validate(),
            Err(OptionsError::HeartbeatTooLong { .. })
        ));
        assert_eq!(
            c().with_heartbeat(Duration::ZERO).validate(),
            Err(OptionsError::ZeroDuration { field: "heartbeat" })
        );
        assert!(matches!(
            c().with_renew_deadline(Duration::from_secs(5)).validate(),
            Err(OptionsError::RenewDeadlineOutOfRange { .. })
        ));
        assert!(matches!(
            c().with_renew_deadline(Duration::from_millis(500))
                .validate(),
            Err(OptionsError::RenewDeadlineOutOfRange { .. })
        ));
        assert!(matches!(
            c().with_poll_interval(Duration::from_secs(6)).validate(),
            Err(OptionsError::DurationTooLong {
                field: "poll_interval",
                ..
            })
        ));
        assert!(matches!(
            c().with_lease_time(Duration::ZERO).validate(),
            Err(OptionsError::LeaseTooShort(_))
        ));
    }
}
