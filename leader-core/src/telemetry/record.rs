//! The metric calls (feature `metrics`); each is a no-op without the feature.

use std::time::Duration;

#[cfg(feature = "metrics")]
use crate::metrics as names;

/// How an acquire call ended, for `leader.acquire`'s `outcome` and the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcquireEnd {
    Acquired,
    Skipped,
    Failed,
}

impl AcquireEnd {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AcquireEnd::Acquired => "acquired",
            AcquireEnd::Skipped => "skipped",
            AcquireEnd::Failed => "failed",
        }
    }
}

/// The `backend` and `lock` labels (the latter as [`crate::metrics::lock_label`] says).
#[cfg(feature = "metrics")]
fn labels(backend: &'static str, key: &str) -> Vec<::metrics::Label> {
    use crate::metrics::LockLabel;
    let mut labels = vec![::metrics::Label::from_static_parts("backend", backend)];
    let lock = match crate::metrics::lock_label() {
        LockLabel::Full => Some(key),
        LockLabel::Omitted => None,
        _ => Some(without_tenant(key)),
    };
    if let Some(lock) = lock {
        labels.push(::metrics::Label::new("lock", lock.to_owned()));
    }
    labels
}

/// `tenant:<id>:<name>` → `<name>`; any other key as it is (tenant ids hold no `:`).
#[cfg(feature = "metrics")]
fn without_tenant(key: &str) -> &str {
    key.strip_prefix(crate::tenant::TENANT_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .map_or(key, |(_, name)| name)
}

/// One `try_acquire` answered after `round_trip`.
pub(crate) fn acquire_answered(backend: &'static str, key: &str, round_trip: Duration) {
    #[cfg(feature = "metrics")]
    ::metrics::histogram!(names::ACQUIRE_LATENCY, labels(backend, key)).record(round_trip);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key, round_trip);
}

/// An acquire call ended `end` after `waited`.
pub(crate) fn acquire_finished(
    backend: &'static str,
    key: &str,
    end: AcquireEnd,
    waited: Duration,
) {
    #[cfg(feature = "metrics")]
    {
        let labels = labels(backend, key);
        let counter = match end {
            AcquireEnd::Acquired => names::ACQUIRED,
            AcquireEnd::Skipped => names::SKIPPED,
            AcquireEnd::Failed => names::ACQUIRE_FAILED,
        };
        ::metrics::counter!(counter, labels.iter()).increment(1);
        ::metrics::histogram!(names::WAIT, labels.iter()).record(waited);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key, end, waited);
}

/// A lease or term is held from now on.
pub(crate) fn hold_started(backend: &'static str, key: &str) {
    #[cfg(feature = "metrics")]
    ::metrics::gauge!(names::LOCKS_HELD, labels(backend, key)).increment(1.0);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key);
}

/// A lease or term held for `held` is over (released, lost or dropped).
pub(crate) fn hold_ended(backend: &'static str, key: &str, held: Duration) {
    #[cfg(feature = "metrics")]
    {
        let labels = labels(backend, key);
        ::metrics::gauge!(names::LOCKS_HELD, labels.iter()).decrement(1.0);
        ::metrics::histogram!(names::HOLD, labels.iter()).record(held);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key, held);
}

/// A release was answered `Released`.
pub(crate) fn released(backend: &'static str, key: &str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(names::RELEASED, labels(backend, key)).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key);
}

/// A held lease was lost before its release.
pub(crate) fn lease_lost(backend: &'static str, key: &str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(names::LEASE_LOST, labels(backend, key)).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key);
}

/// A campaign term began.
pub(crate) fn leadership_gained(backend: &'static str, key: &str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(names::LEADERSHIP_GAINED, labels(backend, key)).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key);
}

/// A campaign term ended for `reason` (a short, fixed label).
pub(crate) fn leadership_lost(backend: &'static str, key: &str, reason: &'static str) {
    #[cfg(feature = "metrics")]
    {
        let mut labels = labels(backend, key);
        labels.push(::metrics::Label::from_static_parts("reason", reason));
        ::metrics::counter!(names::LEADERSHIP_LOST, labels.iter()).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key, reason);
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use super::without_tenant;

    #[test]
    fn the_tenant_prefix_is_taken_off() {
        assert_eq!(without_tenant("tenant:acme:sync"), "sync");
        assert_eq!(without_tenant("tenant:acme:a:b"), "a:b");
        assert_eq!(without_tenant("nightly"), "nightly");
        assert_eq!(without_tenant("tenant:"), "tenant:");
    }
}
