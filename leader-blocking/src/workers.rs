//! [`Workers`]: threads for background backend calls that may hang (renewals, orphan
//! releases), so that a call that hangs holds up no call but itself.
//!
//! One thread serves every job while calls are answered promptly. When the oldest waiting
//! job has waited [`STALL`], every thread is taken up by a call that is slow to answer, and
//! the owner's [`unstick`](Workers::unstick) starts another, up to the set's maximum. A
//! thread idle for [`IDLE`] ends (the last one only when the set is dropped).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A background job: one backend call and the bookkeeping of its answer.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How long the oldest job waits for a thread before another is started: far below any
/// renewal margin (two thirds of a lease) and a backend's round trip many times over.
pub(crate) const STALL: Duration = Duration::from_millis(50);

/// A thread with nothing to do for this long ends, unless it is the last one.
const IDLE: Duration = Duration::from_secs(1);

/// A set of threads running [`Job`]s in the order they come.
pub(crate) struct Workers {
    name: &'static str,
    max: usize,
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
}

#[derive(Default)]
struct State {
    /// Waiting jobs and when each came.
    jobs: VecDeque<(Instant, Job)>,
    threads: usize,
    idle: usize,
    /// The set was dropped: threads end once the jobs are done.
    closed: bool,
}

impl Workers {
    /// A set of at most `max` threads named `name`; none runs until the first job comes.
    pub(crate) fn new(name: &'static str, max: usize) -> Self {
        Workers {
            name,
            max: max.max(1),
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                work: Condvar::new(),
            }),
        }
    }

    /// Runs `job` on a thread of the set: the first to be free, or the first thread when
    /// none runs yet. `Err(job)` when no thread runs and none could be started.
    pub(crate) fn submit(&self, job: Job) -> Result<(), Job> {
        let mut state = self.shared.state.lock();
        if state.threads == 0 && !self.start(&mut state) {
            return Err(job);
        }
        state.jobs.push_back((Instant::now(), job));
        drop(state);
        self.shared.work.notify_one();
        Ok(())
    }

    /// Starts another thread when the oldest waiting job has waited [`STALL`] with no
    /// thread free (each is stuck in a call), while fewer than the maximum run. Returns when
    /// to look again: `None` while no job waits, or none can be helped.
    pub(crate) fn unstick(&self) -> Option<Instant> {
        let mut state = self.shared.state.lock();
        let since = state.jobs.front()?.0;
        if state.threads >= self.max {
            // A thread that finishes takes the next job itself.
            return None;
        }
        let now = Instant::now();
        let stalled_at = since + STALL;
        if now < stalled_at || state.idle > 0 {
            return Some(stalled_at.max(now + STALL / 5));
        }
        self.start(&mut state);
        drop(state);
        self.shared.work.notify_one();
        Some(now + STALL)
    }

    /// Starts a thread; `false` (logged) when none could be.
    fn start(&self, state: &mut State) -> bool {
        let shared = Arc::clone(&self.shared);
        let started = std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || work(&shared));
        match started {
            Ok(_) => {
                state.threads += 1;
                true
            }
            Err(err) => {
                tracing::warn!(error = %err, thread = self.name, "could not start a thread for background backend calls");
                false
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.work.notify_all();
    }
}

/// A thread of the set: jobs until it is idle too long or the set is gone.
fn work(shared: &Shared) {
    let mut state = shared.state.lock();
    loop {
        if let Some((_, job)) = state.jobs.pop_front() {
            drop(state);
            if catch_unwind(AssertUnwindSafe(job)).is_err() {
                tracing::warn!("a background backend call panicked");
            }
            state = shared.state.lock();
            continue;
        }
        if state.closed {
            break;
        }
        state.idle += 1;
        let timed_out = shared.work.wait_for(&mut state, IDLE).timed_out();
        state.idle -= 1;
        if timed_out && state.jobs.is_empty() && state.threads > 1 {
            break;
        }
    }
    state.threads -= 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{Receiver, bounded};

    fn job(done: crossbeam_channel::Sender<u32>, n: u32, hold: Option<Receiver<()>>) -> Job {
        Box::new(move || {
            if let Some(hold) = hold {
                let _ = hold.recv();
            }
            let _ = done.send(n);
        })
    }

    #[test]
    fn a_stuck_job_holds_up_the_next_only_until_unstick_starts_a_thread() {
        let workers = Workers::new("leader-test-workers", 4);
        let (done, finished) = bounded(4);
        let (release, hold) = bounded::<()>(0);
        assert!(workers.submit(job(done.clone(), 1, Some(hold))).is_ok());
        assert!(workers.submit(job(done, 2, None)).is_ok());
        let started = Instant::now();
        // The owner's loop: look again when told.
        let second = loop {
            if let Ok(n) = finished.try_recv() {
                break n;
            }
            let at = workers.unstick().unwrap_or_else(|| Instant::now() + STALL);
            std::thread::sleep(at.saturating_duration_since(Instant::now()).min(STALL));
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the second job never ran"
            );
        };
        assert_eq!(second, 2);
        assert_eq!(workers.shared.state.lock().threads, 2);
        drop(release);
        assert_eq!(finished.recv().ok(), Some(1));
    }

    #[test]
    fn prompt_jobs_share_one_thread_and_a_panic_ends_no_thread() {
        let workers = Workers::new("leader-test-workers", 4);
        let (done, finished) = bounded(100);
        assert!(
            workers
                .submit(Box::new(|| panic!("a backend that panics")))
                .is_ok()
        );
        for n in 0..100 {
            assert!(workers.submit(job(done.clone(), n, None)).is_ok());
        }
        let all: Vec<u32> = (0..100).filter_map(|_| finished.recv().ok()).collect();
        assert_eq!(all, (0..100).collect::<Vec<_>>(), "in order");
        assert_eq!(workers.shared.state.lock().threads, 1);
        assert_eq!(workers.unstick(), None, "nothing waits");
    }
}
