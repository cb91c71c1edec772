//! Metrics of the electors, on the [`metrics`](https://docs.rs/metrics) crate's facade
//! (feature `metrics`): install any recorder (Prometheus, StatsD, OpenTelemetry, ...) and
//! the electors report to it. Without a recorder the calls cost next to nothing.
//!
//! | name | kind | what |
//! |---|---|---|
//! | `leader_acquired_total` | counter | acquisitions by `run_if_leader*` and `acquire` |
//! | `leader_skipped_total` | counter | calls that gave up: held elsewhere for the whole wait |
//! | `leader_acquire_failed_total` | counter | calls that failed on a backend error (fail closed) |
//! | `leader_released_total` | counter | releases answered `Released` (terms and leases) |
//! | `leader_lease_lost_total` | counter | held leases lost before release: a renewal failed or found the lock gone, or the deadline passed unrenewed (an action that outlived its lease included) |
//! | `leader_leadership_gained_total` | counter | campaign terms begun |
//! | `leader_leadership_lost_total` | counter | campaign terms ended, label `reason` |
//! | `leader_acquire_latency_seconds` | histogram | one `try_acquire` round trip |
//! | `leader_wait_seconds` | histogram | from the call to acquired or given up |
//! | `leader_hold_seconds` | histogram | from acquired to released (leases and terms) |
//! | `leader_locks_held` | gauge | leases and terms held now by this process |
//!
//! Every metric carries the labels `backend` (`"redis"`, `"memory"`, ...) and `lock`.
//!
//! # Label cardinality
//!
//! With thousands of tenant locks, a `lock` label per full key would make thousands of
//! series per metric. By default the label is the lock name *without* its tenant prefix
//! (`tenant:acme:sync-invoices` is reported as `sync-invoices`), so the series grow with
//! the number of jobs, not of tenants. [`set_lock_label`] chooses otherwise for the whole
//! process: the full key, or no `lock` label at all.
//!
//! # Examples
//!
//! ```
//! use leader_core::metrics::{self, LockLabel};
//!
//! // Before the first lock is taken; here, one series per backend only.
//! metrics::set_lock_label(LockLabel::Omitted);
//! assert_eq!(metrics::lock_label(), LockLabel::Omitted);
//! metrics::describe(); // units and help texts, for recorders that show them
//! # metrics::set_lock_label(LockLabel::WithoutTenant);
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

/// `leader_acquired_total`.
pub const ACQUIRED: &str = "leader_acquired_total";
/// `leader_skipped_total`.
pub const SKIPPED: &str = "leader_skipped_total";
/// `leader_acquire_failed_total`.
pub const ACQUIRE_FAILED: &str = "leader_acquire_failed_total";
/// `leader_released_total`.
pub const RELEASED: &str = "leader_released_total";
/// `leader_lease_lost_total`.
pub const LEASE_LOST: &str = "leader_lease_lost_total";
/// `leader_leadership_gained_total`.
pub const LEADERSHIP_GAINED: &str = "leader_leadership_gained_total";
/// `leader_leadership_lost_total`.
pub const LEADERSHIP_LOST: &str = "leader_leadership_lost_total";
/// `leader_acquire_latency_seconds`.
pub const ACQUIRE_LATENCY: &str = "leader_acquire_latency_seconds";
/// `leader_wait_seconds`.
pub const WAIT: &str = "leader_wait_seconds";
/// `leader_hold_seconds`.
pub const HOLD: &str = "leader_hold_seconds";
/// `leader_locks_held`.
pub const LOCKS_HELD: &str = "leader_locks_held";

/// What the `lock` label holds (see the module docs on cardinality).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LockLabel {
    /// The lock name without its tenant prefix: one series per job name (the default).
    #[default]
    WithoutTenant,
    /// The full key, tenant prefix included: one series per lock.
    Full,
    /// No `lock` label: one series per backend.
    Omitted,
}

static LOCK_LABEL: AtomicU8 = AtomicU8::new(0);

/// Sets what the `lock` label holds, for the whole process. Call it before the first lock
/// is taken: series already reported keep their labels.
pub fn set_lock_label(label: LockLabel) {
    let code = match label {
        LockLabel::WithoutTenant => 0,
        LockLabel::Full => 1,
        LockLabel::Omitted => 2,
    };
    LOCK_LABEL.store(code, Ordering::Relaxed);
}

/// What the `lock` label holds now.
pub fn lock_label() -> LockLabel {
    match LOCK_LABEL.load(Ordering::Relaxed) {
        1 => LockLabel::Full,
        2 => LockLabel::Omitted,
        _ => LockLabel::WithoutTenant,
    }
}

/// Registers the unit and help text of every metric with the installed recorder. Optional:
/// call it once after installing a recorder that shows them (Prometheus's `# HELP`).
pub fn describe() {
    use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(ACQUIRED, "Locks acquired by run_if_leader and acquire.");
    describe_counter!(
        SKIPPED,
        "Calls that gave up: the lock was held elsewhere for the whole wait."
    );
    describe_counter!(
        ACQUIRE_FAILED,
        "Acquire calls that failed on a backend error."
    );
    describe_counter!(RELEASED, "Leases and terms released.");
    describe_counter!(LEASE_LOST, "Held leases lost before their release.");
    describe_counter!(LEADERSHIP_GAINED, "Campaign terms begun.");
    describe_counter!(LEADERSHIP_LOST, "Campaign terms ended, by reason.");
    describe_histogram!(
        ACQUIRE_LATENCY,
        Unit::Seconds,
        "One try_acquire round trip."
    );
    describe_histogram!(
        WAIT,
        Unit::Seconds,
        "From an acquire call to acquired or given up."
    );
    describe_histogram!(HOLD, Unit::Seconds, "From acquired to released.");
    describe_gauge!(LOCKS_HELD, "Leases and terms held by this process now.");
}
