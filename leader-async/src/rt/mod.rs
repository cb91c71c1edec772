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
use futures_util::FutureExt as _;

use crate::on_drop::OnDrop;

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
///
/// Combinators, not an `async fn`: an `async fn` (or an `async` block awaiting a captured
/// future) keeps the future it was given beside the one it awaits, doubling the size of
/// every caller's future.
pub(crate) fn timeout<F: Future>(
    duration: Duration,
    future: F,
) -> impl Future<Output = Option<F::Output>> {
    future.map(Some).or(async move {
        sleep(duration).await;
        None
    })
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
    run_on_thread(future);
}

/// Runs the future `make()` gives to completion in the background, even when the runtime
/// goes away first.
///
/// A tokio runtime that shuts down drops its tasks, queued or half-way: a release spawned
/// by a future dropped during the shutdown would never reach the server. So when the task
/// is dropped unfinished, a thread of its own runs `make()` again from the start. That is
/// only right for work that may run twice, such as releasing a lease by its owner token
/// (the second run finds nothing to release).
pub(crate) fn spawn_to_completion<F, Fut>(make: F)
where
    F: FnOnce() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let again = make.clone();
    let rerun = OnDrop::new(move || {
        tracing::debug!(
            "the runtime dropped a release before it finished; finishing it on a thread"
        );
        run_on_thread(async move { again().await });
    });
    spawn_detached(async move {
        make().await;
        rerun.disarm();
    });
}

/// Drives `future` on a new thread: inside a current-thread tokio runtime of its own when
/// the `tokio` feature is on (drivers such as redis' spawn their I/O on the runtime they
/// find), else with a plain `block_on`.
fn run_on_thread(future: impl Future<Output = ()> + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("leader-release".into())
        .spawn(move || block_on_own_runtime(future));
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "could not start a thread to release a lease; it will run out by itself");
    }
}

fn block_on_own_runtime(future: impl Future<Output = ()>) {
    #[cfg(feature = "tokio")]
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => return runtime.block_on(future),
        Err(err) => {
            tracing::debug!(error = %err, "no tokio runtime for a background release; using a plain executor");
        }
    }
    futures_lite::future::block_on(future);
}
