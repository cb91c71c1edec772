//! The metric calls (feature `metrics`); each is a no-op without the feature.

#[cfg(feature = "metrics")]
use std::time::Instant;

#[cfg(feature = "metrics")]
use crate::metrics as names;

/// When something began, for a duration metric. Without the `metrics` feature it holds
/// nothing and reads no clock: a clock read costs 25-60 ns on some VMs, several times per
/// call, which is more than the rest of the instrumentation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopwatch {
    #[cfg(feature = "metrics")]
    started: Instant,
}

impl Stopwatch {
    /// Starts now (reads the clock only with the `metrics` feature).
    pub(crate) fn start() -> Self {
        Stopwatch {
            #[cfg(feature = "metrics")]
            started: Instant::now(),
        }
    }

    /// Started at `instant`, a reading the caller already has.
    pub(crate) fn since(instant: std::time::Instant) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = instant;
        Stopwatch {
            #[cfg(feature = "metrics")]
            started: instant,
        }
    }

    #[cfg(feature = "metrics")]
    fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}

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

/// One `try_acquire`, sent when `round_trip` started, was answered now.
pub(crate) fn acquire_answered(backend: &'static str, key: &str, round_trip: Stopwatch) {
    #[cfg(feature = "metrics")]
    ::metrics::histogram!(names::ACQUIRE_LATENCY, labels(backend, key))
        .record(round_trip.elapsed());
    #[cfg(not(feature = "metrics"))]
    let _ = (backend, key, round_trip);
}

/// An acquire call that began when `waited` started ended `end` now.
pub(crate) fn acquire_finished(
    backend: &'static str,
    key: &str,
    end: AcquireEnd,
    waited: Stopwatch,
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
        ::metrics::histogram!(names::WAIT, labels.iter()).record(waited.elapsed());
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

/// A lease or term held since `held` started is over (released, lost or dropped).
pub(crate) fn hold_ended(backend: &'static str, key: &str, held: Stopwatch) {
    #[cfg(feature = "metrics")]
    {
        let labels = labels(backend, key);
        ::metrics::gauge!(names::LOCKS_HELD, labels.iter()).decrement(1.0);
        ::metrics::histogram!(names::HOLD, labels.iter()).record(held.elapsed());
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
