//! The I/O-free election engine the electors of `leader-blocking` and `leader-async`
//! share: acquire attempts and batches, campaign runs and candidacy, the lease tracker,
//! keepalive and renewal schedules, lateness, leadership state, orphan release, backoff,
//! and what an observer of a lock reads when and reports.
//! The state machines here decide what happens next; the electors only do the I/O, feed
//! the answers back, and differ only in how they wait.
//!
//! **No engine decision reads a clock: every machine takes `now` from its caller**
//! (raft-rs style). Whether an answer came after its lease's deadline, whether a wait or
//! an orphan's cleanup is over, how long a renewal may take, when a term ends: each is
//! decided on an instant the shell read and passed in, so a simulator can run these
//! machines under clocks it controls (issue 52). The shells read `Instant::now()` where
//! they send or get an answer, and differ only in how they wait. Reads left on purpose,
//! none of them an engine decision:
//!
//! - the user's side of a lease or a campaign: [`LeaseContext::is_lost`](crate::LeaseContext::is_lost)
//!   (and `check`, `wait_lost_timeout`), and `LeadershipState`'s `is_leader`, `term` and
//!   `wait_for_term_timeout`: an action or a handle asks about *its* node's clock; the
//!   engine uses `is_lost_at(now)` and `check_deadline(term, now)` instead;
//! - telemetry stopwatches (`AcquireProbe`, `HoldProbe`): durations for metrics only.
//!
//! Randomness is not a clock, but a simulator needs it seeded too: backoff jitter, owner
//! tokens and a group's first slot draw from the thread's OS-seeded generators, or, while
//! a `SeededRandomness` guard lives on the thread (simulators and tests only: it makes
//! owner tokens predictable), from one generator seeded by the caller.
//!
//! **Not public API**: the crate re-exports the `pub use` list below as the hidden,
//! semver-exempt `__private` module. The list also carries helpers that live beside the
//! public types they serve (`random_slot` in `spi::group`, `SeededRandomness` in
//! `spi::randomness`, the URL helpers of `redact`, `AcquireProbe` in `telemetry`). One public type lives
//! here too: [`LeadershipWatcher`](crate::LeadershipWatcher), the read-only view of a
//! campaign's `LeadershipState`, re-exported at the crate root.
//!
//! Imports: `spi`, `config`, `leadership`, `telemetry` and the cross-cutting modules
//! (`error`, `name`, `tenant`, `redact`); `embedded` only in tests. Nothing but `lib.rs`
//! imports from here.

pub(crate) mod acquire_batch;
pub(crate) mod attempts;
pub(crate) mod batch_answers;
pub(crate) mod campaign;
pub(crate) mod campaign_loop;
pub(crate) mod candidacy;
pub(crate) mod defects;
pub(crate) mod keepalive;
pub(crate) mod late;
pub(crate) mod leadership_state;
pub(crate) mod lease_tracker;
pub(crate) mod observation;
pub(crate) mod orphan;
pub(crate) mod reentrancy;
pub(crate) mod renewal_schedule;
pub(crate) mod retry;
pub(crate) mod scope;
mod scope_methods;
pub(crate) mod settings;
pub(crate) mod shared_side;
pub(crate) mod tenant_batch;
pub(crate) mod watcher;

pub use acquire_batch::{AcquireBatch, BatchAnswer, TenantKeys};
pub use attempts::{Attempts, LateLease, Step};
pub use batch_answers::{answers_in_order, by_backend, unanswered};
pub use campaign::{AfterAttempt, CampaignRun};
pub use campaign_loop::{CampaignStep, Raced, TermLoop, TermStep};
pub use candidacy::{Candidacy, Standing, Survey, TermCheck, Withdrawal};
pub use defects::{Defect, Planted, is_planted, plant};
pub use keepalive::Keepalive;
pub use late::{CLOCK_RATE_ALLOWANCE, is_late, lease_deadline};
pub use leadership_state::LeadershipState;
pub use lease_tracker::LeaseTracker;
pub use observation::{Observation, ObserveStep};
pub use orphan::Orphan;
pub use reentrancy::{DEFAULT_REENTRANCY_LIMIT, Enter, Holds, Leave};
pub use renewal_schedule::RenewalSchedule;
pub use retry::Backoff;
pub use scope::Scope;
pub use settings::ElectorSettings;
pub use shared_side::SharedSide;
pub use tenant_batch::{TenantBatch, Won};

pub use crate::redact::{unparsed_url, url_scheme};
pub use crate::spi::group::random_slot;
pub use crate::spi::randomness::SeededRandomness;
pub use crate::telemetry::AcquireProbe;
