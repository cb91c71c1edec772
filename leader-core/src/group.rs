//! Group leadership: up to N holders of one name at once, each in a slot of its own.
//!
//! A group is built from the single-lock primitive every backend already keeps atomic: slot
//! 0 of the group `name` is the lock `name` itself, slot `i` (for `i ≥ 1`) is the lock
//! `name#i`. Each slot is an exclusive lock with its own fencing counter, so a group can
//! never have more than N holders, a release frees exactly one slot, and tokens strictly
//! increase per slot, on every backend, with nothing new in the backends.

use std::fmt;

use crate::error::{Error, OptionsError};
use crate::name::LockName;
use crate::state::{LeaderLease, LeaderState};

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
    /// The largest group: a full group is scanned slot by slot, one round trip each.
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
    /// The keys of a single lock: a group of one slot.
    pub fn single(key: &LockName) -> Self {
        GroupKeys {
            group: key.clone(),
            later: Vec::new(),
        }
    }

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

    /// The key of `slot`, counted modulo the number of slots.
    pub fn slot(&self, slot: usize) -> &LockName {
        match (slot % self.len()).checked_sub(1) {
            Some(later) => self.later.get(later).unwrap_or(&self.group),
            None => &self.group,
        }
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
    Ok(LockName::new(format!("{key}#{slot}"))?)
}

/// Where a pass over a group's slots stands: the slot to try next, and how many slots of
/// the pass were found held. One-off attempts and campaign standbys both walk a group
/// with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotPass {
    slot: usize,
    held: usize,
    len: usize,
}

impl SlotPass {
    /// A pass over `len` slots (at least 1) starting at `slot` (modulo `len`).
    pub fn starting_at(slot: usize, len: usize) -> Self {
        let len = len.max(1);
        SlotPass {
            slot: slot % len,
            held: 0,
            len,
        }
    }

    /// A pass over `len` slots from a random one, so candidates spread over the slots
    /// instead of all trying slot 0 first (slot 0 for a single lock).
    pub fn random(len: usize) -> Self {
        let first = if len > 1 {
            rand::random_range(0..len)
        } else {
            0
        };
        SlotPass::starting_at(first, len)
    }

    /// The slot to try next.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The slot to try next, as results report it.
    pub fn number(&self) -> u32 {
        u32::try_from(self.slot).unwrap_or(u32::MAX)
    }

    /// The slot tried was held: moves on to the next one. `true` while the pass goes on,
    /// `false` once it has found every slot held (the next pass starts where it is).
    pub fn held(&mut self) -> bool {
        self.slot = (self.slot + 1) % self.len;
        self.held += 1;
        if self.held < self.len {
            return true;
        }
        self.held = 0;
        false
    }

    /// Starts the pass over at the current slot (after an attempt that failed).
    pub fn restart(&mut self) {
        self.held = 0;
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
            .map(|(slot, state)| match slot {
                0 => state.with_lock_name(group_name.clone()),
                _ => state.with_lock_name(format!("{group_name}#{slot}")),
            })
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
        assert_eq!(GroupKeys::single(&key).slot(1), &key);
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
    fn a_pass_visits_every_slot_once_then_starts_over_where_it_is() {
        let mut pass = SlotPass::starting_at(4, 3);
        let mut visited = vec![pass.slot()];
        while pass.held() {
            visited.push(pass.slot());
        }
        assert_eq!(visited, [1, 2, 0]);
        assert_eq!(
            pass.number(),
            1,
            "the next pass starts after the last slot tried"
        );
        assert!(pass.held());
        pass.restart();
        assert!(pass.held() && pass.held() && !pass.held());
        assert_eq!(SlotPass::random(1), SlotPass::starting_at(0, 1));
        assert!(SlotPass::random(5).slot() < 5);
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
