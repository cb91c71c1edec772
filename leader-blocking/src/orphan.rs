//! Releasing acquisitions nobody knows about: an acquire that failed after it was sent
//! (see [`Orphan`]).
//!
//! One process-wide thread does it for every blocking elector, whatever the backend: each
//! orphan is a job that releases once and says when to try again. A thread per orphan
//! would not do: while a server is down every failed call leaves one, for as long as a
//! lease (a tenant poller with a hundred tenants would start a hundred threads a cycle).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use leader_core::__private::Orphan;
use leader_core::LockBackend;

/// One release attempt; `Some(delay)` to be run again after `delay`.
type Attempt = Box<dyn FnMut() -> Option<Duration> + Send>;

/// Orphans waiting beyond this many are dropped (with a warning): they run out with their
/// leases anyway, and the queue must not grow without bound while a server is down.
const MAX_PENDING: usize = 10_000;

/// Releases `orphan` in the background, again and again while it could be live.
pub(crate) fn release_orphan<B: LockBackend + 'static>(backend: Arc<B>, orphan: Orphan) {
    let key = orphan.leases().first().map(|lease| lease.key.clone());
    let mut orphan = orphan;
    let attempt: Attempt = Box::new(move || {
        let mut answers = Vec::with_capacity(orphan.leases().len());
        for lease in orphan.leases() {
            let answer = backend.release(lease, Duration::ZERO);
            let unreachable = Orphan::ends_round(&answer);
            answers.push(answer);
            if unreachable {
                break;
            }
        }
        orphan.after_releases(&answers)
    });
    match reaper() {
        Some(reaper) if reaper.send(attempt).is_ok() => {}
        _ => {
            tracing::warn!(lock = ?key, "no thread to release a possibly orphaned lease; it runs out with its lease");
        }
    }
}

/// The reaper thread's queue, started on first use.
fn reaper() -> Option<&'static Sender<Attempt>> {
    static REAPER: OnceLock<Option<Sender<Attempt>>> = OnceLock::new();
    REAPER
        .get_or_init(|| {
            let (sender, receiver) = crossbeam_channel::unbounded();
            std::thread::Builder::new()
                .name("leader-orphans".into())
                .spawn(move || reap(&receiver))
                .map_err(
                    |err| tracing::warn!(error = %err, "could not start the orphan-release thread"),
                )
                .ok()
                .map(|_| sender)
        })
        .as_ref()
}

/// An attempt and when it is due.
struct Due {
    at: Instant,
    attempt: Attempt,
}

/// Runs every attempt when it is due, taking new ones as they come.
fn reap(new: &Receiver<Attempt>) {
    let mut pending: Vec<Due> = Vec::new();
    loop {
        let next = pending.iter().map(|due| due.at).min();
        let received = match next {
            Some(at) => new.recv_deadline(at),
            None => new.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(attempt) if pending.len() < MAX_PENDING => pending.push(Due {
                at: Instant::now(),
                attempt,
            }),
            Ok(_) => tracing::warn!("too many possibly orphaned leases to release; dropping one"),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        run_due(&mut pending);
    }
}

fn run_due(pending: &mut Vec<Due>) {
    let mut index = 0;
    while index < pending.len() {
        let due = &mut pending[index];
        if due.at > Instant::now() {
            index += 1;
            continue;
        }
        match (due.attempt)() {
            Some(delay) => {
                due.at = Instant::now() + delay;
                index += 1;
            }
            None => {
                pending.swap_remove(index);
            }
        }
    }
}
