//! Acquire, extend and release: mutual exclusion, ownership and fencing (guarantees 1-3).

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AsyncLockBackend, ExtendOutcome, LockStatus, OwnerToken, ReleaseOutcome,
    ReleaseRequest, Renewal,
};

use super::{LONG_LEASE, acquire, must_acquire, request, within};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

/// Guarantee 1: a free lock is acquired; the lease names the key, the node, a positive fencing
/// token, and lasts `lease_time`.
pub fn acquire_free_lock<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("acquire-free");
        let owner = OwnerToken::random();
        let lease = must_acquire(&backend, request(&key, owner, "node-a", LONG_LEASE)).await;
        assert_eq!(lease.key, key);
        assert_eq!(lease.owner, owner);
        assert_eq!(lease.leader_id, "node-a");
        assert!(lease.fencing_token > 0, "fencing tokens start above zero");
        let length = lease.expires_at.duration_since(lease.acquired_at).unwrap();
        assert!(
            length.abs_diff(LONG_LEASE) <= Duration::from_millis(5),
            "lease length {length:?} != {LONG_LEASE:?}"
        );
    });
}

/// Guarantees 1, 4: a second owner is told the lock is held, and by whom.
pub fn second_owner_sees_the_holder<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("held");
        let first = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        match acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await
        {
            AcquireOutcome::Held(Some(holder)) => {
                assert_eq!(holder.leader_id, "node-a");
                assert_eq!(holder.fencing_token, first.fencing_token);
                assert!(within(
                    holder.expires_at,
                    first.expires_at,
                    Duration::from_millis(5)
                ));
            }
            other => panic!("second owner must see the lock held by node-a, got {other:?}"),
        }
    });
}

/// Guarantees 2, 3: the same owner token re-acquires (a renewal): same fencing token, later expiry.
pub fn same_owner_reacquire_keeps_the_token<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("reacquire");
        let owner = OwnerToken::random();
        let first = must_acquire(&backend, request(&key, owner, "node-a", LONG_LEASE)).await;
        harness.advance(Duration::from_millis(20));
        let again = must_acquire(&backend, request(&key, owner, "node-a", LONG_LEASE)).await;
        assert_eq!(
            again.fencing_token, first.fencing_token,
            "a renewal keeps the token"
        );
        assert!(
            again.expires_at >= first.expires_at,
            "a renewal does not shorten the lease"
        );
    });
}

/// Guarantees 1, 3: after expiry another owner acquires, with a larger fencing token.
pub fn acquire_after_expiry_gets_a_larger_token<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("expiry");
        let lease = harness.short_lease();
        let first = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", lease),
        )
        .await;
        harness.expire(lease);
        let second = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(
            second.fencing_token > first.fencing_token,
            "{} !> {}",
            second.fencing_token,
            first.fencing_token
        );
    });
}

/// Guarantee 2: the owner's extend moves the expiry, and the lock outlives its first lease.
pub fn extend_by_owner_moves_expiry<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("extend");
        let lease_time = harness.short_lease();
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", lease_time),
        )
        .await;
        harness.advance(lease_time / 2);
        let outcome = backend
            .extend(Renewal::new(&lease, lease_time * 4))
            .await
            .unwrap();
        let ExtendOutcome::Extended { expires_at } = outcome else {
            panic!("the owner's extend must succeed, got {outcome:?}");
        };
        assert!(expires_at > lease.expires_at);
        harness.advance(lease_time);
        match acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", lease_time),
        )
        .await
        {
            AcquireOutcome::Held(_) => {}
            other => {
                panic!("an extended lock must still be held past its first lease, got {other:?}")
            }
        }
        assert_eq!(
            backend
                .state(&key)
                .await
                .unwrap()
                .leader()
                .map(|l| l.fencing_token),
            Some(lease.fencing_token)
        );
    });
}

