//! A call driven on the calling thread, its deadline kept by that thread's own parking.
//!
//! Why not spawn the call and wait, or `Handle::block_on` it under `tokio::time::timeout`:
//! a spawned call wakes the background worker to run it and then the caller to take its
//! result, and a tokio timer lives on the background runtime's timer wheel, where
//! registering one earlier than every other timer there (a call's deadline, when no other
//! timer is pending, is) wakes the worker to re-arm its sleep. Driven here, the call's own
//! I/O is all that wakes the worker, and the thread keeps the deadline by parking with a
//! timeout.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

/// Why [`on_this_thread`] gave no output.
pub(super) enum NotDone<F> {
    /// Out of time: the call unfinished, with the deadline it ran out of, for the caller
    /// to drop or to hand to a runtime.
    Overdue(F, Duration),
    /// The call panicked (and was dropped), as a task's panic is caught by its runtime.
    Panicked,
}

/// Polls `op` on this thread, within `handle`'s runtime context (what it spawns or
/// connects is the background runtime's), parking between polls until woken or until
/// `deadline` has passed, when given.
///
/// # Errors
///
/// [`NotDone`]: out of time, or a panic.
pub(super) fn on_this_thread<F>(
    handle: &Handle,
    deadline: Option<Duration>,
    mut op: F,
) -> Result<F::Output, NotDone<F>>
where
    F: Future + Unpin,
{
    let _context = handle.enter();
    let until = deadline.map(|deadline| (Instant::now() + deadline, deadline));
    let waker = Waker::from(Arc::new(Unparker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        // A panic stays the call's, as it would in a task: the caller gets an error.
        let polled = panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut op).poll(&mut cx)));
        match polled {
            Ok(Poll::Ready(output)) => return Ok(output),
            Ok(Poll::Pending) => {}
            Err(_) => return Err(NotDone::Panicked),
        }
        // Parking may end early (a stray unpark, a spurious wake-up): that is one more
        // poll, which finds the call still pending.
        match until {
            None => thread::park(),
            Some((until, deadline)) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(NotDone::Overdue(op, deadline));
                }
                thread::park_timeout(left);
            }
        }
    }
}

/// Wakes the thread that drives a call.
struct Unparker(Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}
