//! [`TaskHandle`]: the result of a pooled task, to wait on or to await.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use leader_core::Error;
use parking_lot::{Condvar, Mutex};

type Outcome<T> = Result<Result<T, Error>, Box<dyn Any + Send + 'static>>;

/// A task submitted to a [`ThreadPoolLeaderElector`](crate::ThreadPoolLeaderElector).
///
/// Wait for it with [`wait`](Self::wait) or [`wait_timeout`](Self::wait_timeout), poll
/// [`is_finished`](Self::is_finished), or `.await` it from async code (it is a `Future`
/// that any executor can drive). Dropping the handle does not cancel the task: it still
/// runs and releases its lease.
///
/// If the action panicked, waiting on (or awaiting) the handle resumes that panic in the
/// waiter, after the worker has released the lease.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_blocking::ThreadPoolLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions};
///
/// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 2)?;
/// let task = pool.run_async_if_leader("report", || 6 * 7)?;
/// if !task.wait_timeout(Duration::from_secs(5)) {
///     println!("still running; waiting for it");
/// }
/// assert_eq!(task.wait()?, Some(42));
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "dropping the handle does not cancel the task, but its result is lost"]
pub struct TaskHandle<T> {
    slot: Arc<Slot<T>>,
}

/// Where a worker puts a task's outcome.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    state: Mutex<SlotState<T>>,
    done: Condvar,
}

struct SlotState<T> {
    outcome: Option<Outcome<T>>,
    waker: Option<Waker>,
}

impl<T> std::fmt::Debug for SlotState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotState")
            .field("finished", &self.outcome.is_some())
            .finish()
    }
}

impl<T> Slot<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                outcome: None,
                waker: None,
            }),
            done: Condvar::new(),
        })
    }

    pub(crate) fn finish(&self, outcome: Outcome<T>) {
        let waker = {
            let mut state = self.state.lock();
            state.outcome = Some(outcome);
            state.waker.take()
        };
        self.done.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

fn unwrap_outcome<T>(outcome: Outcome<T>) -> Result<T, Error> {
    match outcome {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

impl<T> TaskHandle<T> {
    pub(crate) fn new(slot: Arc<Slot<T>>) -> Self {
        TaskHandle { slot }
    }

    /// `true` once the task has finished (successfully or not).
    pub fn is_finished(&self) -> bool {
        self.slot.state.lock().outcome.is_some()
    }

    /// Blocks until the task finishes and returns its result.
    ///
    /// # Errors
    ///
    /// The task's error: a backend failure while acquiring, for example.
    ///
    /// # Panics
    ///
    /// Resumes the action's panic, if it panicked.
    pub fn wait(self) -> Result<T, Error> {
        let mut state = self.slot.state.lock();
        loop {
            if let Some(outcome) = state.outcome.take() {
                return unwrap_outcome(outcome);
            }
            self.slot.done.wait(&mut state);
        }
    }

    /// Waits up to `timeout` for the task to finish: `true` if it has (its result is then
    /// ready: [`wait`](Self::wait) returns at once), `false` if it is still running (the
    /// handle stays usable; wait again, or later).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_blocking::ThreadPoolLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 2)?;
    /// let task = pool.run_async_if_leader("report", || 6 * 7)?;
    /// while !task.wait_timeout(Duration::from_millis(100)) {
    ///     println!("still running");
    /// }
    /// assert_eq!(task.wait()?, Some(42));
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.slot.state.lock();
        while state.outcome.is_none() {
            if self.slot.done.wait_until(&mut state, deadline).timed_out() {
                return state.outcome.is_some();
            }
        }
        true
    }
}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.slot.state.lock();
        match state.outcome.take() {
            Some(outcome) => Poll::Ready(unwrap_outcome(outcome)),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
