//! [`Lanes`]: the jobs of one cycle waiting to start, and the lanes that start them.
//!
//! A lane runs one job after another, taking the next waiting job as soon as it ends one,
//! until none waits. The cycle queues the jobs of each batch and starts lanes for them, at
//! most the poller's concurrency at once, so at most that many jobs run at once. A lane of
//! the blocking poller is one task on a pool worker that runs many jobs; of the async
//! poller, one future inside the cycle's. So a worker that ends a job starts the next one
//! itself: the cycle's thread is not woken between two jobs to hand over the next, as it
//! was when each job was a task of its own (two thread switches a job).
//!
//! The lanes report back through the queue's state, which the cycle reads when it wakes:
//! the jobs that began, and the jobs that ended with their outcome (each traced by its lane
//! as it ends). The cycle is woken when the queue empties (every job of its batch has
//! started, so it may try the next batch) and when a lane ends.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use event_listener::{Event, EventListener};
use leader_core::{LeaderRunResult, Shutdown, TenantId};
use parking_lot::Mutex;

use crate::error::TenantError;
use crate::report::{TenantOutcome, trace_outcome};

/// A job that ran: its tenant's index in the plan, its outcome, when it started (after the
/// cycle began) and how long it took.
pub(crate) type Done<T, E> = (usize, TenantOutcome<T, E>, Duration, Duration);

/// A job waiting to start: its tenant (by the plan's index) and the lock its batch won
/// for it (`None`: it acquires the lock on its own).
pub(crate) struct Start<A> {
    pub(crate) index: usize,
    pub(crate) tenant: TenantId,
    pub(crate) won: Option<A>,
}

/// The waiting jobs of one cycle, and what its lanes report.
pub(crate) struct Lanes<A, T, E> {
    state: Mutex<State<A, T, E>>,
    /// Notified when the queue empties and when a lane ends.
    changed: Event,
    /// The most lanes at once: the poller's concurrency.
    max: usize,
    /// When the cycle began.
    clock: Instant,
    shutdown: Option<Shutdown>,
    /// Frees won locks whose jobs will not run, without waiting for the store.
    abandon: fn(Vec<A>),
    /// The cycle's span, entered by a lane on a thread of its own.
    span: tracing::Span,
}

struct State<A, T, E> {
    queue: VecDeque<Start<A>>,
    /// Lanes started and not ended.
    live: usize,
    /// Since the cycle last read them: the jobs that began, and those that ended.
    began: Vec<usize>,
    done: Vec<Done<T, E>>,
}

/// What the lanes did since the cycle last looked: the jobs that began and the jobs that
/// ended.
pub(crate) struct News<T, E> {
    pub(crate) began: Vec<usize>,
    pub(crate) done: Vec<Done<T, E>>,
}

