//! The handoff the server benches time: node A holds a lock, node B waits for it in a
//! blocking `run_if_leader`, and A releases; the time from the release to B's action.

use std::ops::Range;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{AcquireOutcome, LockBackend, LockName, ReleaseRequest};
use rand::Rng;

use crate::{percentile, request};

/// Where a handoff is timed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimedFrom {
    /// Just before A sends its release.
    ReleaseSent,
    /// When A's release has returned.
    ReleaseReturned,
}

/// Waits (1 ms at a time) until `up()` holds, at most 10 s.
///
/// # Panics
///
/// When `up()` still does not hold after 10 s: `what` did not come up.
///
/// # Examples
///
/// ```
/// leader_benches::handoff::wait_until_up("nothing", || true);
/// ```
#[allow(clippy::panic)] // a bench whose notifications never start stops
pub fn wait_until_up(what: &str, up: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !up() {
        assert!(Instant::now() < deadline, "{what} did not come up");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `rounds` handoffs, sorted: in each, `holder` takes the lock `name(round)`, `elector`
/// waits for it in `run_if_leader` on a thread of its own, and the holder releases it
/// after a pause drawn from `hold_ms` (so the waiter is somewhere in its backoff).
///
/// # Panics
///
/// When a lock is not free for the holder, or a call fails: the bench stops.
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing bench stops
pub fn elector_handoffs<H: LockBackend, W: LockBackend + 'static>(
    holder: &H,
    elector: &LeaderElector<W>,
    name: impl Fn(usize) -> String,
    rounds: usize,
    hold_ms: Range<u64>,
    from: TimedFrom,
) -> Vec<Duration> {
    let mut handoffs = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let key = LockName::new(name(round)).unwrap();
        let AcquireOutcome::Acquired(lease) =
            LockBackend::try_acquire(holder, request(&key)).unwrap()
        else {
            panic!("uncontended")
        };
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let acquired_at = elector
                    .run_if_leader(key.as_str(), Instant::now)
                    .unwrap()
                    .expect("B takes over");
                tx.send(acquired_at).unwrap();
            });
            std::thread::sleep(Duration::from_millis(
                rand::rng().random_range(hold_ms.clone()),
            ));
            let sent_at = Instant::now();
            LockBackend::release(holder, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
            let released_at = match from {
                TimedFrom::ReleaseSent => sent_at,
                TimedFrom::ReleaseReturned => Instant::now(),
            };
            let acquired_at = rx.recv().unwrap();
            handoffs.push(acquired_at.saturating_duration_since(released_at));
        });
    }
    handoffs.sort();
    handoffs
}

/// Prints `sorted` handoffs as `<group> <label>  p50 ..  p90 ..  max ..  (n = ..)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// leader_benches::handoff::print_handoffs("example", "nothing", &[Duration::ZERO]);
/// ```
pub fn print_handoffs(group: &str, label: &str, sorted: &[Duration]) {
    println!(
        "{group} {label:<36}  p50 {:>9.3?}  p90 {:>9.3?}  max {:>9.3?}  (n = {})",
        percentile(sorted, 50),
        percentile(sorted, 90),
        sorted.last().copied().unwrap_or_default(),
        sorted.len()
    );
}
