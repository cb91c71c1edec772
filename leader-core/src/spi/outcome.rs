//! The answers a backend gives: [`AcquireOutcome`], [`SlotOutcome`], [`ExtendOutcome`],
//! [`ReleaseOutcome`].

use std::time::SystemTime;

use crate::spi::lease::Lease;
use crate::spi::state::LeaderLease;

/// The answer to `try_acquire`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireOutcome {
    /// The caller holds the lock now.
    Acquired(Lease),
    /// Someone else holds it; the holder, when the backend could tell.
    Held(Option<LeaderLease>),
}

/// The answer to `try_acquire_slot`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotOutcome {
    /// The caller holds `slot` now (slot 0 for a single lock); `lease.key` is its key.
    Acquired {
        /// The slot's number.
        slot: u32,
        /// The lease on it.
        lease: Lease,
    },
    /// Every slot was held; a holder, when the backend could tell.
    Held(Option<LeaderLease>),
}

impl SlotOutcome {
    /// The answer as `try_acquire` gives it, without the slot: for a backend whose
    /// `try_acquire` is its `try_acquire_slot` of one slot.
    pub fn into_acquire(self) -> AcquireOutcome {
        match self {
            SlotOutcome::Acquired { lease, .. } => AcquireOutcome::Acquired(lease),
            SlotOutcome::Held(holder) => AcquireOutcome::Held(holder),
        }
    }

    /// A short label for logs and metrics: `"acquired"` or `"held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SlotOutcome::Acquired { .. } => "acquired",
            SlotOutcome::Held(_) => "held",
        }
    }
}

/// The answer to `extend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtendOutcome {
    /// The lease was renewed; it now runs out at `expires_at` (backend or node clock).
    Extended {
        /// The new expiry.
        expires_at: SystemTime,
    },
    /// The caller's lease is gone (expired, released, or taken by another owner).
    NotHeld,
}

/// The answer to `release`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReleaseOutcome {
    /// The lock was freed (or shortened to `acquired_at + min_lease_time`).
    Released,
    /// The caller did not hold the lock; nothing changed.
    NotHeld,
}

impl AcquireOutcome {
    /// A short label for logs and metrics: `"acquired"` or `"held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AcquireOutcome::Acquired(_) => "acquired",
            AcquireOutcome::Held(_) => "held",
        }
    }
}

impl ExtendOutcome {
    /// A short label for logs and metrics: `"extended"` or `"not_held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExtendOutcome::Extended { .. } => "extended",
            ExtendOutcome::NotHeld => "not_held",
        }
    }
}

impl ReleaseOutcome {
    /// A short label for logs and metrics: `"released"` or `"not_held"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ReleaseOutcome::Released => "released",
            ReleaseOutcome::NotHeld => "not_held",
        }
    }
}
