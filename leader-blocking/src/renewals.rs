//! The renewal driver: one per backend value, renewing every auto-extended lease of the
//! blocking electors over that backend in batches.
//!
//! A lease registers when it is taken and unregisters when it is released. Two threads
//! serve all of them, however many there are: the scheduler sleeps until the first lease
//! is due, takes every lease due within half its renewal interval (so leases fall into
//! a few cohorts renewed together), hands them to the I/O thread as one
//! [`extend_batch`](LockBackend::extend_batch) call, and waits for the answers. Each
//! renewal still races its own lease's deadline (DESIGN §4.7): while the batch is
//! unanswered, the scheduler marks each lease lost the moment its deadline passes, and a
//! late answer changes nothing for it.
//!
//! The driver of a backend is found by the backend's `Arc` (electors that share a backend
//! share its driver, whatever their options), and goes away, threads and all, within a
//! second of its last lease and elector.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use leader_core::__private::LeaseTracker;
use leader_core::{Error, ExtendOutcome, LockBackend, Renewal};
use parking_lot::{Condvar, Mutex};

/// The longest the scheduler sleeps: an unused driver notices it is unused this soon.
const IDLE: Duration = Duration::from_secs(1);

/// The renewal driver of one backend value.
pub(crate) struct Renewals<B: LockBackend + 'static> {
    backend: Arc<B>,
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// The registered leases, and whether the threads run.
#[derive(Default)]
struct Queue {
    leases: HashMap<u64, Entry>,
    next_id: u64,
    running: bool,
}

/// One registered lease.
struct Entry {
    tracker: Arc<LeaseTracker>,
    interval: Duration,
    lease_time: Duration,
    use_db_time: bool,
    /// When it is next due (ignored while `in_flight`).
    due: Instant,
    in_flight: bool,
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

/// What the scheduler hands the I/O thread, and gets back.
struct Batch {
    leases: Vec<(u64, Arc<LeaseTracker>, Duration, bool)>,
    sent_at: Instant,
}
type Answers = Vec<Result<ExtendOutcome, Error>>;

impl<B: LockBackend + 'static> Renewals<B> {
    /// The driver of `backend`: the one its electors already use, or a new one.
    pub(crate) fn of(backend: &Arc<B>) -> Arc<Self> {
        let mut drivers = DRIVERS.lock();
        drivers.retain(|(_, driver)| driver.strong_count() > 0);
        let address = Arc::as_ptr(backend) as usize;
        let known = drivers
            .iter()
            .filter(|(at, _)| *at == address)
            .find_map(|(_, driver)| driver.upgrade()?.downcast::<Self>().ok());
        if let Some(driver) = known {
            return driver;
        }
        let driver = Arc::new(Renewals {
            backend: Arc::clone(backend),
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        });
        let erased: Arc<dyn Any + Send + Sync> = Arc::clone(&driver) as _;
        drivers.push((address, Arc::downgrade(&erased)));
        driver
    }

    /// Renews `tracker`'s lease every `interval` (the first time one interval from now)
    /// until the registration is dropped or the lease is lost. If the driver's threads
    /// cannot start, the lease is marked lost at once: the action never believes itself
    /// covered.
    pub(crate) fn register(
        self: &Arc<Self>,
        tracker: Arc<LeaseTracker>,
        interval: Duration,
        lease_time: Duration,
        use_db_time: bool,
    ) -> Registration<B> {
        let mut queue = self.queue.lock();
        let id = queue.next_id;
        queue.next_id += 1;
        if !queue.running {
            match start(self) {
                Ok(()) => queue.running = true,
                Err(err) => {
                    tracing::warn!(error = %err, "could not start the renewal threads");
                    tracker.lose();
                }
            }
        }
        if queue.running {
            queue.leases.insert(
                id,
                Entry {
                    tracker,
                    interval,
                    lease_time,
                    use_db_time,
                    due: Instant::now() + interval,
                    in_flight: false,
                },
            );
        }
        drop(queue);
        self.changed.notify_one();
        Registration {
            driver: Arc::clone(self),
            id,
        }
    }
}

/// Every driver, by the address of its backend's `Arc` (type-erased: drivers of every
/// backend type live here).
static DRIVERS: Mutex<Vec<(usize, Weak<dyn Any + Send + Sync>)>> = Mutex::new(Vec::new());

/// Starts the scheduler and the I/O thread of `driver`.
fn start<B: LockBackend + 'static>(driver: &Arc<Renewals<B>>) -> std::io::Result<()> {
    let (batches, to_renew) = crossbeam_channel::bounded::<Batch>(1);
    let (answered, answers) = crossbeam_channel::bounded::<Answers>(1);
    let backend = Arc::clone(&driver.backend);
    std::thread::Builder::new()
        .name("leader-renew-io".into())
        .spawn(move || renew(&*backend, &to_renew, &answered))?;
    let weak = Arc::downgrade(driver);
    std::thread::Builder::new()
        .name("leader-renewals".into())
        .spawn(move || schedule(&weak, &batches, &answers))?;
    Ok(())
}

