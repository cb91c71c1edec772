//! Waiting in tests: poll a condition with a deadline, sleep, and bound a future in time.
//!
//! The async helpers use `async-io`'s timer, which runs its own reactor thread, so they
//! work the same on tokio, async-std, smol or a plain `block_on`.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_lite::FutureExt;

/// Polls `done` every millisecond until it holds, and returns how long that took.
///
/// # Panics
///
/// When `timeout` passes first, naming `what`. This is a test helper: the panic is the
/// test's failure.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_testkit::wait_until;
///
/// let took = wait_until("nothing", Duration::from_secs(1), || true);
/// assert!(took < Duration::from_secs(1));
/// ```
pub fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    started.elapsed()
}

/// The async [`wait_until`]: polls `done` every millisecond, sleeping between polls.
///
/// # Panics
///
/// When `timeout` passes first, naming `what`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_testkit::eventually;
///
/// futures_lite::future::block_on(eventually("nothing", Duration::from_secs(1), || true));
/// ```
pub async fn eventually(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        sleep(Duration::from_millis(1)).await;
    }
    started.elapsed()
}

/// Sleeps for `duration` on any runtime.
pub async fn sleep(duration: Duration) {
    async_io::Timer::after(duration).await;
}

/// Resolves `future`, or gives up (dropping it) after `duration`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_testkit::within;
///
/// let never = within(Duration::from_millis(5), std::future::pending::<()>());
/// assert_eq!(futures_lite::future::block_on(never), None);
/// ```
pub async fn within<F: Future>(duration: Duration, future: F) -> Option<F::Output> {
    async { Some(future.await) }
        .or(async {
            sleep(duration).await;
            None
        })
        .await
}

/// How long until the next multiple of `interval` since the Unix epoch, on the wall
/// clock: where a tenant poller's next cycle begins. A zero `interval`, or a clock before
/// the epoch, gives zero.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_testkit::until_next_boundary;
///
/// let interval = Duration::from_secs(2);
/// let wait = until_next_boundary(interval);
/// assert!(wait > Duration::ZERO && wait <= interval);
/// ```
pub fn until_next_boundary(interval: Duration) -> Duration {
    let step = interval.as_nanos();
    let Ok(since) = SystemTime::now().duration_since(UNIX_EPOCH) else {
        return Duration::ZERO;
    };
    match step {
        0 => Duration::ZERO,
        step => Duration::from_nanos(u64::try_from(step - since.as_nanos() % step).unwrap_or(0)),
    }
}
