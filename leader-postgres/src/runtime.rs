//! Where the driver runs: tokio-postgres needs tokio, and its sessions must outlive any
//! caller's runtime, so the backend owns a small tokio runtime and every call runs there.
//!
//! - Async callers, on any executor (tokio, async-std, smol): the call is spawned on the
//!   background runtime and its join handle awaited. A dropped future stops only the
//!   waiting; the call finishes (or times out) on its own.
//! - Blocking callers outside any runtime: the call is driven on the calling thread with
//!   the background runtime's handle (its sessions' I/O stays on the runtime's worker).
//! - Blocking callers inside a runtime (where `block_on` would panic): spawned, and the
//!   result waited for on a channel.
//!
//! Each call carries its own deadline (see [`PostgresBackend`](crate::PostgresBackend)),
//! so nothing here waits forever.

use std::future::Future;
use std::io;
use std::sync::mpsc;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::JoinError;
use tracing::Instrument;

use crate::error::OpError;

/// The backend's tokio runtime: one worker thread, shut down without waiting when the
/// last backend handle goes away (also from inside an async context).
#[derive(Debug)]
pub(crate) struct Background {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl Background {
    pub(crate) fn new() -> io::Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("leader-postgres")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Background {
            runtime: Some(runtime),
            handle,
        })
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `op` on the background runtime (spawned at once) and awaits it from any
    /// executor.
    ///
    /// Spawned before the returned future is built, so that future holds only the join
    /// handle: its size and type depth do not grow with the driver's futures, which keeps
    /// the futures of callers (an elector's, a user's service) within the compiler's
    /// recursion limit.
    pub(crate) fn run<T, F>(
        &self,
        op: F,
    ) -> impl Future<Output = Result<T, OpError>> + Send + use<T, F>
    where
        F: Future<Output = Result<T, OpError>> + Send + 'static,
        T: Send + 'static,
    {
        let task = self.handle.spawn(op.in_current_span());
        async move { task.await.unwrap_or_else(|err| Err(stopped(err))) }
    }

    /// Runs `op` to completion, blocking the calling thread.
    pub(crate) fn block_on<T, F>(&self, op: F) -> Result<T, OpError>
    where
        F: Future<Output = Result<T, OpError>> + Send + 'static,
        T: Send + 'static,
    {
        if Handle::try_current().is_err() {
            return self.handle.block_on(op);
        }
        let (sender, receiver) = mpsc::sync_channel(1);
        let task = self.handle.spawn(op.in_current_span());
        self.handle.spawn(async move {
            // The receiver goes away only with the blocked caller, which cannot happen.
            let _ = sender.send(task.await.unwrap_or_else(|err| Err(stopped(err))));
        });
        receiver.recv().unwrap_or(Err(OpError::ShutDown))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn stopped(err: JoinError) -> OpError {
    if err.is_panic() {
        OpError::Panicked
    } else {
        OpError::ShutDown
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn blocks_from_a_plain_thread_and_from_inside_a_runtime_and_awaits_elsewhere() {
        let background = std::sync::Arc::new(Background::new().unwrap());
        assert_eq!(background.block_on(async { Ok(1) }).unwrap(), 1);
        let rt = Builder::new_current_thread().enable_all().build().unwrap();
        let inside = rt.block_on({
            let background = std::sync::Arc::clone(&background);
            async move { background.block_on(async { Ok(2) }) }
        });
        assert_eq!(inside.unwrap(), 2);
        let on_futures = futures::executor::block_on(background.run(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(std::thread::current().name().map(str::to_owned))
        }));
        assert_eq!(on_futures.unwrap().as_deref(), Some("leader-postgres"));
    }

    #[test]
    fn a_panicking_call_is_an_error_and_dropping_inside_a_runtime_is_fine() {
        let background = Background::new().unwrap();
        let result: Result<(), _> =
            futures::executor::block_on(background.run(async { panic!("driver bug") }));
        assert!(matches!(result, Err(OpError::Panicked)));
        let rt = Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move { drop(background) });
    }
}
