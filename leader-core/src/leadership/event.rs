//! [`LeadershipEvent`] and [`RevokeReason`]: what happens to a campaign, as its callbacks
//! and event streams see it.

use std::fmt;
use std::sync::Arc;

use crate::error::Error;

/// Something that happened to a campaign.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LeadershipEvent {
    /// This instance became leader.
    Elected {
        /// The term's fencing token: strictly greater than every earlier term's.
        fencing_token: u64,
    },
    /// This instance stopped being leader.
    Revoked {
        /// Why.
        reason: RevokeReason,
    },
    /// The leader this instance observes changed (`None`: nobody leads right now).
    LeaderChanged {
        /// The new leader's node id.
        leader_id: Option<String>,
    },
}

/// Why a term ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RevokeReason {
    /// `resign()` was called or the handle was dropped.
    Resigned,
    /// `abandon()` was called: the campaign stopped without releasing, as if it crashed.
    Abandoned,
    /// A renewal found the lease gone (expired or taken over).
    LeaseLost,
    /// A renewal failed: the backend is unreachable or answered with an error.
    RenewalFailed(Arc<Error>),
    /// No renewal succeeded within the renew deadline.
    RenewDeadlinePassed,
    /// The runtime running the campaign shut down; the lease was released from a thread.
    ShutDown,
    /// A ranked campaign handed over: a live candidate of a higher rank appeared, so this
    /// leader ended its term and released for it (see [`CampaignConfig::with_rank`]).
    ///
    /// [`CampaignConfig::with_rank`]: crate::CampaignConfig::with_rank
    Preempted {
        /// The rank of the best candidate that preempted this leader.
        by_rank: u32,
    },
}

impl RevokeReason {
    /// A short, fixed label for metrics: `resigned`, `abandoned`, `lease_lost`,
    /// `renewal_failed`, `renew_deadline_passed`, `shut_down` or `preempted`.
    pub fn as_label(&self) -> &'static str {
        match self {
            RevokeReason::Resigned => "resigned",
            RevokeReason::Abandoned => "abandoned",
            RevokeReason::LeaseLost => "lease_lost",
            RevokeReason::RenewalFailed(_) => "renewal_failed",
            RevokeReason::RenewDeadlinePassed => "renew_deadline_passed",
            RevokeReason::ShutDown => "shut_down",
            RevokeReason::Preempted { .. } => "preempted",
        }
    }

    /// Whether the term ended against the leader's will (the lease was lost), rather than
    /// by resigning, abandoning or shutting down.
    pub(crate) fn is_loss(&self) -> bool {
        matches!(
            self,
            RevokeReason::LeaseLost
                | RevokeReason::RenewalFailed(_)
                | RevokeReason::RenewDeadlinePassed
        )
    }
}

impl fmt::Display for RevokeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RevokeReason::Resigned => f.write_str("resigned"),
            RevokeReason::Abandoned => f.write_str("abandoned without release"),
            RevokeReason::LeaseLost => f.write_str("the lease was lost"),
            RevokeReason::RenewalFailed(err) => write!(f, "renewal failed: {err}"),
            RevokeReason::RenewDeadlinePassed => {
                f.write_str("no renewal succeeded within the renew deadline")
            }
            RevokeReason::ShutDown => f.write_str("the runtime running the campaign shut down"),
            RevokeReason::Preempted { by_rank } => {
                write!(f, "handed over to a candidate of rank {by_rank}")
            }
        }
    }
}

/// A callback for [`LeadershipEvent`]s; runs on the campaign's loop, so keep it short.
pub type EventCallback = Arc<dyn Fn(&LeadershipEvent) + Send + Sync + 'static>;
