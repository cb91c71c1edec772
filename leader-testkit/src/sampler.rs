//! [`LeaderSampler`]: watches campaigns from a thread and catches two leaders at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use leader_core::__private::LeadershipState;

/// Watches every campaign state it is given, from its own thread, and records the first
/// moment two of them lead at once.
///
/// States are only ever added: a leader that resigns or is abandoned stays watched through
/// the handover, which is where an overlap would show (its term must end before the lock
/// is released to the next one).
///
/// Each sample reads `x`, then `y`, then `x` again, so a pair reported as both leading
/// really overlapped at the moment `y` was read.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use leader_core::__private::LeadershipState;
/// use leader_testkit::LeaderSampler;
///
/// let sampler = LeaderSampler::start();
/// sampler.watch(Arc::new(LeadershipState::new("a", Vec::new())));
/// sampler.watch(Arc::new(LeadershipState::new("b", Vec::new())));
/// let samples = sampler.finish().expect("no one leads, so never two");
/// assert!(samples > 0);
/// ```
#[derive(Debug)]
pub struct LeaderSampler {
    watched: Arc<Mutex<Vec<Arc<LeadershipState>>>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64, String>>,
}

impl LeaderSampler {
    /// Starts sampling (nothing is watched yet).
    pub fn start() -> Self {
        let watched: Arc<Mutex<Vec<Arc<LeadershipState>>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (watched, stop) = (Arc::clone(&watched), Arc::clone(&stop));
            std::thread::spawn(move || sample(&watched, &stop))
        };
        LeaderSampler {
            watched,
            stop,
            thread,
        }
    }

    /// Watches `state` from now on, until [`finish`](Self::finish).
    pub fn watch(&self, state: Arc<LeadershipState>) {
        self.watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(state);
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

/// Samples every pair of watched states until `stop`, at least once.
fn sample(watched: &Mutex<Vec<Arc<LeadershipState>>>, stop: &AtomicBool) -> Result<u64, String> {
    let mut samples = 0u64;
    loop {
        let states = watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (i, x) in states.iter().enumerate() {
            for y in &states[i + 1..] {
                if x.is_leader() && y.is_leader() && x.is_leader() {
                    return Err(format!(
                        "two leaders at once: {} and {} (after {samples} samples)",
                        x.node_id(),
                        y.node_id()
                    ));
                }
            }
        }
        samples += 1;
        if stop.load(Ordering::SeqCst) {
            return Ok(samples);
        }
    }
}
