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
//! - Blocking callers outside any runtime ([`block_on`](Background::block_on)): driven on
//!   the calling thread, within the background runtime's context (the I/O of what the call
//!   touches stays on the background worker).
//! - Blocking callers inside a runtime (where tokio's `block_on` would panic): spawned,
//!   and the result waited for on a channel.
//!
//! A call's future is boxed before it is spawned, so that only a pointer moves from there
//! on: a driver's futures run to kilobytes, and tokio moves a task's future several times
//! (into its cell, and its stage again with the output) without boxing any below 16 KB
//! itself. The allocation costs less than those copies. A call driven on the calling
//! thread and dropped at its deadline is pinned where it is, and not boxed.
//!
//! A deadline, when given, is kept on a tokio timer: the caller's when the task runs on
//! the caller's runtime, else a second task's on the background runtime (the caller may
//! have no tokio timer). Running out of it detaches the task, which still runs to its end.
//! A call driven on the calling thread is kept to its deadline by that thread, which parks
//! with a timeout (no timer to register, so no wake-up of the background worker to re-arm
//! one); out of time, the call is handed to the background runtime to finish there, or,
//! built with
//! [`drop_blocking_calls_at_deadline`](BackgroundBuilder::drop_blocking_calls_at_deadline),
//! dropped.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::{JoinError, JoinHandle};
use tracing::Instrument;

use drive::NotDone;

mod drive;

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
    drop_blocking_calls_at_deadline: bool,
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

    /// A blocking call made outside any runtime, which [`block_on`](Background::block_on)
    /// drives on the calling thread, is dropped there when it runs out of its deadline.
    /// Off by default: it is handed to the background runtime and finishes there, as
    /// every other call that runs out of its deadline does.
    ///
    /// On suits calls that can be dropped mid-flight (PostgreSQL's close their session
    /// when dropped); off suits a driver whose futures must never be (MongoDB's).
    pub fn drop_blocking_calls_at_deadline(mut self, on: bool) -> Self {
        self.drop_blocking_calls_at_deadline = on;
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
            drop_blocking_calls_at_deadline: self.drop_blocking_calls_at_deadline,
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
    drop_blocking_calls_at_deadline: bool,
}

impl Background {
    /// A bridge whose worker thread is called `thread_name`, with both options off.
    pub fn builder(thread_name: impl Into<String>) -> BackgroundBuilder {
        BackgroundBuilder {
            thread_name: thread_name.into(),
            on_caller_runtime: false,
            drop_blocking_calls_at_deadline: false,
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
    /// Outside any runtime, `op` is driven on the calling thread, within the background
    /// runtime's context (what it spawns or connects is that runtime's), and the thread
    /// keeps the deadline by parking with a timeout: no task to spawn, no timer to
    /// register, so the background worker wakes only for the call's own I/O. Unfinished
    /// at its deadline, the call is handed to the background runtime to finish there, or
    /// dropped with
    /// [`drop_blocking_calls_at_deadline`](BackgroundBuilder::drop_blocking_calls_at_deadline).
    /// Inside a runtime (where tokio's `block_on` would panic), it is spawned on the
    /// background runtime and its result waited for on a channel.
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
            if self.drop_blocking_calls_at_deadline {
                // `op` is dropped before the guard, so within the runtime's context.
                let _context = self.handle.enter();
                let op = pin!(op);
                return drive::on_this_thread(&self.handle, deadline, op).map_err(|not_done| {
                    match not_done {
                        NotDone::Overdue(_, deadline) => Stopped::TimedOut(deadline),
                        NotDone::Panicked => Stopped::Panicked,
                    }
                });
            }
            return drive::on_this_thread(&self.handle, deadline, Box::pin(op)).map_err(
                |not_done| match not_done {
                    NotDone::Overdue(unfinished, deadline) => {
                        self.handle.spawn(unfinished.in_current_span());
                        Stopped::TimedOut(deadline)
                    }
                    NotDone::Panicked => Stopped::Panicked,
                },
            );
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
