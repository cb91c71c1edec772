//! [`Background`]: a one-worker tokio runtime owned by a backend value, and the ways its
//! calls get there from a blocking thread or from any async executor.
//!
//! Every call is a future that owns what it needs (`'static`). Where it runs:
//!
//! - Async callers ([`run`](Background::run)): spawned as a task at once and its join
//!   handle awaited, so a dropped future stops only the waiting; the call finishes in the
//!   background. The task goes on the caller's tokio runtime when there is one and the
//!   bridge was built [`on_caller_runtime`](BackgroundBuilder::on_caller_runtime), else on
//!   the background runtime ([`run_here`](Background::run_here) always uses the latter).
//! - Blocking callers outside any runtime ([`block_on`](Background::block_on)): spawned on
//!   the background runtime and waited for, or, built with
//!   [`drive_blocking_calls`](BackgroundBuilder::drive_blocking_calls), driven on the
//!   calling thread with the background runtime's handle.
//! - Blocking callers inside a runtime (where tokio's `block_on` would panic): spawned,
//!   and the result waited for on a channel.
//!
//! A call's future is boxed before it is spawned, so that only a pointer moves from there
//! on: a driver's futures run to kilobytes, and tokio moves a task's future several times
//! (into its cell, and its stage again with the output) without boxing any below 16 KB
//! itself. The allocation costs less than those copies. A call driven on the calling
//! thread is pinned where it is, and not boxed.
//!
//! A deadline, when given, is kept on a tokio timer: the caller's when the task runs on
//! the caller's runtime, else a second task's on the background runtime (the caller may
//! have no tokio timer). Running out of it detaches the task, which still runs to its end
//! (except a call driven on the calling thread, which has nowhere else to go on: it is
//! dropped at the deadline).

use std::future::Future;
use std::io;
use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::{JoinError, JoinHandle};
use tracing::Instrument;

/// Why a call gave no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// No result within the deadline; the call goes on in the background.
    TimedOut(Duration),
    /// The call panicked.
    Panicked,
    /// The runtime shut down under the call.
    ShutDown,
}

/// How a [`Background`] runs its calls; from [`Background::builder`].
#[derive(Debug, Clone)]
pub struct BackgroundBuilder {
    thread_name: String,
    on_caller_runtime: bool,
    drive_blocking_calls: bool,
}

impl BackgroundBuilder {
    /// Async calls made on a tokio runtime run as tasks of that runtime (on another
    /// executor, on the background one). Off by default: every async call runs on the
    /// background runtime.
    ///
    /// On suits a driver whose tasks may live on any runtime (MongoDB's): the call skips a
    /// hop to the one background worker. Off suits a driver whose connections must
    /// outlive the caller's runtime (PostgreSQL's sessions).
    pub fn on_caller_runtime(mut self, on: bool) -> Self {
        self.on_caller_runtime = on;
        self
    }

    /// Blocking calls made outside any runtime are driven on the calling thread, with the
    /// background runtime's handle (the I/O of what the call touches stays on the
    /// background worker). Off by default: they are spawned on the background runtime and
    /// waited for.
    ///
    /// On saves a task and a wake-up across threads per call, but a call driven this way
    /// is dropped at its deadline rather than left to finish: turn it on only for calls
    /// that keep their own deadline and can be dropped mid-flight (PostgreSQL's close
    /// their connection on a timeout).
    pub fn drive_blocking_calls(mut self, on: bool) -> Self {
        self.drive_blocking_calls = on;
        self
    }

    /// Starts the runtime: one worker thread named as given.
    ///
    /// # Errors
    ///
    /// When the runtime's thread cannot be started.
    pub fn build(self) -> io::Result<Background> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(self.thread_name)
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Background {
            runtime: Some(runtime),
            handle,
            on_caller_runtime: self.on_caller_runtime,
            drive_blocking_calls: self.drive_blocking_calls,
        })
    }
}

/// A backend's background tokio runtime: one worker thread, shut down without waiting
/// when dropped (also from inside an async context). See the [crate docs](crate).
#[derive(Debug)]
pub struct Background {
    runtime: Option<Runtime>,
    handle: Handle,
    on_caller_runtime: bool,
    drive_blocking_calls: bool,
}

impl Background {
    /// A bridge whose worker thread is called `thread_name`, with both options off.
    pub fn builder(thread_name: impl Into<String>) -> BackgroundBuilder {
        BackgroundBuilder {
            thread_name: thread_name.into(),
            on_caller_runtime: false,
            drive_blocking_calls: false,
        }
    }