impl<A, T, E: std::fmt::Debug> Lanes<A, T, E> {
    /// The lanes of a cycle that began at `clock`, at most `max` at once; none starts a job
    /// once `shutdown` is triggered, and the won locks of the jobs that will not start go
    /// to `abandon`. Made inside the cycle's span.
    pub(crate) fn new(
        max: usize,
        clock: Instant,
        shutdown: Option<Shutdown>,
        abandon: fn(Vec<A>),
    ) -> Self {
        Lanes {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                live: 0,
                began: Vec::new(),
                done: Vec::new(),
            }),
            changed: Event::new(),
            max: max.max(1),
            clock,
            shutdown,
            abandon,
            span: tracing::Span::current(),
        }
    }

    /// The cycle: queues `jobs`; returns how many lanes to start for them (the caller
    /// starts exactly that many, each ending with [`run_blocking`](Self::run_blocking),
    /// [`run_async`](Self::run_async) or [`not_started`](Self::not_started)).
    pub(crate) fn queue(&self, jobs: impl IntoIterator<Item = Start<A>>) -> usize {
        let mut state = self.state.lock();
        state.queue.extend(jobs);
        let more = self.max.saturating_sub(state.live).min(state.queue.len());
        state.live += more;
        more
    }

    /// The cycle: whether every queued job has started (or was dropped at shutdown).
    pub(crate) fn all_started(&self) -> bool {
        self.state.lock().queue.is_empty()
    }

    /// The cycle: a listener for the next change (the queue emptied, a lane ended), to
    /// take before checking what it waits for.
    pub(crate) fn listen(&self) -> EventListener {
        self.changed.listen()
    }

    /// The cycle: what the lanes did since it last looked.
    pub(crate) fn news(&self) -> News<T, E> {
        let mut state = self.state.lock();
        News {
            began: std::mem::take(&mut state.began),
            done: std::mem::take(&mut state.done),
        }
    }

    /// The cycle, as it ends: drops the jobs still waiting and abandons their won locks.
    /// None waits unless shutdown abandoned the cycle while every lane was busy; a busy
    /// lane would otherwise drop them only when its job ends.
    pub(crate) fn drop_waiting(&self) {
        let waiting = std::mem::take(&mut self.state.lock().queue);
        // Handed over here, outside the lock.
        self.abandon(waiting.into_iter().filter_map(|start| start.won));
    }

    /// Frees `won`, locks whose jobs will not run, without waiting for the store: the
    /// poller's `abandon` (a blocking poller releases them in one call on other threads,
    /// so neither the cycle nor a lane's worker waits for a slow or lost store).
    pub(crate) fn abandon(&self, won: impl IntoIterator<Item = A>) {
        let won: Vec<A> = won.into_iter().collect();
        if !won.is_empty() {
            (self.abandon)(won);
        }
    }

    /// A lane: the next job to start, marked as begun; `None` ends the lane, when no job
    /// waits or shutdown is triggered. At shutdown the waiting jobs are dropped (their won
    /// locks abandoned) and never begin.
    fn next(&self) -> Option<Start<A>> {
        let mut state = self.state.lock();
        let stopped = self.shutdown.as_ref().is_some_and(Shutdown::is_triggered);
        let next = if stopped {
            None
        } else {
            state.queue.pop_front()
        };
        let Some(start) = next else {
            let unstarted = std::mem::take(&mut state.queue);
            state.live -= 1;
            drop(state);
            self.abandon(unstarted.into_iter().filter_map(|start| start.won));
            self.changed.notify(usize::MAX);
            return None;
        };
        state.began.push(start.index);
        let emptied = state.queue.is_empty();
        drop(state);
        if emptied {
            self.changed.notify(usize::MAX);
        }
        Some(start)
    }

    /// A lane: a job ended (its line traced now, under the tenant's id).
    fn finish(
        &self,
        start_index: usize,
        tenant: &TenantId,
        outcome: TenantOutcome<T, E>,
        started_after: Duration,
        elapsed: Duration,
    ) {
        trace_outcome(tenant.as_str(), &outcome, elapsed);
        self.state
            .lock()
            .done
            .push((start_index, outcome, started_after, elapsed));
    }

    /// A lane of a blocking poller, on its worker: runs `job` for each waiting tenant, each
    /// isolated (its panic is its outcome) and timed, until none waits.
    pub(crate) fn run_blocking(
        &self,
        mut job: impl FnMut(TenantId, Option<A>) -> Result<LeaderRunResult<T, E>, TenantError>,
    ) {
        let _cycle = self.span.enter();
        while let Some(Start { index, tenant, won }) = self.next() {
            let start = Instant::now();
            let started_after = start.saturating_duration_since(self.clock);
            let id = tenant.clone();
            let outcome = catch_unwind(AssertUnwindSafe(|| job(id, won)));
            let outcome = TenantOutcome::from_run(outcome);
            self.finish(index, &tenant, outcome, started_after, start.elapsed());
        }
    }

    /// A lane of an async poller, polled inside the cycle's future: runs `job` for each
    /// waiting tenant, each isolated (its panic is its outcome) and timed, until none waits.
    #[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
    pub(crate) async fn run_async<Fut>(&self, mut job: impl FnMut(TenantId, Option<A>) -> Fut)
    where
        Fut: std::future::Future<Output = Result<LeaderRunResult<T, E>, TenantError>>,
    {
        use futures_util::FutureExt;

        while let Some(Start { index, tenant, won }) = self.next() {
            let start = Instant::now();
            let started_after = start.saturating_duration_since(self.clock);
            let outcome = AssertUnwindSafe(job(tenant.clone(), won))
                .catch_unwind()
                .await;
            let outcome = TenantOutcome::from_run(outcome);
            self.finish(index, &tenant, outcome, started_after, start.elapsed());
        }
    }

    /// A lane that could not start (the blocking poller's pool is shut down): when no other
    /// lane is left to start them, each waiting job ends with `error()` without running.
    pub(crate) fn not_started(&self, error: impl Fn() -> TenantError) {
        let unstarted = {
            let mut state = self.state.lock();
            state.live -= 1;
            match state.live {
                0 => std::mem::take(&mut state.queue),
                _ => VecDeque::new(),
            }
        };
        // Their won locks are released here, outside the lock, as each is dropped.
        let done: Vec<Done<T, E>> = unstarted
            .into_iter()
            .map(|start| {
                let outcome = TenantOutcome::Error(error());
                trace_outcome(start.tenant.as_str(), &outcome, Duration::ZERO);
                (start.index, outcome, Duration::ZERO, Duration::ZERO)
            })
            .collect();
        self.state.lock().done.extend(done);
        self.changed.notify(usize::MAX);
    }
}
