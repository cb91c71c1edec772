//! Where owner tokens come from: a CSPRNG per thread, reseeded from the OS after a fork.
//!
//! rand's thread-local generator is a copy in a forked child: without a reseed, a pre-fork
//! server (or a library loaded by one) would hand out the same owner tokens in parent and
//! child, which could then extend and release each other's locks. A fork detector
//! (`pthread_atfork`, through the `forkguard` crate) makes the next token after a fork come
//! from a generator reseeded from the OS. The check costs an atomic load, not a system call
//! (a `getpid` per token would cost more than the in-memory lock itself); where the fork
//! handler cannot be registered, the process id is compared instead.
//!
//! A simulator may seed the thread instead (`spi::randomness`); the fork detector is then
//! not asked, and a fork it saw meanwhile still reseeds the next unseeded token.

use std::cell::RefCell;

use rand::{Rng, RngCore};

/// Tells whether the process forked since the last question.
pub(crate) trait ForkDetector {
    /// `true` once after each fork, in the child.
    fn forked(&mut self) -> bool;
}

/// A generator that can take a fresh seed from the OS.
pub(crate) trait Reseed: RngCore {
    /// Reseeds from the OS; `false` when the OS gave no randomness.
    fn reseed_from_os(&mut self) -> bool;
}

/// Owner-token bits from `rng`, reseeded whenever `detector` reports a fork.
#[derive(Debug)]
pub(crate) struct TokenSource<R, D> {
    rng: R,
    detector: D,
    /// Mixed into every token: zero, or the process id when a fork found no fresh seed.
    mix: u128,
}

impl<R: Reseed, D: ForkDetector> TokenSource<R, D> {
    pub(crate) fn new(rng: R, detector: D) -> Self {
        TokenSource {
            rng,
            detector,
            mix: 0,
        }
    }

    /// The next 128 random bits, never shared with the parent of a forked process.
    pub(crate) fn next_token(&mut self) -> u128 {
        if self.detector.forked() {
            self.mix = if self.rng.reseed_from_os() {
                0
            } else {
                // No fresh seed: keep the child's tokens apart from the parent's by mixing
                // the process id into each (read once, at the fork).
                tracing::warn!(
                    "could not reseed the owner-token generator after a fork; mixing in the process id"
                );
                u128::from(std::process::id()) << 96
            };
        }
        self.rng.random::<u128>() ^ self.mix
    }
}

impl Reseed for rand::rngs::ThreadRng {
    fn reseed_from_os(&mut self) -> bool {
        self.reseed().is_ok()
    }
}

/// The fork detector of this platform: a `pthread_atfork` handler where it registers, else
/// the process id (on platforms without `fork`, nothing to detect).
#[derive(Debug)]
pub(crate) enum Forks {
    Handler(forkguard::Guard),
    ProcessId(forkguard::pid::Guard),
}

impl Forks {
    fn new() -> Self {
        match forkguard::Guard::try_new() {
            Ok(guard) => Forks::Handler(guard),
            Err(_) => Forks::ProcessId(forkguard::pid::Guard::default()),
        }
    }
}

impl ForkDetector for Forks {
    fn forked(&mut self) -> bool {
        match self {
            Forks::Handler(guard) => guard.detected_fork(),
            Forks::ProcessId(guard) => guard.detected_fork(),
        }
    }
}

thread_local! {
    static SOURCE: RefCell<TokenSource<rand::rngs::ThreadRng, Forks>> =
        RefCell::new(TokenSource::new(rand::rng(), Forks::new()));
}

/// 128 fresh random bits for an owner token: from the thread's seeded generator while a
/// [`SeededRandomness`](crate::__private::SeededRandomness) guard lives (simulators only),
/// else from the thread's fork-aware source.
pub(crate) fn next_token() -> u128 {
    if let Some(token) = crate::spi::randomness::seeded(|rng| rng.random::<u128>()) {
        return token;
    }
    SOURCE.with(|source| source.borrow_mut().next_token())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    /// A generator whose state a test can copy, as `fork()` copies a process's memory.
    #[derive(Debug, Clone)]
    struct Copyable {
        rng: StdRng,
        reseeds: bool,
    }

    impl RngCore for Copyable {
        fn next_u32(&mut self) -> u32 {
            self.rng.next_u32()
        }
        fn next_u64(&mut self) -> u64 {
            self.rng.next_u64()
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            self.rng.fill_bytes(dest);
        }
    }

    impl Reseed for Copyable {
        fn reseed_from_os(&mut self) -> bool {
            if self.reseeds {
                self.rng = StdRng::from_os_rng();
            }
            self.reseeds
        }
    }

    /// Reports a fork the first time it is asked, as the copy in a child does.
    #[derive(Debug, Clone)]
    struct ForkedOnce(bool);

    impl ForkDetector for ForkedOnce {
        fn forked(&mut self) -> bool {
            std::mem::replace(&mut self.0, false)
        }
    }

    fn tokens<R: Reseed, D: ForkDetector>(source: &mut TokenSource<R, D>) -> Vec<u128> {
        (0..4).map(|_| source.next_token()).collect()
    }

    #[test]
    fn a_forked_child_never_repeats_its_parents_tokens() {
        let state = Copyable {
            rng: StdRng::seed_from_u64(7),
            reseeds: true,
        };
        let mut parent = TokenSource::new(state.clone(), ForkedOnce(false));
        let mut child = TokenSource::new(state.clone(), ForkedOnce(true));
        let (from_parent, from_child) = (tokens(&mut parent), tokens(&mut child));
        assert!(from_child.iter().all(|t| !from_parent.contains(t)));

        // Without the detector the copy repeats the parent's tokens: the hazard itself.
        let mut unguarded = TokenSource::new(state, ForkedOnce(false));
        assert_eq!(tokens(&mut unguarded), from_parent);
    }

    #[test]
    fn without_a_fresh_seed_the_process_id_keeps_the_child_apart() {
        let state = Copyable {
            rng: StdRng::seed_from_u64(7),
            reseeds: false,
        };
        let mut parent = TokenSource::new(state.clone(), ForkedOnce(false));
        let mut child = TokenSource::new(state, ForkedOnce(true));
        let (from_parent, from_child) = (tokens(&mut parent), tokens(&mut child));
        assert!(from_child.iter().all(|t| !from_parent.contains(t)));
    }

    #[test]
    fn the_thread_source_gives_distinct_tokens() {
        let a = next_token();
        let b = next_token();
        assert_ne!(a, b);
        let mut guard = Forks::new();
        assert!(!guard.forked(), "no fork in a test process");
    }
}
