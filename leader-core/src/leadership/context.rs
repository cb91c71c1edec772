//! [`LeaseContext`]: what a running action can see of its lease.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use event_listener::{Event, Listener};
use parking_lot::Mutex;

use crate::engine::defects::{Defect, planted};
use crate::error::Error;
use crate::spi::lease::Lease;

/// What an action sees of the lease it runs under: the fencing token, the deadline, and
/// whether the lease has been lost.
///
/// The deadline is on this node's monotonic clock, counted from *before* the acquire
/// (or renewal) request was sent, so it never overestimates how long the lease lasts.
/// Past it, or once a renewal finds the lease gone, [`is_lost`](Self::is_lost) is `true`
/// and [`lost`](Self::lost) resolves: stop writing, and pass the fencing token along with
/// every write so the storage can refuse a stale leader.
///
/// Cloning is cheap; clones see the same lease.
#[derive(Debug, Clone)]
pub struct LeaseContext {
    pub(crate) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) lease: Lease,
    /// The name the caller used, when it differs from the key (a tenant prefix, a slot).
    pub(crate) display_name: Option<String>,
    /// The slot of the group this lease holds (0 for a single lock).
    pub(crate) slot: u32,
    pub(crate) deadline: Mutex<Instant>,
    pub(crate) lost: AtomicBool,
    pub(crate) lost_event: Event,
}

impl LeaseContext {
    /// The lock's name as the caller gave it (without a tenant prefix).
    pub fn lock_name(&self) -> &str {
        self.shared
            .display_name
            .as_deref()
            .unwrap_or(self.shared.lease.key.as_str())
    }

    /// The slot of the leader group this lease holds: 0 for a single lock.
    pub fn slot(&self) -> u32 {
        self.shared.slot
    }

    /// This node's id.
    pub fn leader_id(&self) -> &str {
        &self.shared.lease.leader_id
    }

    /// The fencing token of this acquisition: strictly greater than any earlier holder's.
    pub fn fencing_token(&self) -> u64 {
        self.shared.lease.fencing_token
    }

    /// Until when the lease is certainly held (monotonic clock), unless lost earlier: the
    /// send time of the request that won or last renewed it, plus the lease less its last
    /// thousandth (for clocks running at different rates; see the guide's *Clocks*).
    pub fn deadline(&self) -> Instant {
        *self.shared.deadline.lock()
    }

    /// `true` once the lease was found gone, a renewal failed, or the deadline passed.
    pub fn is_lost(&self) -> bool {
        // For the action: it reads this node's clock. The engine decides on the instant
        // its caller read (`is_lost_at`).
        self.is_lost_at(Instant::now())
    }

    /// [`is_lost`](Self::is_lost) at `now`, an instant the engine's caller read.
    pub(crate) fn is_lost_at(&self, now: Instant) -> bool {
        self.shared.lost.load(Ordering::Acquire)
            || (now >= self.deadline() && !planted(Defect::RenewAfterDeadline))
    }

    /// `Err(Error::LeaseLost)` when [`is_lost`](Self::is_lost); handy with `?` inside an action.
    ///
    /// # Errors
    ///
    /// [`Error::LeaseLost`] naming the lock.
    pub fn check(&self) -> Result<(), Error> {
        if self.is_lost() {
            return Err(Error::LeaseLost {
                key: self.shared.lease.key.to_string(),
            });
        }
        Ok(())
    }

    /// Resolves when the lease is lost. With the async elector this includes the deadline
    /// passing; blocking code that does not auto-extend should poll [`is_lost`](Self::is_lost).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future loses nothing.
    pub async fn lost(&self) {
        loop {
            if self.shared.lost.load(Ordering::Acquire) {
                return;
            }
            let listener = self.shared.lost_event.listen();
            if self.shared.lost.load(Ordering::Acquire) {
                return;
            }
            listener.await;
        }
    }

    /// Blocks until the lease is lost (`true`) or `timeout` passes (`false`). A renewal
    /// during the wait moves the deadline on; the wait still lasts the whole `timeout`.
    pub fn wait_lost_timeout(&self, timeout: Duration) -> bool {
        let give_up = Instant::now().checked_add(timeout);
        loop {
            if self.is_lost() {
                return true;
            }
            let listener = self.shared.lost_event.listen();
            if self.is_lost() {
                return true;
            }
            // Wake at the deadline (lost then, unless renewed meanwhile) or at the timeout.
            let wake = match give_up {
                Some(give_up) if Instant::now() >= give_up => return false,
                Some(give_up) => give_up.min(self.deadline()),
                None => self.deadline(),
            };
            listener.wait_deadline(wake);
        }
    }
}
