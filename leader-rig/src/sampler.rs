//! [`LeaderSampler`]: watches campaigns from a thread and catches two leaders at once (or,
//! for a leader group, more leaders than slots).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use leader_core::__private::LeadershipState;

/// Watches every campaign state it is given, from its own thread, and records the first
/// moment two of them lead at once.
///
/// States are only ever added: a leader that resigns or is abandoned stays watched through
/// the handover, which is where an overlap would show (its term must end before the lock
/// is released to the next one).
///
/// Each sample reads every state, then reads the leaders it found again, and reports them
/// only if they still lead: a state that stopped leading in between is not an overlap.
/// The sampler yields to other threads between samples, so an overlap shorter than a
/// scheduling turn may go unseen.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use leader_core::__private::LeadershipState;
/// use leader_rig::LeaderSampler;
///
/// let sampler = LeaderSampler::start();
/// sampler.watch(Arc::new(LeadershipState::new("a", Vec::new())));
/// sampler.watch(Arc::new(LeadershipState::new("b", Vec::new())));
/// let samples = sampler.finish().expect("no one leads, so never two");
/// assert!(samples > 0);
/// ```
#[derive(Debug)]
pub struct LeaderSampler {
    limit: usize,
    watched: Arc<Mutex<Vec<Arc<LeadershipState>>>>,
    stop: Arc<AtomicBool>,
    /// Samples taken so far.
    taken: Arc<AtomicU64>,
    thread: JoinHandle<Result<u64, String>>,
}

impl LeaderSampler {
    /// Starts sampling (nothing is watched yet).
    pub fn start() -> Self {
        LeaderSampler::start_with_limit(1)
    }

    /// Like [`start`](Self::start), for a leader group: records the first moment more
    /// than `limit` of the watched states lead at once (sampled as for
    /// [`start`](Self::start)).
    pub fn start_with_limit(limit: usize) -> Self {
        let watched: Arc<Mutex<Vec<Arc<LeadershipState>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicU64::new(0));
        let thread = {
            let (watched, stop, taken) =
                (Arc::clone(&watched), Arc::clone(&stop), Arc::clone(&taken));
            std::thread::spawn(move || sample(&watched, &stop, &taken, limit))
        };
        LeaderSampler {
            limit,
            watched,
            stop,
            taken,
            thread,
        }
    }

    /// How many leaders at once the sampler accepts.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Watches `state` from now on, until [`finish`](Self::finish).
    pub fn watch(&self, state: Arc<LeadershipState>) {
        self.watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(state);
    }

    /// Waits until `more` samples beyond those taken so far are taken, at most `timeout`;
    /// `false` if they were not. For a test that must have the sampler look across an
    /// event (a handover) on a machine too busy to schedule its thread often.
    pub fn wait_for_samples(&self, more: u64, timeout: Duration) -> bool {
        let target = self.taken.load(Ordering::SeqCst).saturating_add(more);
        let give_up = Instant::now() + timeout;
        while self.taken.load(Ordering::SeqCst) < target {
            if Instant::now() >= give_up {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Stops sampling and returns how many samples were taken, or which two nodes led at
    /// once (sampling stops at the first overlap).
    pub fn finish(self) -> Result<u64, String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .unwrap_or_else(|_| Err("the sampler thread panicked".to_owned()))
    }
}

/// Samples the watched states until `stop`, at least once.
fn sample(
    watched: &Mutex<Vec<Arc<LeadershipState>>>,
    stop: &AtomicBool,
    taken: &AtomicU64,
    limit: usize,
) -> Result<u64, String> {
    let mut samples = 0u64;
    loop {
        let states = watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let leading: Vec<&Arc<LeadershipState>> = states.iter().filter(|s| s.is_leader()).collect();
        if leading.len() > limit {
            let still: Vec<&str> = leading
                .iter()
                .filter(|s| s.is_leader())
                .map(|s| s.node_id())
                .collect();
            if still.len() > limit {
                return Err(format!(
                    "{} leaders at once ({}), above the limit of {limit} (after {samples} samples)",
                    still.len(),
                    still.join(", ")
                ));
            }
        }
        samples += 1;
        taken.store(samples, Ordering::SeqCst);
        if stop.load(Ordering::SeqCst) {
            return Ok(samples);
        }
        // Give way to every other runnable thread between samples: a sampler that spins
        // takes a core from the campaigns it watches (on a loaded 2-core machine, enough
        // to starve them into losing terms), while a sleep would sample too seldom there.
        std::thread::yield_now();
    }
}