/// Guarantee 2: extend by another owner, or after expiry, is `NotHeld` and changes nothing.
pub fn extend_by_non_owner_or_after_expiry_is_not_held<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("extend-other");
        let lease_time = harness.short_lease();
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", lease_time),
        )
        .await;
        let mut stranger = lease.clone();
        stranger.owner = OwnerToken::random();
        assert_eq!(
            backend
                .extend(Renewal::new(&stranger, LONG_LEASE))
                .await
                .unwrap(),
            ExtendOutcome::NotHeld
        );
        harness.expire(lease_time);
        assert_eq!(
            backend
                .extend(Renewal::new(&lease, LONG_LEASE))
                .await
                .unwrap(),
            ExtendOutcome::NotHeld
        );
        assert_eq!(
            backend.state(&key).await.unwrap().status(),
            LockStatus::Empty,
            "a late extend must not revive the lock"
        );
    });
}

/// Guarantee 2: the owner's release frees the lock at once.
pub fn release_by_owner_frees<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("release");
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        assert_eq!(
            backend.state(&key).await.unwrap().status(),
            LockStatus::Empty
        );
        let next = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(next.fencing_token > lease.fencing_token);
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::NotHeld,
            "a stale release must not free the new holder's lock"
        );
    });
}

/// Guarantee 2: a release by another owner is `NotHeld` and changes nothing.
pub fn release_by_non_owner_changes_nothing<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("release-other");
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        let mut stranger = lease.clone();
        stranger.owner = OwnerToken::random();
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&stranger, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::NotHeld
        );
        let state = backend.state(&key).await.unwrap();
        assert_eq!(
            state
                .leader()
                .map(|l| (l.leader_id.as_str(), l.fencing_token)),
            Some(("node-a", lease.fencing_token))
        );
    });
}

/// Guarantee 2 for many leases at once: `extend_batch` answers each renewal in order as `extend`
/// would — the owner's lease renewed (and held past its first lease), a released one and
/// one asked for with another owner's token not held, and changes nothing of the latter.
pub fn extend_batch_renews_each_lease_as_extend_would<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let lease_time = harness.short_lease();
        let mut leases = Vec::new();
        for n in 0..4 {
            let key = fresh_name(&format!("extend-batch-{n}"));
            leases.push(must_acquire(&backend, request(&key, OwnerToken::random(), "node-a", lease_time)).await);
        }
        let released = backend.release(ReleaseRequest::new(&leases[1], Duration::ZERO)).await.unwrap();
        assert_eq!(released, ReleaseOutcome::Released);
        let mut stranger = leases[2].clone();
        stranger.owner = OwnerToken::random();
        // No wait before the renewals: on a real server, four acquires and a release under
        // load can take a good part of a short lease, and a renewal that comes after a
        // lease ran out is rightly refused. The wait after them is what shows the renewed
        // leases outlive their first lease (and the stranger's does not).
        let batch = [&leases[0], &leases[1], &stranger, &leases[3]]
            .map(|lease| Renewal::new(lease, lease_time * 4));
        let answers = backend.extend_batch(&batch).await;
        assert_eq!(answers.len(), 4, "{answers:?}");
        let renewed = |i: usize| matches!(answers[i], Ok(ExtendOutcome::Extended { expires_at }) if expires_at > leases[i].expires_at);
        assert!(renewed(0) && renewed(3), "the owners' leases: {answers:?}");
        assert!(matches!(answers[1], Ok(ExtendOutcome::NotHeld)), "released: {answers:?}");
        assert!(matches!(answers[2], Ok(ExtendOutcome::NotHeld)), "another owner: {answers:?}");
        assert!(backend.extend_batch(&[]).await.is_empty());
        harness.advance(lease_time);
        for (i, held) in [(0, true), (2, false), (3, true)] {
            let state = backend.state(&leases[i].key).await.unwrap();
            assert_eq!(state.leader().is_some(), held, "lease {i}: {state:?}");
        }
    });
}

