//! How late a signal came after a deadline, beside how late the machine itself was.
//!
//! A test that checks a lease's loss is signalled "at its deadline" measures two things at
//! once: the library's delay (what the test is about) and the host's (a thread not run
//! for a while because the VM was descheduled or every core was busy). On a loaded CI
//! machine the second alone can pass any fixed bound. A [`DeadlineWitness`] is a plain
//! thread parked until the same deadline; the lateness it saw on waking is the host's, and
//! [`Lateness::beyond_host`] is what is left for the library.

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A thread parked until a deadline, noting when it woke. Start it before the deadline.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use leader_rig::DeadlineWitness;
///
/// let deadline = Instant::now() + Duration::from_millis(20);
/// let witness = DeadlineWitness::start(deadline);
/// std::thread::sleep(Duration::from_millis(25));
/// let lateness = witness.lateness(Instant::now());
/// assert!(lateness.signal >= Duration::from_millis(5));
/// assert!(lateness.beyond_host <= lateness.signal);
/// ```
#[derive(Debug)]
pub struct DeadlineWitness {
    deadline: Instant,
    woke: mpsc::Receiver<Instant>,
}

/// How late a signal was after its deadline, and how much of that the host explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lateness {
    /// From the deadline to the signal (zero for a signal before the deadline).
    pub signal: Duration,
    /// From the deadline to when the witness thread woke.
    pub host: Duration,
    /// From the later of the deadline and the witness's waking to the signal: the delay
    /// the host does not explain.
    pub beyond_host: Duration,
}

impl DeadlineWitness {
    /// Starts the witness thread for `deadline`.
    ///
    /// # Panics
    ///
    /// When no thread can be started (a test helper: the panic is the test's failure).
    pub fn start(deadline: Instant) -> Self {
        let (tx, woke) = mpsc::channel();
        std::thread::Builder::new()
            .name("deadline-witness".into())
            .spawn(move || {
                let left = deadline.saturating_duration_since(Instant::now());
                std::thread::sleep(left);
                let _ = tx.send(Instant::now());
            })
            .unwrap_or_else(|err| panic!("could not start the witness thread: {err}"));
        DeadlineWitness { deadline, woke }
    }

    /// Checks a signal seen at `signalled` came no earlier than the deadline and at most
    /// `bound` after it beyond the host's own lateness; returns the lateness, for a test to
    /// print.
    ///
    /// # Panics
    ///
    /// When it came early or late, naming `what` and both latenesses.
    #[track_caller]
    pub fn assert_on_time(self, signalled: Instant, bound: Duration, what: &str) -> Lateness {
        assert!(signalled >= self.deadline, "{what} before the deadline");
        let late = self.lateness(signalled);
        assert!(
            late.beyond_host <= bound,
            "{what} {:?} after the deadline, a timer thread woke {:?} after it (bound: {bound:?} beyond it)",
            late.signal,
            late.host
        );
        late
    }

    /// The lateness of a signal seen at `signalled`: waits for the witness to wake if it
    /// has not yet.
    ///
    /// # Panics
    ///
    /// When the witness thread died without waking.
    pub fn lateness(self, signalled: Instant) -> Lateness {
        let woke = self
            .woke
            .recv()
            .unwrap_or_else(|_| panic!("the witness thread ended without waking"));
        let host_at = woke.max(self.deadline);
        Lateness {
            signal: signalled.saturating_duration_since(self.deadline),
            host: woke.saturating_duration_since(self.deadline),
            beyond_host: signalled.saturating_duration_since(host_at),
        }
    }
}
