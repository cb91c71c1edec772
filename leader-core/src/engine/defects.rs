//! Planted defects: deliberate bugs in the engine's decisions, switched on per thread by a
//! simulator to show that it catches them (feature `__defects`, for the project's own
//! simulator only; without the feature [`planted`] is a constant `false` and the compiler
//! removes every check).
//!
//! Each defect breaks one rule the engine keeps; `leader-sim` turns it on, runs seeds, and
//! must see its history checker report the violation within a bounded number of seeds.

/// A deliberate bug in one engine decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Defect {
    /// A lease ends only when marked lost, not when its deadline passes; a renewal
    /// answered after the deadline still renews it, and renewals are given a lease's time
    /// instead of the time left before the deadline (rule broken: a lease that ended stays
    /// ended).
    RenewAfterDeadline,
    /// An acquisition answered after its lease's deadline is taken as acquired, and an
    /// action starts on a lease past its deadline (rule broken: no action on a late lease).
    ActionOnLateLease,
    /// A lease's deadline is its whole lease, with no allowance for clocks running at
    /// different rates (rule broken: a node lets go before the store frees the lock).
    NoClockRateAllowance,
    /// An orphan (an acquisition answered late or not at all, a release that failed) has
    /// nothing to release (rule broken: what nobody holds is freed at once, not left to
    /// run out its lease).
    DropOrphanRelease,
    /// What failed attempts of a term's owner token took on other slots of its group is
    /// not released (rule broken: a leader holds one slot).
    ForgetStraySlot,
    /// A campaign term's renewal counts the renew deadline from its answer rather than
    /// from when it was sent (rule broken: a lease runs from its request, the latest
    /// instant the store can have granted it).
    TermRenewedFromAnswer,
    /// The scheduler's plan ignores the tick its job's record says was claimed already,
    /// and claims a tick at or before it again (rule broken: each tick of a job runs at
    /// most once, fleet-wide). Planted in `leader-schedule`'s plan (its feature
    /// `__defects`), not in this crate's engine.
    ClaimTickTwice,
}

impl Defect {
    /// Every defect.
    pub const ALL: [Defect; 7] = [
        Defect::RenewAfterDeadline,
        Defect::ActionOnLateLease,
        Defect::NoClockRateAllowance,
        Defect::DropOrphanRelease,
        Defect::ForgetStraySlot,
        Defect::TermRenewedFromAnswer,
        Defect::ClaimTickTwice,
    ];

    /// Its name, as a simulator prints it.
    pub fn name(self) -> &'static str {
        match self {
            Defect::RenewAfterDeadline => "renew-after-deadline",
            Defect::ActionOnLateLease => "action-on-late-lease",
            Defect::NoClockRateAllowance => "no-clock-rate-allowance",
            Defect::DropOrphanRelease => "drop-orphan-release",
            Defect::ForgetStraySlot => "forget-stray-slot",
            Defect::TermRenewedFromAnswer => "term-renewed-from-answer",
            Defect::ClaimTickTwice => "claim-tick-twice",
        }
    }

    #[cfg(feature = "__defects")]
    fn bit(self) -> u32 {
        match self {
            Defect::RenewAfterDeadline => 1,
            Defect::ActionOnLateLease => 2,
            Defect::NoClockRateAllowance => 4,
            Defect::DropOrphanRelease => 8,
            Defect::ForgetStraySlot => 32,
            Defect::TermRenewedFromAnswer => 16,
            Defect::ClaimTickTwice => 64,
        }
    }
}

#[cfg(feature = "__defects")]
thread_local! {
    static PLANTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Plants `defects` in the engine on this thread until the returned guard drops (feature
/// `__defects`; without it nothing is planted and the guard does nothing).
pub fn plant(defects: &[Defect]) -> Planted {
    #[cfg(feature = "__defects")]
    {
        let bits = defects.iter().fold(0, |bits, d| bits | d.bit());
        let before = PLANTED.with(|p| p.replace(bits));
        Planted { before }
    }
    #[cfg(not(feature = "__defects"))]
    {
        let _ = defects;
        Planted { before: 0 }
    }
}

/// Keeps defects planted on this thread; dropping it restores what was planted before.
#[derive(Debug)]
#[must_use = "the defects are planted only while the guard lives"]
pub struct Planted {
    before: u32,
}

impl Drop for Planted {
    fn drop(&mut self) {
        #[cfg(feature = "__defects")]
        PLANTED.with(|p| p.set(self.before));
        #[cfg(not(feature = "__defects"))]
        let _ = self.before;
    }
}

/// Whether `defect` is planted on this thread: for the crates beside the engine that
/// plant a defect in their own decisions (`leader-schedule`'s, behind its own
/// `__defects` feature). Without this crate's feature `__defects`, a constant `false`.
#[inline]
pub fn is_planted(defect: Defect) -> bool {
    planted(defect)
}

/// Whether `defect` is planted on this thread.
#[inline]
pub(crate) fn planted(defect: Defect) -> bool {
    #[cfg(feature = "__defects")]
    {
        PLANTED.with(|p| p.get() & defect.bit() != 0)
    }
    #[cfg(not(feature = "__defects"))]
    {
        let _ = defect;
        false
    }
}

#[cfg(all(test, feature = "__defects"))]
mod tests {
    use super::*;

    #[test]
    fn a_defect_is_planted_only_on_its_thread_and_while_its_guard_lives() {
        assert!(!planted(Defect::ActionOnLateLease));
        {
            let _planted = plant(&[Defect::ActionOnLateLease]);
            assert!(planted(Defect::ActionOnLateLease));
            assert!(!planted(Defect::RenewAfterDeadline));
            let other = std::thread::spawn(|| planted(Defect::ActionOnLateLease));
            assert!(!other.join().unwrap());
        }
        assert!(!planted(Defect::ActionOnLateLease));
    }
}
