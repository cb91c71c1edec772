//! [`LeaderElectionOptions`]: the one options type every elector takes.

use std::time::Duration;

use crate::error::OptionsError;

/// How an elector competes for a lock.
///
/// | option | default | meaning |
/// |---|---|---|
/// | `wait_time` | 5 s | how long to keep trying while another node holds the lock; zero tries once |
/// | `lease_time` | 60 s | how long an acquisition lasts unless renewed |
/// | `node_id` | `hostname:pid` | reported as the leader id; for humans, never used for ownership |
/// | `min_lease_time` | 0 | release keeps the lock until `acquired_at + min_lease_time` (stops fast jobs from running twice in one period) |
/// | `auto_extend` | false | renew the lease every `lease_time / 3` while the action runs |
/// | `use_db_time` | false | take the reported timestamps from the backend server's clock instead of this node's |
///
/// **Clocks and expiry.** Whatever `use_db_time` says, the server backends decide expiry on
/// the server's clock, never on the nodes' (which drift apart): Redis by the key's `PX`,
/// MongoDB by comparing with `$$NOW`, so node clock skew can never let two nodes hold one
/// lock. `use_db_time` only picks the clock of the `acquired_at` / `expires_at` a lease
/// reports; MongoDB always reports the server's, since its stored times are the ones that
/// decide. The in-memory backend expires by its monotonic clock.
///
/// # Configuration files
///
/// With the `serde` feature the options read from (and write to) any serde format (TOML,
/// YAML, JSON, ...), with the options above as fields and durations in human form (`"30s"`,
/// `"1m 30s"`, `"250ms"`). A field left out keeps its default (the node id stays
/// `hostname:pid`), an unknown field is an error, and the result is validated: a bad value
/// is a deserialize error carrying the [`OptionsError`] message. Serializing writes every
/// field, the node id included.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use std::time::Duration;
/// use leader_core::LeaderElectionOptions;
///
/// let options: LeaderElectionOptions = toml::from_str(
///     r#"
///     wait_time = "0s"
///     lease_time = "1m 30s"
///     auto_extend = true
///     "#,
/// )?;
/// assert_eq!(options.lease_time(), Duration::from_secs(90));
/// assert!(options.node_id().ends_with(&format!(":{}", std::process::id())));
///
/// let typo = toml::from_str::<LeaderElectionOptions>(r#"lease_tme = "30s""#);
/// assert!(typo.unwrap_err().to_string().contains("unknown field"));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::LeaderElectionOptions;
///
/// let options = LeaderElectionOptions::default()
///     .with_wait_time(Duration::ZERO)
///     .with_lease_time(Duration::from_secs(30))
///     .with_auto_extend(true);
/// options.validate()?;
/// assert_eq!(options.lease_time(), Duration::from_secs(30));
/// # Ok::<(), leader_core::OptionsError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionOptions {
    // `pub(super)`: the config file form (`config_serde`) reads and writes them.
    pub(super) wait_time: Duration,
    pub(super) lease_time: Duration,
    pub(super) node_id: String,
    pub(super) min_lease_time: Duration,
    pub(super) auto_extend: bool,
    pub(super) use_db_time: bool,
}

impl LeaderElectionOptions {
    /// The longest accepted duration (about 100 years), so that `now + duration` fits a
    /// millisecond timestamp in every backend.
    pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    /// The longest accepted node id, in bytes.
    pub const MAX_NODE_ID_LEN: usize = 255;

    /// The defaults: wait 5 s, lease 60 s, node id `hostname:pid`, no minimum lease,
    /// no auto-extend, node clock.
    pub fn new() -> Self {
        LeaderElectionOptions {
            wait_time: Duration::from_secs(5),
            lease_time: Duration::from_secs(60),
            node_id: default_node_id(),
            min_lease_time: Duration::ZERO,
            auto_extend: false,
            use_db_time: false,
        }
    }

    /// Sets how long to keep trying while the lock is held elsewhere (zero: try once).
    pub fn with_wait_time(mut self, wait_time: Duration) -> Self {
        self.wait_time = wait_time;
        self
    }

    /// Sets the lease duration.
    pub fn with_lease_time(mut self, lease_time: Duration) -> Self {
        self.lease_time = lease_time;
        self
    }

    /// Sets the id reported as leader.
    pub fn with_node_id(mut self, node_id: impl Into<String>) -> Self {
        self.node_id = node_id.into();
        self
    }

    /// Sets the minimum time the lock stays taken after an acquisition, even if released earlier.
    pub fn with_min_lease_time(mut self, min_lease_time: Duration) -> Self {
        self.min_lease_time = min_lease_time;
        self
    }

    /// Turns lease renewal during the action on or off.
    ///
    /// An auto-extended lease is renewed every [`renew_interval`](Self::renew_interval)
    /// (`lease_time / 3`), counted from when the request that last secured it was sent:
    /// the first renewal is due one interval after the acquire was sent, whenever the
    /// action starts, and a lease already past that is renewed at once. A lock won by
    /// `try_acquire_for_tenants` is renewed so from the moment it was taken, while it waits
    /// for its action too, by the blocking and the async electors alike.
    ///
    /// Each renewal races the lease's deadline: unanswered by then, or refused, the lease is
    /// lost at that moment (`LeaseContext::lost` resolves, `leader_lease_lost_total`
    /// counts it), whatever other renewals are doing. A transient error is not retried:
    /// the action learns at once rather than trusting a renewal nobody confirmed. The
    /// blocking electors renew every lease of one backend value from one scheduler thread
    /// that never waits for the backend; the calls go to a few threads of their own, each
    /// cohort of due leases as one `extend_batch` on a backend whose batch is native
    /// (Redis standalone), and one call per lease, several at once, on the others, so one
    /// stuck key delays no other lease's renewal.
    pub fn with_auto_extend(mut self, auto_extend: bool) -> Self {
        self.auto_extend = auto_extend;
        self
    }

