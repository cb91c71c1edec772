//! [`Hold`] and [`Reentered`]: a held lock that nested code takes part in.
//!
//! Code that holds a lock often calls code that needs the same lock: a billing run that
//! calls a helper which also posts to the ledger under the ledger's lock. Taking the
//! lock again from the store would wait on itself (or, with a different owner token, be
//! refused until the outer hold ends). Here the nested code takes part in the hold it is
//! handed instead: [`reenter`](Reentered::reenter) borrows it. A nested hold has the
//! lease's fencing token and lost signal, costs no store call, never changes the lease
//! (a nested hold cannot shorten it), and ends with nothing to release: the outermost
//! hold releases the lock, and the borrow checker keeps a nested hold from outliving it.
//!
//! Where the hold cannot be handed down (nested service calls that only share a request
//! id), the electors' reentrant locks count holds by a key the caller chooses: see
//! `ReentrantLocks` in `leader-blocking` and `AsyncReentrantLocks` in `leader-async`.

use crate::leadership::context::LeaseContext;

/// A held lock, as nested code sees it: the lease's [`LeaseContext`] (fencing token,
/// deadline, lost signal). Guards, reentrant guards, nested holds and a campaign's term
/// context are holds; write nested code against `&impl Hold` and hand it whichever the
/// caller has.
///
/// # Examples
///
/// ```
/// use leader_core::Hold;
///
/// // Nested code: it needs the ledger's lock and takes part in the caller's hold.
/// fn post(entry: &str, ledger: &impl Hold) -> String {
///     let nested = ledger.reenter(); // no store call, the same fencing token
///     assert!(nested.depth() > ledger.depth());
///     format!("{entry} fenced by {}", nested.fencing_token())
/// }
///
/// // A campaign's term context is a hold too (so are the electors' guards).
/// fn in_a_term(term: &leader_core::LeaseContext) -> String {
///     post("entry", term)
/// }
/// # let _ = in_a_term;
/// ```
pub trait Hold {
    /// The lease this hold is part of.
    fn context(&self) -> &LeaseContext;

    /// The fencing token of the lease: pass it along with every write.
    fn fencing_token(&self) -> u64 {
        self.context().fencing_token()
    }

    /// `true` once the lease was lost or ran out: stop writing.
    fn is_lost(&self) -> bool {
        self.context().is_lost()
    }

    /// A nested hold borrowed from this one: same lease, no store call; it ends with
    /// nothing to release.
    fn reenter(&self) -> Reentered<'_> {
        Reentered {
            context: self.context(),
            depth: self.depth() + 1,
        }
    }

    /// How deep this hold is nested: 0 for the hold that acquired the lock.
    fn depth(&self) -> u32 {
        0
    }
}

/// A nested hold, borrowed from the hold it re-entered (see [`Hold::reenter`]).
///
/// It has the lease's fencing token and lost signal and costs no store call. Dropping it
/// releases nothing: the lock stays held until the outermost hold ends, and the borrow
/// keeps a nested hold from outliving it.
#[derive(Debug, Clone, Copy)]
pub struct Reentered<'a> {
    context: &'a LeaseContext,
    depth: u32,
}

impl Hold for Reentered<'_> {
    fn context(&self) -> &LeaseContext {
        self.context
    }

    fn depth(&self) -> u32 {
        self.depth
    }
}

impl Hold for LeaseContext {
    fn context(&self) -> &LeaseContext {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, SystemTime};

    use super::*;
    use crate::engine::lease_tracker::LeaseTracker;
    use crate::name::LockName;
    use crate::spi::lease::{Lease, OwnerToken};

    #[test]
    fn nested_holds_share_the_token_and_the_lost_signal_and_count_their_depth() {
        let lease = Lease::new(
            LockName::new("ledger").unwrap(),
            OwnerToken::random(),
            "node-a",
            7,
            SystemTime::UNIX_EPOCH,
            SystemTime::UNIX_EPOCH + Duration::from_secs(30),
        );
        let tracker = LeaseTracker::new(
            lease,
            "ledger",
            Instant::now(),
            Duration::from_secs(30),
            "test",
        );
        let outer = tracker.context();
        let first = outer.reenter();
        let second = first.reenter();
        assert_eq!((outer.depth(), first.depth(), second.depth()), (0, 1, 2));
        assert_eq!(second.fencing_token(), 7);
        assert!(!second.is_lost());
        tracker.mark_lost();
        assert!(first.is_lost() && second.is_lost());
    }
}