    /// The background runtime's handle, for tasks of the backend's own (a listener, a
    /// driver's monitors).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `op` as a task, spawned at once (on the caller's tokio runtime with
    /// [`on_caller_runtime`](BackgroundBuilder::on_caller_runtime), else on the background
    /// runtime), and waits for it from any executor, at most `deadline` when given.
    ///
    /// Spawned before the returned future is built, so that future holds only the join
    /// handle: its size and type depth do not grow with the driver's futures, which keeps
    /// the futures of callers (an elector's, a user's service) within the compiler's
    /// recursion limit. The runtime is therefore chosen when `run` is called, not when
    /// the future is first polled: call it from inside the async function that awaits it.
    ///
    /// # Errors
    ///
    /// [`Stopped`]: the deadline ran out (the task goes on), the task panicked, or the
    /// runtime shut down.
    pub fn run<T, F>(
        &self,
        deadline: Option<Duration>,
        op: F,
    ) -> impl Future<Output = Result<T, Stopped>> + Send + use<T, F>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let op = Box::pin(op);
        let caller = self
            .on_caller_runtime
            .then(Handle::try_current)
            .and_then(Result::ok);
        let waiting = match caller {
            // The caller's runtime has the timer the deadline needs.
            Some(current) => Waiting::Here(current.spawn(op.in_current_span()), deadline),
            None => self.spawn(deadline, op),
        };
        waiting.wait()
    }

    /// [`run`](Self::run) on the background runtime itself, whatever the caller runs on:
    /// for work whose tasks must outlive the caller's runtime (building a driver's client).
    ///
    /// # Errors
    ///
    /// As for [`run`](Self::run).
    pub fn run_here<T, F>(
        &self,
        deadline: Option<Duration>,
        op: F,
    ) -> impl Future<Output = Result<T, Stopped>> + Send + use<T, F>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.spawn(deadline, Box::pin(op)).wait()
    }

    /// Runs `op` to completion, or until `deadline` when given, blocking the calling
    /// thread. Safe to call from inside an async runtime (it then blocks that runtime's
    /// thread, as any blocking call would).
    ///
    /// # Errors
    ///
    /// As for [`run`](Self::run).
    pub fn block_on<T, F>(&self, deadline: Option<Duration>, op: F) -> Result<T, Stopped>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        if Handle::try_current().is_err() {
            if self.drive_blocking_calls {
                return match deadline {
                    None => Ok(self.handle.block_on(op)),
                    Some(deadline) => self.handle.block_on(async move {
                        tokio::time::timeout(deadline, op)
                            .await
                            .map_err(|_| Stopped::TimedOut(deadline))
                    }),
                };
            }
            let task = self.handle.spawn(Box::pin(op).in_current_span());
            return self.handle.block_on(wait(deadline, task));
        }
        let waiting = self.spawn(deadline, Box::pin(op));
        let (sender, receiver) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            // The receiver goes away only with the blocked caller, which cannot happen.
            let _ = sender.send(waiting.wait().await);
        });
        receiver.recv().unwrap_or(Err(Stopped::ShutDown))
    }

    /// Spawns `op` on the background runtime, and, for a deadline, a second task there
    /// that waits for it at most that long (for callers without a tokio timer of their own).
    fn spawn<T, F>(&self, deadline: Option<Duration>, op: F) -> Waiting<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let task = self.handle.spawn(op.in_current_span());
        match deadline {
            // Awaiting a join handle needs no tokio timer: any executor will do.
            None => Waiting::Here(task, None),
            Some(deadline) => Waiting::Watched(self.handle.spawn(wait(Some(deadline), task))),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A spawned call, as the caller waits for it.
enum Waiting<T> {
    /// The call's own task, waited for here (at most the deadline, on this runtime's timer).
    Here(JoinHandle<T>, Option<Duration>),
    /// A task on the background runtime that waits for the call within its deadline.
    Watched(JoinHandle<Result<T, Stopped>>),
}

impl<T: Send + 'static> Waiting<T> {
    async fn wait(self) -> Result<T, Stopped> {
        match self {
            Waiting::Here(task, deadline) => wait(deadline, task).await,
            Waiting::Watched(watcher) => watcher.await.unwrap_or_else(|err| Err(stopped(err))),
        }
    }
}

/// Waits for `task`, at most `deadline` when given (on the current runtime's timer).
/// Dropping this future, or running out of time, detaches the task: it still runs to
/// completion.
async fn wait<T>(deadline: Option<Duration>, task: JoinHandle<T>) -> Result<T, Stopped> {
    let Some(deadline) = deadline else {
        return task.await.map_err(stopped);
    };
    match tokio::time::timeout(deadline, task).await {
        Ok(joined) => joined.map_err(stopped),
        Err(_) => Err(Stopped::TimedOut(deadline)),
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
mod tests;
