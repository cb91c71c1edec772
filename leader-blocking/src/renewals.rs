//! The renewal driver: one per backend value, renewing every auto-extended lease of the
//! blocking electors over that backend.
//!
//! A lease registers when it is taken and unregisters when it is released. One scheduler
//! thread watches all of them, however many there are, and never waits for a backend: it
//! sleeps until the next lease is due or the next deadline passes, hands the due leases to
//! the driver's [`Workers`], and marks each lease lost the moment its deadline passes
//! unrenewed, whatever the renewals in flight are doing (a late answer then changes nothing
//! for it). Due leases are taken together with every lease due within half its interval,
//! so they fall into a few cohorts: a backend whose [`extend_batch`] is native
//! ([`LockBackend::extend_batch_is_native`]) gets each cohort as one call; any other gets
//! one call per lease, several at once, so that one stuck key holds up no other lease. A
//! lease that a native batch answers with a transient error (PostgreSQL's batch skips a
//! row another session holds locked for a moment) is renewed again alone, with its own
//! `extend`, before its answer counts ([`LeaseTracker::renew_alone_after`]).
//!
//! The driver of a backend is found by the backend's `Arc` (electors that share a backend
//! share its driver, whatever their options), and goes away, threads and all, within a
//! second of its last lease.
//!
//! [`extend_batch`]: LockBackend::extend_batch

use std::any::Any;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use leader_core::__private::{Keepalive, LeaseTracker, RenewalSchedule, answers_in_order};
use leader_core::{Error, ExtendOutcome, LockBackend, Renewal};
use parking_lot::{Condvar, Mutex};

use crate::per_backend::PerBackend;
use crate::workers::Workers;

/// The longest the scheduler sleeps: an unused driver notices it is unused this soon.
const IDLE: Duration = Duration::from_secs(1);

/// The most renewal calls of one backend value in flight at once. A call that hangs ties up
/// its thread until the backend's own timeout; with this many hanging the store itself is
/// stuck, more threads would not get an answer sooner, and each lease is lost at its own
/// deadline all the same.
const MAX_CALLS: usize = 16;

/// The renewal driver of one backend value.
pub(crate) struct Renewals<B: LockBackend + 'static> {
    backend: Arc<B>,
    queue: Mutex<Queue>,
    changed: Condvar,
    workers: Workers,
}

/// The registered leases, and whether the scheduler runs.
#[derive(Default)]
struct Queue {
    leases: HashMap<u64, Entry>,
    next_id: u64,
    running: bool,
    /// When the waiting scheduler looks next: a lease due earlier wakes it, one due later
    /// does not (each look goes over every lease).
    wakes_at: Option<Instant>,
}

impl Queue {
    /// Whether a lease due at `due` must wake the scheduler.
    fn wakes(&self, due: Instant) -> bool {
        self.wakes_at.is_none_or(|at| due < at)
    }
}

/// One registered lease.
struct Entry {
    tracker: Arc<LeaseTracker>,
    schedule: RenewalSchedule,
    /// What each renewal asks for.
    keepalive: Keepalive,
    /// A renewal was handed to the workers and is not answered yet.
    in_flight: bool,
}

/// One lease of a renewal call.
struct Sent {
    id: u64,
    tracker: Arc<LeaseTracker>,
    keepalive: Keepalive,
}

/// A lease's place in the driver: renewed until dropped.
pub(crate) struct Registration<B: LockBackend + 'static> {
    driver: Arc<Renewals<B>>,
    id: u64,
}

impl<B: LockBackend + 'static> std::fmt::Debug for Registration<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .finish()
    }
}

impl<B: LockBackend + 'static> Drop for Registration<B> {
    fn drop(&mut self) {
        self.driver.queue.lock().leases.remove(&self.id);
    }
}

