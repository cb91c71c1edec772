//! The small runtime layer: sleep, timeout and detached spawn, on whichever runtime runs us.
//!
//! Chosen at run time, as sqlx does: when the `tokio` feature is on and a tokio runtime is
//! current, tokio's timer and spawner are used (the runtime needs its time driver, which
//! `#[tokio::main]` enables). Otherwise timers come from `async-io` (the reactor smol and
//! async-std share), and spawns go to async-std's or smol's global executor. Spawned tasks
//! are always detached: dropping their handle never cancels them, on every runtime.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_lite::FutureExt;

/// Sleeps for `duration` without blocking the executor thread.
pub(crate) async fn sleep(duration: Duration) {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(duration).await;
        return;
    }
    async_io::Timer::after(duration).await;
}

/// Sleeps until `deadline`.
pub(crate) async fn sleep_until(deadline: Instant) {
    sleep(deadline.saturating_duration_since(Instant::now())).await;
}

/// `Some(output)` if `future` finishes within `duration`, `None` otherwise (it is dropped).
pub(crate) async fn timeout<F: Future>(duration: Duration, future: F) -> Option<F::Output> {
    async { Some(future.await) }
        .or(async {
            sleep(duration).await;
            None
        })
        .await
}

/// Runs `future` to completion in the background; nothing waits for it.
///
/// Without any runtime to spawn on (for example under a bare `block_on`), a short-lived
/// thread drives it, so the work (a lease release) still happens.
pub(crate) fn spawn_detached(future: impl Future<Output = ()> + Send + 'static) {
    #[cfg(feature = "tokio")]
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        drop(handle.spawn(future));
        return;
    }
    #[cfg(feature = "async-std")]
    {
        drop(async_std::task::spawn(future));
        return;
    }
    #[cfg(all(feature = "smol", not(feature = "async-std")))]
    {
        smol::spawn(future).detach();
        return;
    }
    #[allow(unreachable_code)]
    if let Err(err) = std::thread::Builder::new()
        .name("leader-release".into())
        .spawn(move || futures_lite::future::block_on(future))
    {
        tracing::warn!(error = %err, "could not start a thread to release a lease; it will run out by itself");
    }
}
