//! Leader groups (`try_acquire_slot`): at most N holders, every slot usable, ownership and
//! release per slot, expiry, fencing per slot (guarantees 1-3 for each slot).

use std::collections::BTreeSet;
use std::sync::Arc;

use leader_core::{
    AcquireRequest, AsyncLockBackend, GroupKeys, GroupSlots, LeaderState, Lease, OwnerToken,
    ReleaseOutcome, ReleaseRequest, SlotOutcome, SlotRequest,
};

use super::{LONG_LEASE, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

const SLOTS: u32 = 3;

fn group(check: &str, slots: u32) -> GroupKeys {
    let key = fresh_name(check);
    let slots = GroupSlots::new(slots).unwrap_or_else(|err| panic!("{err}"));
    slots.keys(&key).unwrap_or_else(|err| panic!("{err}"))
}

fn slot_request<'a>(
    keys: &'a GroupKeys,
    first: usize,
    request: AcquireRequest<'a>,
) -> SlotRequest<'a> {
    SlotRequest::group(request, keys, first)
}

async fn try_slot<B: AsyncLockBackend>(backend: &B, request: SlotRequest<'_>) -> SlotOutcome {
    backend
        .try_acquire_slot(request)
        .await
        .unwrap_or_else(|err| panic!("try_acquire_slot failed: {err}"))
}

/// A slot of `keys` for a new owner, tried from `first`: its number and lease.
async fn must_take<B: AsyncLockBackend>(
    backend: &B,
    keys: &GroupKeys,
    first: usize,
    node: &str,
    lease: std::time::Duration,
) -> (u32, Lease) {
    let owner = OwnerToken::random();
    let request = slot_request(keys, first, request(keys.group(), owner, node, lease));
    match try_slot(backend, request).await {
        SlotOutcome::Acquired { slot, lease } => {
            let expected = keys.slot(usize::try_from(slot).unwrap_or(usize::MAX));
            assert_eq!(&lease.key, expected, "slot {slot}'s lease names its key");
            assert_eq!(lease.owner, owner);
            (slot, lease)
        }
        other => panic!(
            "{node} expected a free slot of {}, got {other:?}",
            keys.group()
        ),
    }
}

async fn states<B: AsyncLockBackend>(backend: &B, keys: &GroupKeys) -> Vec<LeaderState> {
    let mut states = Vec::new();
    for slot in 0..keys.len() {
        let state = backend.state(keys.slot(slot)).await;
        states.push(state.unwrap_or_else(|err| panic!("state failed: {err}")));
    }
    states
}

/// Guarantee 1 per slot: N owners get the N slots of a group, each a different one, whatever
/// slot their attempts start from; the next owner finds every slot held and learns a
/// holder.
pub fn group_slots_are_all_usable_and_never_more<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let keys = group("group-all", SLOTS);
        let mut taken = BTreeSet::new();
        let mut nodes = Vec::new();
        for n in 0..SLOTS {
            let node = format!("node-{n}");
            // Every attempt starts at slot 1: the later ones find it held and move on.
            let (slot, lease) = must_take(&backend, &keys, 1, &node, LONG_LEASE).await;
            assert!(taken.insert(slot), "slot {slot} handed out twice");
            assert_eq!(lease.leader_id, node);
            nodes.push(node);
        }
        let full = slot_request(
            &keys,
            0,
            request(keys.group(), OwnerToken::random(), "late", LONG_LEASE),
        );
        match try_slot(&backend, full).await {
            SlotOutcome::Held(Some(holder)) => {
                assert!(nodes.contains(&holder.leader_id), "{holder:?}");
            }
            other => panic!("a full group must be held, got {other:?}"),
        }
        let held = states(&backend, &keys).await;
        assert!(held.iter().all(|s| s.leader().is_some()), "{held:?}");
    });
}

