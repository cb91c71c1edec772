//! Releasing acquisitions nobody knows about: an acquire that failed after it was sent, and
//! a held lease whose own release failed (see [`Orphan`]).
//!
//! Each orphan is a job that releases once and says when to try again. One process-wide
//! timer thread keeps the jobs until they are due and never calls a backend itself: a due
//! job goes to the [`Workers`] of its backend value, so a backend whose releases hang (a
//! frozen server: each call waits for its timeout) delays no other backend's orphans, and
//! on one backend a hanging release delays the next only until another thread is started
//! for it. A thread per orphan would not do: while a server is down every failed call
//! leaves one (a tenant poller with a hundred tenants would start a hundred threads a
//! cycle).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use leader_core::__private::{LeaseTracker, Orphan};
use leader_core::{Error, LockBackend, ReleaseOutcome, ReleaseRequest};

use crate::per_backend::PerBackend;
use crate::workers::Workers;

/// One release attempt; `Some(delay)` to be run again after `delay`.
type Attempt = Box<dyn FnMut() -> Option<Duration> + Send>;

/// Orphans waiting beyond this many are dropped (with a warning): they run out with their
/// leases anyway, and the queue must not grow without bound while a server is down.
const MAX_PENDING: usize = 10_000;

/// The most releases of one backend value in flight at once: beyond that many hanging,
/// the store itself is stuck, and more threads would not get an answer sooner.
const MAX_CALLS: usize = 8;

/// Releases `orphan` in the background, again and again while it could be live.
pub(crate) fn release_orphan<B: LockBackend + 'static>(backend: Arc<B>, orphan: Orphan) {
    let key = orphan.leases().first().map(|lease| lease.key.clone());
    let workers = workers_of(&backend);
    let mut orphan = orphan;
    let attempt: Attempt = Box::new(move || {
        let mut answers = Vec::with_capacity(orphan.leases().len());
        for lease in orphan.leases() {
            let answer = backend.release(ReleaseRequest::new(lease, orphan.min_lease_time()));
            let unreachable = Orphan::ends_round(&answer);
            answers.push(answer);
            if unreachable {
                break;
            }
        }
        orphan.after_releases(&answers, Instant::now())
    });
    let due = Due {
        at: Instant::now(),
        attempt,
        workers,
    };
    match timer() {
        Some(timer) if timer.send(due).is_ok() => {}
        _ => {
            tracing::warn!(lock = ?key, "no thread to release a possibly orphaned lease; it runs out with its lease");
        }
    }
}

/// Hands the lease of `tracker`, whose release (keeping `min_lease_time`) answered
/// `answer`, to the background releases when that answer was a transient error (see
/// [`Orphan::after_release`]); gives the answer back.
pub(crate) fn after_release<B: LockBackend + 'static>(
    backend: &Arc<B>,
    tracker: &LeaseTracker,
    min_lease_time: Duration,
    answer: Result<ReleaseOutcome, Error>,
) -> Result<ReleaseOutcome, Error> {
    let lease_time = tracker.lease_time();
    if let Some(orphan) = Orphan::after_release(
        tracker.lease(),
        lease_time,
        min_lease_time,
        &answer,
        Instant::now(),
    ) {
        release_orphan(Arc::clone(backend), orphan);
    }
    answer
}

/// Runs `release` once on `backend`'s release threads (the ones its orphans use), so the
/// caller does not wait for the store: for locks known to be held that nobody will run
/// (see [`Acquired::release_all`](crate::Acquired::release_all)).
pub(crate) fn release_in_background<B: LockBackend + 'static>(
    backend: &Arc<B>,
    release: impl FnOnce() + Send + 'static,
) {
    let mut release = Some(release);
    let attempt: Attempt = Box::new(move || {
        if let Some(release) = release.take() {
            release();
        }
        None
    });
    let due = Due {
        at: Instant::now(),
        attempt,
        workers: workers_of(backend),
    };
    match timer() {
        Some(timer) if timer.send(due).is_ok() => {}
        _ => tracing::warn!("no thread to release leases in the background; they run out"),
    }
}

/// The release threads of `backend`'s value (by the address of its `Arc`): the ones its
/// other orphans use, or new ones. They go away with the last orphan that uses them.
fn workers_of<B: LockBackend + 'static>(backend: &Arc<B>) -> Arc<Workers> {
    WORKERS.find_or_make(backend, Some, || {
        let workers = Arc::new(Workers::new("leader-orphans-io", MAX_CALLS));
        let kept = Arc::downgrade(&workers);
        (workers, kept)
    })
}

/// The release threads of every backend value with orphans.
static WORKERS: PerBackend<Workers> = PerBackend::new();

/// Starts a thread for each backend whose releases all hang while others wait; when to
/// look again.
fn unstick_all() -> Option<Instant> {
    WORKERS
        .live()
        .iter()
        .filter_map(|workers| workers.unstick())
        .min()
}

/// An attempt, when it is due, and the threads of its backend.
struct Due {
    at: Instant,
    attempt: Attempt,
    workers: Arc<Workers>,
}

/// The timer thread's queue (new orphans, and attempts to run again), started on first use.
fn timer() -> Option<&'static Sender<Due>> {
    static TIMER: OnceLock<Option<Sender<Due>>> = OnceLock::new();
    TIMER
        .get_or_init(|| {
            let (sender, receiver) = crossbeam_channel::unbounded();
            let again = sender.clone();
            std::thread::Builder::new()
                .name("leader-orphans".into())
                .spawn(move || keep_time(&receiver, &again))
                .map_err(
                    |err| tracing::warn!(error = %err, "could not start the orphan-release thread"),
                )
                .ok()
                .map(|_| sender)
        })
        .as_ref()
}

/// Hands every attempt to its backend's threads when it is due, taking new ones as they
/// come; an attempt that asks to run again comes back through `again`.
fn keep_time(new: &Receiver<Due>, again: &Sender<Due>) {
    let mut pending: Vec<Due> = Vec::new();
    loop {
        let next = pending.iter().map(|due| due.at).min();
        // Every job is handed over on this thread, so a look after each round sees them all.
        let unstick = unstick_all();
        let wake = [next, unstick].into_iter().flatten().min();
        let received = match wake {
            Some(at) => new.recv_deadline(at),
            None => new.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(due) if pending.len() < MAX_PENDING => pending.push(due),
            Ok(_) => tracing::warn!("too many possibly orphaned leases to release; dropping one"),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        hand_over_due(&mut pending, again);
    }
}

/// Hands the due attempts to their backends' threads.
fn hand_over_due(pending: &mut Vec<Due>, again: &Sender<Due>) {
    let now = Instant::now();
    let mut index = 0;
    while index < pending.len() {
        if pending[index].at > now {
            index += 1;
            continue;
        }
        let Due {
            mut attempt,
            workers,
            ..
        } = pending.swap_remove(index);
        let again = again.clone();
        let threads = Arc::clone(&workers);
        let job = Box::new(move || {
            if let Some(delay) = attempt() {
                let due = Due {
                    at: Instant::now() + delay,
                    attempt,
                    workers: threads,
                };
                // The timer outlives every job: it never stops.
                let _ = again.send(due);
            }
        });
        if workers.submit(job).is_err() {
            tracing::warn!(
                "no thread to release a possibly orphaned lease; it runs out with its lease"
            );
        }
    }
}