/// The I/O thread: one `extend_batch` per batch, until the scheduler goes.
fn renew<B: LockBackend>(backend: &B, batches: &Receiver<Batch>, answered: &Sender<Answers>) {
    while let Ok(batch) = batches.recv() {
        let renewals: Vec<Renewal<'_>> = batch
            .leases
            .iter()
            .map(|(_, tracker, lease_time, use_db_time)| {
                Renewal::new(tracker.lease(), *lease_time).with_db_time(*use_db_time)
            })
            .collect();
        let spans: Vec<_> = batch
            .leases
            .iter()
            .map(|(_, t, ..)| t.extend_span())
            .collect();
        let answers = backend.extend_batch(&renewals);
        for (span, answer) in spans.iter().zip(&answers) {
            LeaseTracker::record_extend(span, answer);
        }
        if answered.send(answers).is_err() {
            return;
        }
    }
}

/// The scheduler: batches of due leases, one at a time, until the driver is unused. Should
/// the I/O thread die (a backend that panicked), every lease is marked lost and the next
/// registration starts the threads again.
fn schedule<B: LockBackend + 'static>(
    driver: &Weak<Renewals<B>>,
    batches: &Sender<Batch>,
    answers: &Receiver<Answers>,
) {
    while let Some(driver) = driver.upgrade() {
        let Some(batch) = next_batch(&driver) else {
            continue;
        };
        let kept = Batch {
            leases: batch.leases.clone(),
            sent_at: batch.sent_at,
        };
        let sent = batches.send(batch).is_ok();
        let batch = kept;
        if !sent || !settle(&driver, &batch, answers) {
            let mut queue = driver.queue.lock();
            for entry in std::mem::take(&mut queue.leases).into_values() {
                entry.tracker.lose();
            }
            queue.running = false;
            return;
        }
    }
}

/// Waits (at most [`IDLE`]) until leases are due, and takes them: every lease due within
/// half its interval. `None` when none is due yet.
fn next_batch<B: LockBackend + 'static>(driver: &Renewals<B>) -> Option<Batch> {
    let mut queue = driver.queue.lock();
    let now = Instant::now();
    let first_due = queue
        .leases
        .values()
        .filter(|entry| !entry.in_flight)
        .map(|entry| entry.due)
        .min();
    let ready = first_due.is_some_and(|due| due <= now);
    if !ready {
        let wait = first_due.map_or(IDLE, |due| due.saturating_duration_since(now).min(IDLE));
        driver.changed.wait_for(&mut queue, wait);
        return None;
    }
    let sent_at = Instant::now();
    let leases = queue
        .leases
        .iter_mut()
        .filter(|(_, entry)| !entry.in_flight && entry.due <= sent_at + entry.interval / 2)
        .map(|(id, entry)| {
            entry.in_flight = true;
            let tracker = Arc::clone(&entry.tracker);
            (*id, tracker, entry.lease_time, entry.use_db_time)
        })
        .collect();
    Some(Batch { leases, sent_at })
}

/// Waits for the batch's answers, marking each lease lost at its deadline meanwhile, then
/// records them. `false` when the I/O thread is gone.
fn settle<B: LockBackend + 'static>(
    driver: &Renewals<B>,
    batch: &Batch,
    answers: &Receiver<Answers>,
) -> bool {
    let mut waiting: Vec<bool> = vec![true; batch.leases.len()];
    let answered = loop {
        let next_deadline = batch
            .leases
            .iter()
            .zip(&waiting)
            .filter(|(_, waiting)| **waiting)
            .map(|((_, tracker, ..), _)| tracker.context().deadline())
            .min();
        let received = match next_deadline {
            Some(deadline) => answers.recv_deadline(deadline),
            None => answers.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(answered) => break Some(answered),
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                let queue = driver.queue.lock();
                for ((id, tracker, ..), waiting) in batch.leases.iter().zip(&mut waiting) {
                    if *waiting && tracker.context().deadline() <= now {
                        *waiting = false;
                        // A lease released meanwhile was not lost.
                        if queue.leases.contains_key(id) {
                            tracker.renewal_unanswered();
                        }
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => break None,
        }
    };
    let mut queue = driver.queue.lock();
    let Some(answered) = answered else {
        for (id, tracker, ..) in &batch.leases {
            tracker.lose();
            queue.leases.remove(id);
        }
        return false;
    };
    // A backend that answered fewer renewals than it was given fails the others.
    let answered = answered
        .into_iter()
        .map(Some)
        .chain(std::iter::repeat_with(|| None));
    for (((id, tracker, lease_time, _), waiting), answer) in
        batch.leases.iter().zip(waiting).zip(answered)
    {
        // Released meanwhile: its answer means nothing any more.
        let Some(entry) = queue.leases.get_mut(id) else {
            continue;
        };
        let answer = answer.unwrap_or(Err(Error::ShutDown));
        // A lease marked lost at its deadline stays lost: its late answer changes nothing.
        if waiting && tracker.record_renewal(answer, batch.sent_at, *lease_time) {
            entry.due = batch.sent_at + entry.interval;
            entry.in_flight = false;
        } else {
            queue.leases.remove(id);
        }
    }
    true
}
