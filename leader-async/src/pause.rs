//! [`sleep_or_shutdown`]: a loop's wait between rounds that ends at once on shutdown.

use std::time::Duration;

use futures_lite::future;
use leader_core::Shutdown;

use crate::rt;

/// Sleeps for `duration`, or until `shutdown` fires if that comes first; `true` when the
/// shutdown ended the wait (or had fired already).
///
/// The wait of a loop that runs until its service stops: the tenant pollers and the
/// schedulers use it between rounds. The timer is tokio's on a tokio runtime and
/// `async-io`'s elsewhere, as for every wait of this crate.
///
/// # Cancel safety
///
/// Cancel safe: dropping the future loses nothing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_async::sleep_or_shutdown;
/// use leader_core::Shutdown;
///
/// # futures_lite::future::block_on(async {
/// let shutdown = Shutdown::new();
/// assert!(!sleep_or_shutdown(Duration::from_millis(1), &shutdown).await);
/// shutdown.trigger();
/// assert!(sleep_or_shutdown(Duration::from_secs(3600), &shutdown).await);
/// # });
/// ```
pub async fn sleep_or_shutdown(duration: Duration, shutdown: &Shutdown) -> bool {
    if shutdown.is_triggered() {
        return true;
    }
    future::or(
        async {
            rt::sleep(duration).await;
            shutdown.is_triggered()
        },
        async {
            shutdown.triggered().await;
            true
        },
    )
    .await
}
