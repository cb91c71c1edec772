//! A thread's randomness override: one seeded generator that the owner tokens, the backoff
//! jitter and a group's first slot draw from while a [`SeededRandomness`] guard lives on
//! that thread, so that a simulator running many nodes on one thread replays a run from
//! one seed (issue 52).
//!
//! Without a guard nothing changes: each source keeps its OS-seeded generator (the owner
//! tokens their fork detector). The check costs one read of a thread-local flag: 3 more
//! instructions per `OwnerToken::random` (89 to 92 under callgrind, release build).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::marker::PhantomData;

use rand::SeedableRng;
use rand::rngs::StdRng;

thread_local! {
    /// Whether `GENERATOR` holds a generator: the one read an unseeded draw pays.
    static SEEDED: Cell<bool> = const { Cell::new(false) };
    /// The thread's seeded generator, while a guard lives.
    static GENERATOR: RefCell<Option<StdRng>> = const { RefCell::new(None) };
}

/// Runs `draw` on the thread's seeded generator, or returns `None` when the thread is not
/// seeded (the caller then draws from its own OS-seeded generator).
#[inline]
pub(crate) fn seeded<T>(draw: impl FnOnce(&mut StdRng) -> T) -> Option<T> {
    if !SEEDED.get() {
        return None;
    }
    GENERATOR.with_borrow_mut(|generator| generator.as_mut().map(draw))
}

/// Seeds this thread's randomness while it lives: owner tokens
/// ([`OwnerToken::random`](crate::OwnerToken::random)), backoff jitter
/// ([`Backoff`](crate::__private::Backoff)) and a group's first slot
/// ([`random_slot`](crate::__private::random_slot)) all draw, in call order, from one
/// generator seeded with `seed`. The same seed on a thread that makes the same calls gives
/// the same tokens, delays and slots. Dropping the guard restores what the thread had
/// before: its OS-seeded generators, or an outer guard's generator where guards nest (drop
/// them in reverse order).
///
/// **For simulators and tests only.** Owner tokens from a seeded generator are
/// predictable: any process that knows the seed can forge another's token and extend or
/// release its locks. Never set it in production. It affects only the thread that creates
/// it (the guard is neither `Send` nor `Sync`), and the fork detection of the owner tokens
/// is not consulted while it is set. Only draws made on this thread are seeded: run the
/// simulated nodes on it (a single-threaded executor for async electors), not on a pool.
///
/// The generator is rand's [`StdRng`] (ChaCha12): unlike `SmallRng`, its sequence for a seed
/// is the same on every platform (32- or 64-bit) for a given rand version, so a recorded
/// seed replays anywhere, and its 128-bit tokens are as well spread as the OS-seeded ones.
/// Its extra cost per draw is paid only by seeded threads.
///
/// # Examples
///
/// ```
/// use leader_core::OwnerToken;
/// use leader_core::__private::SeededRandomness;
///
/// let first = {
///     let _seeded = SeededRandomness::new(52);
///     OwnerToken::random()
/// };
/// let _seeded = SeededRandomness::new(52);
/// assert_eq!(OwnerToken::random(), first);
/// ```
#[must_use = "the thread is seeded only while the guard lives"]
pub struct SeededRandomness {
    /// What the thread had before this guard: `None` when it was not seeded.
    previous: Option<StdRng>,
    /// Bound to the thread whose thread-locals it changed.
    _thread: PhantomData<*const ()>,
}

impl SeededRandomness {
    /// Seeds this thread's randomness with `seed` until the guard drops.
    pub fn new(seed: u64) -> Self {
        let previous =
            GENERATOR.with_borrow_mut(|generator| generator.replace(StdRng::seed_from_u64(seed)));
        SEEDED.set(true);
        SeededRandomness {
            previous,
            _thread: PhantomData,
        }
    }
}

impl Drop for SeededRandomness {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SEEDED.set(previous.is_some());
        GENERATOR.set(previous);
    }
}

impl fmt::Debug for SeededRandomness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The generator's state would give its next draws away.
        f.debug_struct("SeededRandomness").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::OwnerToken;
    use crate::engine::retry::Backoff;
    use crate::spi::group::random_slot;

    /// What a thread draws from the three sources, interleaved as an elector would.
    #[derive(Debug, PartialEq)]
    struct Draws {
        tokens: Vec<u128>,
        jitters: Vec<Duration>,
        slots: Vec<usize>,
    }

    fn draw() -> Draws {
        let start = Instant::now();
        let mut backoff = Backoff::starting_at(start, Duration::from_secs(3600));
        let mut draws = Draws {
            tokens: Vec::new(),
            jitters: Vec::new(),
            slots: Vec::new(),
        };
        for _ in 0..8 {
            draws.tokens.push(OwnerToken::random().as_u128());
            draws.jitters.push(backoff.next_delay(start).unwrap());
            draws.slots.push(random_slot(1 << 20));
        }
        draws
    }

    fn seeded_draws(seed: u64) -> Draws {
        let _seeded = SeededRandomness::new(seed);
        draw()
    }

    fn tokens(n: usize) -> Vec<u128> {
        (0..n).map(|_| OwnerToken::random().as_u128()).collect()
    }

    fn seeded_tokens(seed: u64, n: usize) -> Vec<u128> {
        let _seeded = SeededRandomness::new(seed);
        tokens(n)
    }

    #[test]
    fn one_seed_replays_the_tokens_jitters_and_slots() {
        let first = seeded_draws(52);
        assert_eq!(seeded_draws(52), first, "the same seed, the same draws");

        let other = seeded_draws(53);
        assert!(
            other.tokens.iter().all(|t| !first.tokens.contains(t)),
            "another seed, other tokens: {other:?} against {first:?}"
        );
        assert_ne!(other.jitters, first.jitters, "another seed, other jitters");
        assert_ne!(other.slots, first.slots, "another seed, other slots");
    }

    #[test]
    fn once_the_guard_drops_tokens_leave_the_seeded_sequence() {
        let seeded = seeded_tokens(7, 8);
        let after = tokens(8);
        assert!(
            after.iter().all(|t| !seeded.contains(t)),
            "after the guard: {after:x?} against the seeded {seeded:x?}"
        );
        assert_eq!(seeded_tokens(7, 8), seeded, "a new guard starts over");
    }

    #[test]
    fn nested_guards_restore_the_outer_generator() {
        let outer_alone = seeded_tokens(1, 8);
        let inner_alone = seeded_tokens(2, 4);
        let _outer = SeededRandomness::new(1);
        let mut outer = tokens(4);
        {
            let _inner = SeededRandomness::new(2);
            assert_eq!(tokens(4), inner_alone, "the inner seed rules");
        }
        outer.extend(tokens(4));
        assert_eq!(
            outer, outer_alone,
            "the outer sequence goes on where it was"
        );
    }

    #[test]
    fn the_seed_holds_on_its_own_thread_only() {
        let seeded = seeded_tokens(9, 8);
        let _seeded = SeededRandomness::new(9);
        let elsewhere = std::thread::spawn(|| tokens(8)).join().unwrap();
        assert!(
            elsewhere.iter().all(|t| !seeded.contains(t)),
            "another thread drew {elsewhere:x?}, the seeded sequence is {seeded:x?}"
        );
        assert_eq!(tokens(8), seeded, "this thread is still seeded");
    }
}