/// Guarantee 2 per slot: the owner's attempt again, from the same slot, renews its own slot and
/// keeps its token; another owner's token extends or releases nothing; the owner's
/// release frees exactly its slot, which the next owner then gets.
pub fn group_release_frees_exactly_one_slot<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let keys = group("group-release", SLOTS);
        let mut leases = Vec::new();
        for n in 0..SLOTS {
            leases.push(must_take(&backend, &keys, 0, &format!("node-{n}"), LONG_LEASE).await);
        }
        let (slot, lease) = leases.swap_remove(1);

        let again = slot_request(
            &keys,
            0,
            request(keys.group(), lease.owner, "node-1", LONG_LEASE),
        );
        match try_slot(&backend, again).await {
            SlotOutcome::Acquired {
                slot: renewed,
                lease: renewal,
            } => {
                assert_eq!(renewed, slot, "the owner's own slot");
                assert_eq!(
                    renewal.fencing_token, lease.fencing_token,
                    "a renewal keeps the token"
                );
            }
            other => panic!("the owner re-acquires its slot, got {other:?}"),
        }

        let mut stranger = lease.clone();
        stranger.owner = OwnerToken::random();
        let released = backend
            .release(ReleaseRequest::new(&stranger, std::time::Duration::ZERO))
            .await;
        assert_eq!(
            released.ok(),
            Some(ReleaseOutcome::NotHeld),
            "another owner's token"
        );

        let released = backend
            .release(ReleaseRequest::new(&lease, std::time::Duration::ZERO))
            .await;
        assert_eq!(released.ok(), Some(ReleaseOutcome::Released));
        let after = states(&backend, &keys).await;
        let free: Vec<usize> = (0..after.len())
            .filter(|s| after[*s].leader().is_none())
            .collect();
        assert_eq!(
            free,
            [usize::try_from(slot).unwrap_or(usize::MAX)],
            "exactly the released slot is free: {after:?}"
        );

        let (next, next_lease) = must_take(&backend, &keys, 0, "node-next", LONG_LEASE).await;
        assert_eq!(next, slot, "the freed slot is the one to take");
        assert!(
            next_lease.fencing_token > lease.fencing_token,
            "fencing per slot"
        );
    });
}

/// Guarantees 1, 3 per slot: slots expire, and the next holder of each slot gets a larger
/// token than that slot's last holder.
pub fn group_slots_expire_and_tokens_grow_per_slot<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let keys = group("group-expiry", 2);
        let lease = harness.short_lease();
        let mut before = [0_u64; 2];
        for n in 0..2 {
            let (slot, taken) = must_take(&backend, &keys, 0, &format!("old-{n}"), lease).await;
            before[usize::try_from(slot).unwrap_or(0)] = taken.fencing_token;
        }
        harness.expire(lease);
        for n in 0..2 {
            let (slot, taken) =
                must_take(&backend, &keys, 1, &format!("new-{n}"), LONG_LEASE).await;
            let old = before[usize::try_from(slot).unwrap_or(0)];
            assert!(
                taken.fencing_token > old,
                "slot {slot}: {} !> {old}",
                taken.fencing_token
            );
        }
    });
}

/// Guarantee 1 per slot: concurrent attempts on a free group of N produce exactly N winners, on
/// N different slots.
pub fn racing_group_attempts_have_n_winners<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    let backend = Arc::new(runner.block_on(harness.backend()));
    for round in 0..50 {
        let keys = Arc::new(group("group-race", SLOTS));
        let racers = (0..8)
            .map(|i| {
                let (backend, keys) = (Arc::clone(&backend), Arc::clone(&keys));
                async move {
                    let node = format!("node-{i}");
                    let request = request(keys.group(), OwnerToken::random(), &node, LONG_LEASE);
                    backend
                        .try_acquire_slot(SlotRequest::group(request, &keys, i))
                        .await
                }
            })
            .collect();
        let outcomes = runner.race(racers);
        let errors: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
        assert!(errors.is_empty(), "round {round}: errors {errors:?}");
        let slots: Vec<u32> = outcomes
            .iter()
            .filter_map(|o| match o {
                Ok(SlotOutcome::Acquired { slot, .. }) => Some(*slot),
                _ => None,
            })
            .collect();
        let distinct: BTreeSet<u32> = slots.iter().copied().collect();
        assert_eq!(
            slots.len(),
            SLOTS as usize,
            "round {round}: {SLOTS} winners, got {slots:?}"
        );
        assert_eq!(
            distinct.len(),
            slots.len(),
            "round {round}: one winner a slot, got {slots:?}"
        );
    }
}
