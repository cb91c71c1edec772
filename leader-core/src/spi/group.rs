//! Group leadership: up to N holders of one name at once, each in a slot of its own.
//!
//! A group is built from the single-lock primitive every backend already keeps atomic: slot
//! 0 of the group `name` is the lock `name` itself, slot `i` (for `i ≥ 1`) is the lock
//! `name#i` (callers' names never contain `#`, [`LockName::DERIVED_SEPARATOR`]). Each slot
//! is an exclusive lock with its own fencing counter, so a group can never have more than N
//! holders, a release frees exactly one slot, and tokens strictly increase per slot, on
//! every backend. An attempt asks for any slot at once
//! ([`LockBackend::try_acquire_slot`](crate::LockBackend::try_acquire_slot)): one script
//! over all the slots on Redis (their keys share the group's cluster hash tag), one
//! `try_acquire` per slot on the backends that keep the default.

use std::fmt;

use rand::Rng;

use crate::error::{Error, OptionsError};
use crate::name::LockName;
use crate::spi::randomness::seeded;
use crate::spi::state::{LeaderLease, LeaderState};

/// The number of slots of a leader group: how many nodes may lead one name at once.
///
/// A group of one slot behaves exactly like a single lock — it *is* the single lock: slot 0
/// of the group `name` is the lock `name`, so a plain elector running `name` takes slot 0.
/// Slot `i ≥ 1` lives under the lock name `name#i`.
///
/// # Examples
///
/// ```
/// use leader_core::{GroupSlots, OptionsError};
///
/// let slots = GroupSlots::new(3)?;
/// assert_eq!(slots.get(), 3);
/// assert!(matches!(GroupSlots::new(0), Err(OptionsError::GroupSlotsOutOfRange { .. })));
/// # Ok::<(), OptionsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupSlots(u32);

impl GroupSlots {
    /// The largest group. An attempt tries every slot: in one round trip on a backend
    /// that does it in one call (Redis), one round trip per slot on the others.
    pub const MAX: u32 = 1024;

    /// One slot: a single lock.
    pub const ONE: GroupSlots = GroupSlots(1);

    /// Validates `slots`: between 1 and [`MAX`](Self::MAX).
    ///
    /// # Errors
    ///
    /// [`OptionsError::GroupSlotsOutOfRange`].
    pub fn new(slots: u32) -> Result<Self, OptionsError> {
        if slots == 0 || slots > Self::MAX {
            return Err(OptionsError::GroupSlotsOutOfRange {
                slots,
                max: Self::MAX,
            });
        }
        Ok(GroupSlots(slots))
    }

    /// The number of slots.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The lock names of the slots of the group `key`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] when a slot's name would be too long.
    pub fn keys(self, key: &LockName) -> Result<GroupKeys, Error> {
        let later = (1..self.0)
            .map(|slot| slot_key(key, slot))
            .collect::<Result<_, _>>()?;
        Ok(GroupKeys {
            group: key.clone(),
            later,
        })
    }
}

/// The lock names of a group's slots: never empty, slot 0 being the group's own name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupKeys {
    group: LockName,
    later: Vec<LockName>,
}

impl GroupKeys {
    /// The group's own name: slot 0, and where waiters for any slot listen.
    pub fn group(&self) -> &LockName {
        &self.group
    }

    /// How many slots.
    pub fn len(&self) -> usize {
        self.later.len() + 1
    }

    /// Always `false`: a group has at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every slot's key, slot 0 first.
    pub fn iter(&self) -> impl Iterator<Item = &LockName> {
        std::iter::once(&self.group).chain(&self.later)
    }

    /// Every slot's name as the caller sees it, slot 0 first: `group_name`, then
    /// `group_name#1`, `group_name#2`... (the names [`GroupState`] gives its slots).
    ///
    /// ```
    /// use leader_core::{GroupSlots, LockName};
    ///
    /// let keys = GroupSlots::new(3)?.keys(&LockName::new("tenant:acme:consumers")?)?;
    /// assert_eq!(keys.slot_names("consumers"), ["consumers", "consumers#1", "consumers#2"]);
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn slot_names(&self, group_name: &str) -> Vec<String> {
        (0..self.len())
            .map(|slot| slot_name(group_name, slot))
            .collect()
    }

    /// The key of `slot`, counted modulo the number of slots.
    pub fn slot(&self, slot: usize) -> &LockName {
        match (slot % self.len()).checked_sub(1) {
            Some(later) => self.later.get(later).unwrap_or(&self.group),
            None => &self.group,
        }
    }
}

/// The name slot `slot` of the group `group_name` shows to the caller.
fn slot_name(group_name: &str, slot: usize) -> String {
    match slot {
        0 => group_name.to_owned(),
        _ => format!("{group_name}#{slot}"),
    }
}

impl fmt::Display for GroupSlots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The lock name of `slot` in the group `key`: `key` itself for slot 0, `key#slot` after.
fn slot_key(key: &LockName, slot: u32) -> Result<LockName, Error> {
    if slot == 0 {
        return Ok(key.clone());
    }
    Ok(key.derive(&slot.to_string())?)
}