impl<B: LockBackend + 'static> Renewals<B> {
    /// The driver of `backend`: the one its electors already use, or a new one.
    pub(crate) fn of(backend: &Arc<B>) -> Arc<Self> {
        let pick = |driver: Arc<dyn Any + Send + Sync>| driver.downcast::<Self>().ok();
        DRIVERS.find_or_make(backend, pick, || {
            let driver = Arc::new(Renewals {
                backend: Arc::clone(backend),
                queue: Mutex::new(Queue::default()),
                changed: Condvar::new(),
                workers: Workers::new("leader-renew-io", MAX_CALLS),
            });
            let erased: Arc<dyn Any + Send + Sync> = Arc::clone(&driver) as _;
            (driver, Arc::downgrade(&erased))
        })
    }

    /// Renews `tracker`'s lease on `schedule` (the first renewal one interval after its
    /// acquire was sent, at once if that is past) until the registration is dropped or the
    /// lease is lost. If the scheduler cannot start, the lease is marked lost at once: the
    /// action never believes itself covered.
    pub(crate) fn register(
        self: &Arc<Self>,
        tracker: Arc<LeaseTracker>,
        schedule: RenewalSchedule,
        keepalive: Keepalive,
    ) -> Registration<B> {
        let mut queue = self.queue.lock();
        let id = queue.next_id;
        queue.next_id += 1;
        if !queue.running {
            match start(self) {
                Ok(()) => queue.running = true,
                Err(err) => {
                    tracing::warn!(error = %err, "could not start the renewal scheduler");
                    tracker.lose();
                }
            }
        }
        let wake = queue.wakes(schedule.due());
        if queue.running {
            queue.leases.insert(
                id,
                Entry {
                    tracker,
                    schedule,
                    keepalive,
                    in_flight: false,
                },
            );
        }
        drop(queue);
        if wake {
            self.changed.notify_one();
        }
        Registration {
            driver: Arc::clone(self),
            id,
        }
    }

    /// One look at every lease: marks those past their deadline lost, hands the due ones
    /// to the workers. Returns when to look again (`None`: no lease).
    fn tick(self: &Arc<Self>, queue: &mut Queue) -> Option<Instant> {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut any_due = false;
        queue.leases.retain(|_, entry| {
            if entry.tracker.is_marked_lost() {
                return false;
            }
            let deadline = entry.tracker.context().deadline();
            if deadline <= now {
                if entry.in_flight {
                    entry.tracker.renewal_unanswered();
                } else {
                    tracing::warn!(lock = %entry.tracker.lease().key, "lease lost: its deadline passed before a renewal could be sent");
                    entry.tracker.lose();
                }
                return false;
            }
            let mut wake = deadline;
            if !entry.in_flight {
                any_due |= entry.schedule.due() <= now;
                wake = wake.min(entry.schedule.due());
            }
            next = Some(next.map_or(wake, |next| next.min(wake)));
            true
        });
        if any_due {
            let cohort: Vec<Sent> = queue
                .leases
                .iter_mut()
                .filter(|(_, entry)| !entry.in_flight && entry.schedule.joins_batch_at(now))
                .map(|(id, entry)| {
                    entry.in_flight = true;
                    Sent {
                        id: *id,
                        tracker: Arc::clone(&entry.tracker),
                        keepalive: entry.keepalive,
                    }
                })
                .collect();
            self.send(cohort, queue);
        }
        next
    }

    /// Hands `cohort` to the workers: whole to a native batch, else one call per lease.
    fn send(self: &Arc<Self>, cohort: Vec<Sent>, queue: &mut Queue) {
        let calls: Vec<Vec<Sent>> = if self.backend.extend_batch_is_native() {
            vec![cohort]
        } else {
            cohort.into_iter().map(|sent| vec![sent]).collect()
        };
        for call in calls {
            let driver = Arc::downgrade(self);
            let backend = Arc::clone(&self.backend);
            let ids: Vec<u64> = call.iter().map(|sent| sent.id).collect();
            let job = Box::new(move || renew(&driver, &*backend, call));
            if self.workers.submit(job).is_err() {
                // No thread to renew on: lost now rather than at a deadline nobody covers.
                for id in ids {
                    if let Some(entry) = queue.leases.remove(&id) {
                        entry.tracker.lose();
                    }
                }
            }
        }
    }
}

/// Every driver, by the address of its backend's `Arc` (type-erased: drivers of every
/// backend type live here).
static DRIVERS: PerBackend<dyn Any + Send + Sync> = PerBackend::new();

/// Starts the scheduler of `driver`.
fn start<B: LockBackend + 'static>(driver: &Arc<Renewals<B>>) -> std::io::Result<()> {
    let weak = Arc::downgrade(driver);
    std::thread::Builder::new()
        .name("leader-renewals".into())
        .spawn(move || schedule(&weak))?;
    Ok(())
}

/// The scheduler: looks at the leases whenever one is due, a deadline passes, a lease
/// registers or an answer comes, until the driver is unused. Should it stop for any other
/// reason (a panic), every lease is marked lost and the next registration starts it again.
fn schedule<B: LockBackend + 'static>(driver: &Weak<Renewals<B>>) {
    let stopped = Stopped(driver);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        while let Some(driver) = driver.upgrade() {
            let mut queue = driver.queue.lock();
            let next = driver.tick(&mut queue);
            let unstick = driver.workers.unstick();
            let idle = Instant::now() + IDLE;
            let wake = [next, unstick]
                .into_iter()
                .flatten()
                .fold(idle, Instant::min);
            queue.wakes_at = Some(wake);
            driver.changed.wait_until(&mut queue, wake);
            queue.wakes_at = None;
        }
    }));
    drop(stopped);
}