/// Guarantees 1-3 for many locks at once: `try_acquire_batch` answers each request in order as
/// `try_acquire` would — a free lock acquired with a larger token than its last owner's, a
/// held one reported with its holder, the owner's own lock re-acquired with its token
/// kept — and two requests for one free key in one batch give one winner.
pub fn try_acquire_batch_answers_each_request_as_try_acquire_would<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let keys: Vec<_> = (0..4)
            .map(|n| fresh_name(&format!("acquire-batch-{n}")))
            .collect();
        let earlier = must_acquire(
            &backend,
            request(&keys[0], OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        backend
            .release(ReleaseRequest::new(&earlier, Duration::ZERO))
            .await
            .unwrap();
        let other = must_acquire(
            &backend,
            request(&keys[1], OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        let mine = OwnerToken::random();
        let own = must_acquire(&backend, request(&keys[2], mine, "node-a", LONG_LEASE)).await;

        let batch = [
            request(&keys[0], OwnerToken::random(), "node-a", LONG_LEASE),
            request(&keys[1], OwnerToken::random(), "node-a", LONG_LEASE),
            request(&keys[2], mine, "node-a", LONG_LEASE),
            request(&keys[3], OwnerToken::random(), "node-a", LONG_LEASE),
            request(&keys[3], OwnerToken::random(), "node-c", LONG_LEASE),
        ];
        let answers = backend.try_acquire_batch(&batch).await;
        assert_eq!(answers.len(), batch.len(), "{answers:?}");
        match &answers[0] {
            Ok(AcquireOutcome::Acquired(lease)) => {
                assert_eq!((&lease.key, lease.owner), (&keys[0], batch[0].owner));
                assert!(
                    lease.fencing_token > earlier.fencing_token,
                    "{lease:?} after {earlier:?}"
                );
            }
            other => panic!("a free lock: {other:?}"),
        }
        match &answers[1] {
            Ok(AcquireOutcome::Held(Some(holder))) => {
                assert_eq!(
                    (holder.leader_id.as_str(), holder.fencing_token),
                    ("node-b", other.fencing_token)
                );
            }
            other => panic!("another owner's lock: {other:?}"),
        }
        match &answers[2] {
            Ok(AcquireOutcome::Acquired(lease)) => {
                assert_eq!(lease.fencing_token, own.fencing_token)
            }
            other => panic!("the owner's own lock: {other:?}"),
        }
        let winners: Vec<_> = answers[3..]
            .iter()
            .filter_map(|answer| match answer {
                Ok(AcquireOutcome::Acquired(lease)) => Some(lease.leader_id.clone()),
                Ok(_) => None,
                Err(err) => panic!("one key twice: {err}"),
            })
            .collect();
        assert_eq!(winners, ["node-a"], "one key twice in a batch: {answers:?}");
        assert!(backend.try_acquire_batch(&[]).await.is_empty());
        let state = backend.state(&keys[1]).await.unwrap();
        assert_eq!(state.leader().map(|l| l.leader_id.as_str()), Some("node-b"));
    });
}

/// Guarantees 2, 6 for many leases at once: `release_batch` answers each release in order as
/// `release` would — the owner's lock freed, another owner's untouched (`NotHeld`), one
/// kept for its minimum lease — and an empty batch is empty.
pub fn release_batch_answers_each_release_as_release_would<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let mut leases = Vec::new();
        for n in 0..3 {
            let key = fresh_name(&format!("release-batch-{n}"));
            leases.push(
                must_acquire(
                    &backend,
                    request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
                )
                .await,
            );
        }
        let mut stranger = leases[1].clone();
        stranger.owner = OwnerToken::random();
        let batch = [
            ReleaseRequest::new(&leases[0], Duration::ZERO),
            ReleaseRequest::new(&stranger, Duration::ZERO),
            ReleaseRequest::new(&leases[2], LONG_LEASE / 2),
        ];
        let answers = backend.release_batch(&batch).await;
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert!(
            matches!(answers[0], Ok(ReleaseOutcome::Released)),
            "{answers:?}"
        );
        assert!(
            matches!(answers[1], Ok(ReleaseOutcome::NotHeld)),
            "{answers:?}"
        );
        assert!(
            matches!(answers[2], Ok(ReleaseOutcome::Released)),
            "{answers:?}"
        );
        assert!(backend.release_batch(&[]).await.is_empty());
        for (i, held) in [(0, false), (1, true), (2, true)] {
            let state = backend.state(&leases[i].key).await.unwrap();
            assert_eq!(state.leader().is_some(), held, "lease {i}: {state:?}");
        }
        let taken = acquire(
            &backend,
            request(&leases[2].key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(
            matches!(taken, AcquireOutcome::Held(_)),
            "kept for its minimum lease: {taken:?}"
        );
    });
}
