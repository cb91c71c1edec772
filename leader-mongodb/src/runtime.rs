//! Where the driver's futures run: mongodb 3.x needs tokio.
//!
//! Every operation is spawned as a tokio task and its join handle awaited, so dropping the
//! caller's future (or running out of `operation_timeout`) never drops a driver future
//! mid-flight; the operation finishes in the background.
//!
//! - Async callers on a tokio runtime: the task is spawned on the caller's runtime.
//! - Async callers on any other executor (async-std, smol, ...): the task is spawned on the
//!   backend's own background runtime and its handle awaited from the caller's executor.
//! - Blocking callers: the task is spawned on the background runtime; a thread outside any
//!   runtime blocks on it, a thread inside one (where `block_on` would panic) waits on a
//!   channel instead.

use std::future::Future;
use std::io;
use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::{JoinError, JoinHandle};
use tracing::Instrument;

/// Why a task gave no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// No result within the deadline; the task goes on in the background.
    TimedOut(Duration),
    /// The task panicked.
    Panicked,
    /// The runtime shut down under the task.
    ShutDown,
}

/// The backend's background tokio runtime: one worker thread, shut down without waiting
/// when the last backend handle goes away (also from inside an async context).
#[derive(Debug)]
pub(crate) struct Background {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl Background {
    /// Starts the runtime.
    pub(crate) fn new() -> io::Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("leader-mongodb")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Background {
            runtime: Some(runtime),
            handle,
        })
    }

    /// The background runtime's handle.
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `op` as a task on the caller's tokio runtime, or on the background runtime
    /// when the caller is on another executor; waits at most `deadline` for it.
    pub(crate) async fn run<T, F>(&self, deadline: Duration, op: F) -> Result<T, Stopped>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        match Handle::try_current() {
            // The caller's runtime has the timer the deadline needs (the driver needs it too).
            Ok(current) => wait(deadline, current.spawn(op.in_current_span())).await,
            // No tokio timer here: the deadline is kept by a second task on the background runtime.
            Err(_) => flatten(spawn_with_deadline(&self.handle, deadline, op).await),
        }
    }

    /// Runs `op` as a task on the background runtime itself, whatever the caller runs on,
    /// and waits at most `deadline` for it without blocking the caller's thread. For work
    /// whose tasks must outlive the caller's runtime (building the driver's client).
    pub(crate) async fn run_here<T, F>(&self, deadline: Duration, op: F) -> Result<T, Stopped>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        flatten(spawn_with_deadline(&self.handle, deadline, op).await)
    }

    /// Runs `op` as a task on the background runtime and blocks the calling thread until it
    /// finishes or `deadline` passes. Safe to call from inside an async runtime (it then
    /// blocks that runtime's thread, as any blocking call would).
    pub(crate) fn block_on<T, F>(&self, deadline: Duration, op: F) -> Result<T, Stopped>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        if Handle::try_current().is_err() {
            let task = self.handle.spawn(op.in_current_span());
            return self.handle.block_on(wait(deadline, task));
        }
        let task = spawn_with_deadline(&self.handle, deadline, op);
        let (sender, receiver) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            // The receiver only goes away with the blocked caller, which cannot happen.
            let _ = sender.send(flatten(task.await));
        });
        receiver.recv().unwrap_or(Err(Stopped::ShutDown))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Waits for `task` at most `deadline` (on the current runtime's timer). Dropping this
/// future, or running out of time, detaches the task: it still runs to completion.
async fn wait<T>(deadline: Duration, task: JoinHandle<T>) -> Result<T, Stopped> {
    match tokio::time::timeout(deadline, task).await {
        Ok(joined) => joined.map_err(stopped),
        Err(_) => Err(Stopped::TimedOut(deadline)),
    }
}

/// Spawns `op`, and a second task that waits for it at most `deadline`, for callers
/// without a tokio timer of their own.
fn spawn_with_deadline<T, F>(
    handle: &Handle,
    deadline: Duration,
    op: F,
) -> JoinHandle<Result<T, Stopped>>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let task = handle.spawn(op.in_current_span());
    handle.spawn(wait(deadline, task))
}

fn flatten<T>(joined: Result<Result<T, Stopped>, JoinError>) -> Result<T, Stopped> {
    match joined {
        Ok(result) => result,
        Err(err) => Err(stopped(err)),
    }
}

fn stopped(err: JoinError) -> Stopped {
    if err.is_panic() {
        Stopped::Panicked
    } else {
        Stopped::ShutDown
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn blocks_from_a_plain_thread_and_from_inside_a_runtime() {
        let background = Arc::new(Background::new().unwrap());
        let one = background.block_on(Duration::from_secs(5), async { 1 });
        assert_eq!(one.unwrap(), 1);

        let rt = Builder::new_current_thread().enable_all().build().unwrap();
        let inside = rt.block_on({
            let background = Arc::clone(&background);
            async move { background.block_on(Duration::from_secs(5), async { 2 }) }
        });
        assert_eq!(inside.unwrap(), 2);
    }

    fn thread_name() -> Option<String> {
        std::thread::current().name().map(str::to_owned)
    }

    #[test]
    fn runs_on_foreign_executors_and_on_tokio() {
        let background = Background::new().unwrap();
        let on_futures = futures::executor::block_on(
            background.run(Duration::from_secs(5), async { thread_name() }),
        );
        assert_eq!(on_futures.unwrap().as_deref(), Some("leader-mongodb"));

        let rt = Builder::new_current_thread().enable_all().build().unwrap();
        let on_tokio = rt.block_on(background.run(Duration::from_secs(5), async { thread_name() }));
        assert_ne!(on_tokio.unwrap().as_deref(), Some("leader-mongodb"));
    }

    #[test]
    fn a_deadline_leaves_the_operation_running() {
        let background = Background::new().unwrap();
        let finished = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&finished);
        let result = background.block_on(Duration::from_millis(20), async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            flag.store(true, Ordering::SeqCst);
        });
        assert_eq!(result, Err(Stopped::TimedOut(Duration::from_millis(20))));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            finished.load(Ordering::SeqCst),
            "the operation ran to its end"
        );
    }

    #[test]
    fn an_async_deadline_leaves_the_operation_running_on_tokio_and_elsewhere() {
        let background = Background::new().unwrap();
        let tokio = Builder::new_current_thread().enable_all().build().unwrap();
        for on_tokio in [true, false] {
            let finished = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&finished);
            let waiting = background.run(Duration::from_millis(20), async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                flag.store(true, Ordering::SeqCst);
            });
            let result = if on_tokio {
                tokio.block_on(async {
                    let result = waiting.await;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    result
                })
            } else {
                let result = futures::executor::block_on(waiting);
                std::thread::sleep(Duration::from_millis(300));
                result
            };
            assert_eq!(result, Err(Stopped::TimedOut(Duration::from_millis(20))));
            assert!(finished.load(Ordering::SeqCst), "on tokio: {on_tokio}");
        }
    }

    #[test]
    fn a_panicking_operation_is_an_error() {
        let background = Background::new().unwrap();
        let result: Result<(), _> =
            background.block_on(Duration::from_secs(5), async { panic!("driver bug") });
        assert_eq!(result, Err(Stopped::Panicked));
    }

    #[test]
    fn dropping_inside_a_runtime_does_not_panic() {
        let background = Background::new().unwrap();
        let rt = Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move { drop(background) });
    }
}