/// A random slot of a group of `len` slots (0 for a single lock): where an elector's
/// attempts start, so that candidates spread over the slots instead of all trying slot 0
/// first. Drawn from the thread's generator, or from
/// [`SeededRandomness`](crate::__private::SeededRandomness)'s while one is set.
pub fn random_slot(len: usize) -> usize {
    if len > 1 {
        seeded(|rng| rng.random_range(0..len)).unwrap_or_else(|| rand::random_range(0..len))
    } else {
        0
    }
}

/// The group a slot's lock name belongs to, for slots `≥ 1` (`job#2` → `job`); release
/// notifications of a slot also wake the waiters of its group.
pub(crate) fn group_of_slot(key: &str) -> Option<&str> {
    let (group, slot) = key.rsplit_once('#')?;
    let well_formed = !group.is_empty()
        && !slot.is_empty()
        && !slot.starts_with('0')
        && slot.bytes().all(|b| b.is_ascii_digit());
    well_formed.then_some(group)
}

/// Who holds the slots of a group: a best-effort snapshot, like [`LeaderState`].
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use leader_core::{GroupState, LeaderLease, LeaderState};
///
/// let now = SystemTime::now();
/// let held = LeaderState::occupied("consumers", LeaderLease::new("node-a", now, now + Duration::from_secs(5), 7));
/// let state = GroupState::new("consumers", vec![held, LeaderState::empty("consumers")]);
/// assert_eq!(state.slots(), 2);
/// assert_eq!(state.holders().count(), 1);
/// assert_eq!(state.free_slots(), 1);
/// assert!(!state.is_full());
/// assert_eq!(state.slot(1).map(LeaderState::lock_name), Some("consumers#1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupState {
    group_name: String,
    slots: Vec<LeaderState>,
}

impl GroupState {
    /// A snapshot of the group `group_name` from the state of each slot, slot 0 first;
    /// each slot's state is named as the slot shows to the caller: `group_name`, then
    /// `group_name#1`, `group_name#2`...
    pub fn new(group_name: impl Into<String>, slots: Vec<LeaderState>) -> Self {
        let group_name = group_name.into();
        let slots = slots
            .into_iter()
            .enumerate()
            .map(|(slot, state)| state.with_lock_name(slot_name(&group_name, slot)))
            .collect();
        GroupState { group_name, slots }
    }

    /// The group's name, as the caller gave it.
    pub fn group_name(&self) -> &str {
        &self.group_name
    }

    /// How many slots the group has.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The state of `slot`, if the group has it.
    pub fn slot(&self, slot: u32) -> Option<&LeaderState> {
        self.slots.get(usize::try_from(slot).ok()?)
    }

    /// Every holder: `(slot, lease)`, in slot order.
    pub fn holders(&self) -> impl Iterator<Item = (u32, &LeaderLease)> + '_ {
        (0u32..)
            .zip(&self.slots)
            .filter_map(|(slot, state)| state.leader().map(|lease| (slot, lease)))
    }

    /// How many slots nobody holds.
    pub fn free_slots(&self) -> usize {
        self.slots.len() - self.holders().count()
    }

    /// Whether every slot is held.
    pub fn is_full(&self) -> bool {
        self.free_slots() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_zero_is_the_name_itself_and_later_slots_get_a_suffix() {
        let key = LockName::new("consumers").unwrap();
        let keys = GroupSlots::new(3).unwrap().keys(&key).unwrap();
        let names: Vec<&str> = (0..4).map(|slot| keys.slot(slot).as_str()).collect();
        assert_eq!(
            names,
            ["consumers", "consumers#1", "consumers#2", "consumers"]
        );
        assert_eq!((keys.len(), keys.group()), (3, &key));
        let single = GroupSlots::ONE.keys(&key).unwrap();
        assert_eq!((single.len(), single.slot(1)), (1, &key));
    }

    #[test]
    fn slot_names_that_do_not_fit_are_a_name_error() {
        let key = LockName::new("x".repeat(LockName::MAX_LEN)).unwrap();
        assert!(GroupSlots::ONE.keys(&key).is_ok());
        let err = GroupSlots::new(2).unwrap().keys(&key).unwrap_err();
        assert!(matches!(err, Error::InvalidName(_)), "{err:?}");
    }

    #[test]
    fn only_slot_suffixes_map_back_to_their_group() {
        assert_eq!(group_of_slot("job#2"), Some("job"));
        assert_eq!(group_of_slot("a#b#12"), Some("a#b"));
        for not_a_slot in ["job", "job#", "job#0", "job#01", "#3", "job#x1"] {
            assert_eq!(group_of_slot(not_a_slot), None, "{not_a_slot}");
        }
    }

    #[test]
    fn random_slots_stay_in_the_group() {
        assert_eq!(random_slot(1), 0);
        assert!((0..100).all(|_| random_slot(5) < 5));
    }

    #[test]
    fn slot_counts_are_validated() {
        assert_eq!(GroupSlots::new(1), Ok(GroupSlots::ONE));
        assert!(GroupSlots::new(GroupSlots::MAX).is_ok());
        for bad in [0, GroupSlots::MAX + 1] {
            assert!(matches!(
                GroupSlots::new(bad),
                Err(OptionsError::GroupSlotsOutOfRange { .. })
            ));
        }
    }
}