    /// Uses the backend server's clock for the reported timestamps (see "Clocks and
    /// expiry" above: expiry is decided on the server's clock either way, so a node whose
    /// wall clock is off can neither stretch nor cut a lease).
    pub fn with_use_db_time(mut self, use_db_time: bool) -> Self {
        self.use_db_time = use_db_time;
        self
    }

    /// How long to keep trying while another node holds the lock.
    pub fn wait_time(&self) -> Duration {
        self.wait_time
    }

    /// How long an acquisition lasts unless renewed.
    pub fn lease_time(&self) -> Duration {
        self.lease_time
    }

    /// The id reported as leader.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The minimum time a lock stays taken after acquisition.
    pub fn min_lease_time(&self) -> Duration {
        self.min_lease_time
    }

    /// Whether the lease is renewed while the action runs.
    pub fn auto_extend(&self) -> bool {
        self.auto_extend
    }

    /// Whether timestamps come from the backend server's clock.
    pub fn use_db_time(&self) -> bool {
        self.use_db_time
    }

    /// How often an auto-extended lease is renewed: `lease_time / 3`, which leaves two
    /// thirds of the lease for a renewal to be answered.
    pub fn renew_interval(&self) -> Duration {
        self.lease_time / 3
    }

    /// Checks every value.
    ///
    /// # Errors
    ///
    /// An [`OptionsError`] naming the first bad value.
    pub fn validate(&self) -> Result<(), OptionsError> {
        for (field, value) in [
            ("wait_time", self.wait_time),
            ("lease_time", self.lease_time),
            ("min_lease_time", self.min_lease_time),
        ] {
            if value > Self::MAX_DURATION {
                return Err(OptionsError::DurationTooLong {
                    field,
                    value,
                    max: Self::MAX_DURATION,
                });
            }
        }
        if self.lease_time < Duration::from_millis(1) {
            return Err(OptionsError::LeaseTooShort(self.lease_time));
        }
        if self.min_lease_time > self.lease_time {
            return Err(OptionsError::MinLeaseAboveLease {
                min: self.min_lease_time,
                lease: self.lease_time,
            });
        }
        validate_node_id(&self.node_id)
    }
}

impl Default for LeaderElectionOptions {
    fn default() -> Self {
        LeaderElectionOptions::new()
    }
}

fn validate_node_id(node_id: &str) -> Result<(), OptionsError> {
    if node_id.is_empty() {
        return Err(OptionsError::EmptyNodeId);
    }
    if node_id.len() > LeaderElectionOptions::MAX_NODE_ID_LEN {
        return Err(OptionsError::NodeIdTooLong {
            len: node_id.len(),
            max: LeaderElectionOptions::MAX_NODE_ID_LEN,
        });
    }
    match node_id.char_indices().find(|(_, ch)| ch.is_control()) {
        Some((index, ch)) => Err(OptionsError::NodeIdControlCharacter { ch, index }),
        None => Ok(()),
    }
}

/// `hostname:pid`, with the hostname cut so that the whole fits the node id limit.
fn default_node_id() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let host: String = host.chars().filter(|c| !c.is_control()).take(200).collect();
    let host = if host.is_empty() {
        "localhost".to_owned()
    } else {
        host
    };
    format!("{host}:{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design_and_validate() {
        let o = LeaderElectionOptions::default();
        assert_eq!(o.wait_time(), Duration::from_secs(5));
        assert_eq!(o.lease_time(), Duration::from_secs(60));
        assert_eq!(o.min_lease_time(), Duration::ZERO);
        assert!(!o.auto_extend());
        assert!(!o.use_db_time());
        assert!(o.node_id().ends_with(&format!(":{}", std::process::id())));
        assert_eq!(o.validate(), Ok(()));
    }

    #[test]
    fn each_bad_value_has_its_own_error() {
        let o = LeaderElectionOptions::default;
        assert_eq!(
            o().with_lease_time(Duration::ZERO).validate(),
            Err(OptionsError::LeaseTooShort(Duration::ZERO))
        );
        assert_eq!(
            o().with_lease_time(Duration::from_micros(999)).validate(),
            Err(OptionsError::LeaseTooShort(Duration::from_micros(999)))
        );
        assert_eq!(
            o().with_min_lease_time(Duration::from_secs(61)).validate(),
            Err(OptionsError::MinLeaseAboveLease {
                min: Duration::from_secs(61),
                lease: Duration::from_secs(60)
            })
        );
        assert_eq!(
            o().with_node_id("").validate(),
            Err(OptionsError::EmptyNodeId)
        );
        assert_eq!(
            o().with_node_id("n".repeat(256)).validate(),
            Err(OptionsError::NodeIdTooLong { len: 256, max: 255 })
        );
        assert_eq!(
            o().with_node_id("a\tb").validate(),
            Err(OptionsError::NodeIdControlCharacter { ch: '\t', index: 1 })
        );
        for field in ["wait_time", "lease_time", "min_lease_time"] {
            let huge = Duration::MAX;
            let opts = match field {
                "wait_time" => o().with_wait_time(huge),
                "lease_time" => o().with_lease_time(huge),
                _ => o().with_min_lease_time(huge),
            };
            assert!(
                matches!(opts.validate(), Err(OptionsError::DurationTooLong { field: f, .. }) if f == field),
                "{field}"
            );
        }
    }

    #[test]
    fn error_messages_name_the_problem() {
        let err = LeaderElectionOptions::default()
            .with_min_lease_time(Duration::from_secs(90))
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("min_lease_time"), "{err}");
    }
}