/// Marks the leases lost when the scheduler stops while its driver is still in use.
struct Stopped<'a, B: LockBackend + 'static>(&'a Weak<Renewals<B>>);

impl<B: LockBackend + 'static> Drop for Stopped<'_, B> {
    fn drop(&mut self) {
        let Some(driver) = self.0.upgrade() else {
            return;
        };
        tracing::warn!("the renewal scheduler stopped; its leases are lost");
        let mut queue = driver.queue.lock();
        for entry in std::mem::take(&mut queue.leases).into_values() {
            entry.tracker.lose();
        }
        queue.running = false;
    }
}

/// A worker's job: one `extend_batch` call for `leases`, then their answers recorded
/// (a lease released or marked lost meanwhile takes no answer). A lease whose answer from a
/// native batch is a transient error is renewed again alone, on a job of its own
/// ([`LeaseTracker::renew_alone_after`]), and stays in flight until that answer comes.
fn renew<B: LockBackend + 'static>(driver: &Weak<Renewals<B>>, backend: &B, leases: Vec<Sent>) {
    // Released or lost while the call waited for a thread: not renewed.
    let leases: Vec<Sent> = {
        let Some(live) = driver.upgrade() else {
            return;
        };
        let queue = live.queue.lock();
        leases
            .into_iter()
            .filter(|sent| queue.leases.contains_key(&sent.id))
            .collect()
    };
    if leases.is_empty() {
        return;
    }
    let renewals: Vec<Renewal<'_>> = leases
        .iter()
        .map(|sent| sent.keepalive.renewal(sent.tracker.lease()))
        .collect();
    let spans: Vec<_> = leases
        .iter()
        .map(|sent| sent.tracker.extend_span())
        .collect();
    let sent_at = Instant::now();
    let answers = catch_unwind(AssertUnwindSafe(|| backend.extend_batch(&renewals)))
        .unwrap_or_else(|_| {
            tracing::warn!("the backend panicked renewing leases; they are lost");
            Vec::new()
        });
    let keys = leases.iter().map(|sent| &sent.tracker.lease().key);
    let answers: Vec<_> = answers_in_order(backend.name(), keys, answers).collect();
    for (span, answer) in spans.iter().zip(&answers) {
        LeaseTracker::record_extend(span, answer);
    }
    let batched = backend.extend_batch_is_native();
    let mut alone = Vec::new();
    let answered = leases
        .into_iter()
        .zip(answers)
        .filter_map(|(sent, answer)| {
            if batched && LeaseTracker::renew_alone_after(&answer) {
                alone.push(sent);
                None
            } else {
                Some((sent, answer))
            }
        });
    let answered: Vec<_> = answered.collect();
    record(driver, answered, sent_at);
    if alone.is_empty() {
        return;
    }
    let Some(live) = driver.upgrade() else {
        return;
    };
    for sent in alone {
        let id = sent.id;
        let weak = Weak::clone(driver);
        let backend = Arc::clone(&live.backend);
        let job = Box::new(move || renew_alone(&weak, &*backend, sent));
        if live.workers.submit(job).is_err()
            && let Some(entry) = live.queue.lock().leases.remove(&id)
        {
            // No thread to renew on: lost now rather than at a deadline nobody covers.
            entry.tracker.lose();
        }
    }
}

/// A worker's job: one lease's own `extend`, after its batch answered a transient error;
/// its answer recorded.
fn renew_alone<B: LockBackend + 'static>(driver: &Weak<Renewals<B>>, backend: &B, sent: Sent) {
    let live = driver
        .upgrade()
        .is_some_and(|live| live.queue.lock().leases.contains_key(&sent.id));
    if !live {
        return;
    }
    let sent_at = Instant::now();
    let (tracker, keepalive) = (&sent.tracker, sent.keepalive);
    let answer = catch_unwind(AssertUnwindSafe(|| {
        tracker.traced_extend(|| backend.extend(keepalive.renewal(tracker.lease())))
    }));
    match answer {
        Ok(answer) => record(driver, vec![(sent, answer)], sent_at),
        Err(_) => {
            tracing::warn!(lock = %tracker.lease().key, "the backend panicked renewing a lease; it is lost");
            if let Some(live) = driver.upgrade() {
                live.queue.lock().leases.remove(&sent.id);
            }
            sent.tracker.lose();
        }
    }
}

/// Records each lease's answer to a renewal sent at `sent_at`: renewed on schedule, or
/// dropped from the driver once lost.
fn record<B: LockBackend + 'static>(
    driver: &Weak<Renewals<B>>,
    answered: Vec<(Sent, Result<ExtendOutcome, Error>)>,
    sent_at: Instant,
) {
    let Some(driver) = driver.upgrade() else {
        return;
    };
    let mut queue = driver.queue.lock();
    let mut wake = false;
    for (sent, answer) in answered {
        let Some(entry) = queue.leases.get_mut(&sent.id) else {
            continue;
        };
        // Past its deadline the lease stays lost: a late "renewed" changes nothing.
        if sent
            .tracker
            .record_renewal(answer, sent_at, sent.keepalive.lease_time, Instant::now())
        {
            entry.schedule.renewed(sent_at);
            entry.in_flight = false;
            let due = entry.schedule.due();
            wake |= queue.wakes(due);
        } else {
            queue.leases.remove(&sent.id);
        }
    }
    drop(queue);
    if wake {
        driver.changed.notify_one();
    }
}
