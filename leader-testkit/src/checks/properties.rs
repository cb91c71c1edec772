//! Minimum lease, token growth, snapshots, races, names and clocks (guarantees 1, 3, 5, 6
//! and 7, and the name rules of `LockName`).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use leader_core::{
    AcquireOutcome, AsyncLockBackend, ExtendOutcome, LockName, LockStatus, OwnerToken,
    ReleaseOutcome, ReleaseRequest, Renewal,
};

use super::{LONG_LEASE, acquire, between, must_acquire, request, within};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

/// Guarantee 6: release with a minimum lease returns at once, keeps the lock until
/// `acquired_at + min_lease_time`, then frees it.
pub fn min_lease_keeps_the_lock_without_blocking<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("min-lease");
        let min_lease = harness.short_lease();
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        let started = Instant::now();
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, min_lease))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        assert!(
            started.elapsed() < min_lease,
            "release must not park the caller for the minimum lease"
        );
        match acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await
        {
            AcquireOutcome::Held(Some(holder)) => {
                assert_eq!(holder.fencing_token, lease.fencing_token)
            }
            other => panic!("the lock must stay held until the minimum lease ends, got {other:?}"),
        }
        let state = backend.state(&key).await.unwrap();
        let holder = state.leader().expect("held during the minimum lease");
        let until = holder
            .expires_at
            .duration_since(holder.acquired_at)
            .unwrap();
        assert!(
            until.abs_diff(min_lease) <= Duration::from_millis(5),
            "expiry moved to acquired_at + min lease, got {until:?}"
        );
        harness.expire(min_lease);
        let next = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(next.fencing_token > lease.fencing_token);
    });
}

/// Guarantee 6: a release that keeps the lock for the minimum lease is final: a renewal that
/// arrives after it (one that was in flight when the action ended) neither renews nor
/// stretches the lease, and the same owner cannot re-acquire it.
pub fn min_lease_release_is_final<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("min-lease-final");
        let min_lease = harness.short_lease();
        let owner = OwnerToken::random();
        let lease = must_acquire(&backend, request(&key, owner, "node-a", LONG_LEASE)).await;
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, min_lease))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        let late = backend
            .extend(Renewal::new(&lease, LONG_LEASE))
            .await
            .unwrap();
        assert_eq!(
            late,
            ExtendOutcome::NotHeld,
            "a renewal after the release must not land"
        );
        match acquire(&backend, request(&key, owner, "node-a", LONG_LEASE)).await {
            AcquireOutcome::Held(Some(holder)) => {
                assert_eq!(holder.fencing_token, lease.fencing_token);
                let kept = holder
                    .expires_at
                    .duration_since(holder.acquired_at)
                    .unwrap();
                assert!(
                    kept.abs_diff(min_lease) <= Duration::from_millis(5),
                    "still kept for the minimum lease only, got {kept:?}"
                );
            }
            other => panic!("the released owner must not get the lock back, got {other:?}"),
        }
        harness.expire(min_lease);
        let next = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(next.fencing_token > lease.fencing_token);
    });
}

/// Guarantee 6: a release after the minimum lease has passed frees at once.
pub fn min_lease_already_passed_frees_at_once<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("min-lease-passed");
        let min_lease = harness.short_lease();
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        harness.expire(min_lease);
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, min_lease))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        assert_eq!(
            backend.state(&key).await.unwrap().status(),
            LockStatus::Empty
        );
    });
}

/// Guarantee 3: fencing tokens strictly increase over 100 acquire/release cycles and across expiry.
pub fn tokens_strictly_increase<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("tokens");
        let mut last = 0;
        for cycle in 0..100 {
            let node = if cycle % 2 == 0 { "node-a" } else { "node-b" };
            let lease = must_acquire(
                &backend,
                request(&key, OwnerToken::random(), node, LONG_LEASE),
            )
            .await;
            assert!(
                lease.fencing_token > last,
                "cycle {cycle}: {} !> {last}",
                lease.fencing_token
            );
            last = lease.fencing_token;
            assert_eq!(
                backend
                    .release(ReleaseRequest::new(&lease, Duration::ZERO))
                    .await
                    .unwrap(),
                ReleaseOutcome::Released
            );
        }
        let short = harness.short_lease();
        let expiring = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", short),
        )
        .await;
        assert!(expiring.fencing_token > last);
        harness.expire(short);
        let after = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(
            after.fencing_token > expiring.fencing_token,
            "tokens grow across expiry"
        );
    });
}

/// Guarantee 5: `Empty` for an unknown key, `Occupied` with the holder, never an expired lease.
pub fn state_reports_holder_and_hides_expired<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("state");
        let empty = backend.state(&key).await.unwrap();
        assert_eq!(empty.status(), LockStatus::Empty);
        assert_eq!(empty.lock_name(), key.as_str());
        assert!(empty.leader().is_none());

        let lease_time = harness.short_lease();
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", lease_time),
        )
        .await;
        let state = backend.state(&key).await.unwrap();
        assert_eq!(state.status(), LockStatus::Occupied);
        let leader = state.leader().expect("a leader");
        assert_eq!(leader.leader_id, "node-a");
        assert_eq!(leader.fencing_token, lease.fencing_token);
        let tolerance = Duration::from_millis(5);
        assert!(within(leader.acquired_at, lease.acquired_at, tolerance));
        assert!(within(leader.expires_at, lease.expires_at, tolerance));

        harness.expire(lease_time);
        let expired = backend.state(&key).await.unwrap();
        assert_eq!(
            expired.status(),
            LockStatus::Empty,
            "an expired lease must not be reported"
        );
    });
}

/// Guarantee 1: 16 contenders racing `try_acquire` on one key produce exactly one winner, in each
/// of 200 rounds.
pub fn racing_acquire_has_one_winner<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    let backend = Arc::new(runner.block_on(harness.backend()));
    for round in 0..200 {
        let key = Arc::new(fresh_name("race"));
        let racers = (0..16)
            .map(|i| {
                let backend = Arc::clone(&backend);
                let key = Arc::clone(&key);
                async move {
                    let node = format!("node-{i}");
                    backend
                        .try_acquire(request(&key, OwnerToken::random(), &node, LONG_LEASE))
                        .await
                }
            })
            .collect();
        let outcomes = runner.race(racers);
        let winners = outcomes
            .iter()
            .filter(|o| matches!(o, Ok(AcquireOutcome::Acquired(_))))
            .count();
        let errors: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
        assert!(errors.is_empty(), "round {round}: errors {errors:?}");
        assert_eq!(winners, 1, "round {round}: exactly one winner");
    }
}

/// The name rules of `LockName`: a name of the longest allowed length (255 bytes, or less behind a prefix) and a non-ASCII UTF-8 name work end to end.
pub fn long_and_unicode_names_work<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let unicode = format!("zählung-日本-🚀-{}", fresh_name("u").as_str());
        let prefix = fresh_name("long");
        let long = format!(
            "{}{}",
            prefix.as_str(),
            "x".repeat(harness.max_name_len() - prefix.as_str().len())
        );
        for name in [unicode, long] {
            let key = LockName::new(name).unwrap();
            let lease = must_acquire(
                &backend,
                request(&key, OwnerToken::random(), "node-ü", LONG_LEASE),
            )
            .await;
            let state = backend.state(&key).await.unwrap();
            assert_eq!(state.lock_name(), key.as_str());
            assert_eq!(state.leader().map(|l| l.leader_id.as_str()), Some("node-ü"));
            assert!(matches!(
                acquire(
                    &backend,
                    request(&key, OwnerToken::random(), "b", LONG_LEASE)
                )
                .await,
                AcquireOutcome::Held(_)
            ));
            assert_eq!(
                backend
                    .release(ReleaseRequest::new(&lease, Duration::ZERO))
                    .await
                    .unwrap(),
                ReleaseOutcome::Released
            );
        }
    });
}

/// Guarantee 7: with `use_db_time` the lease's timestamps come from the backend's clock; without,
/// from this node's.
pub fn use_db_time_takes_the_backend_clock<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let tolerance = harness.clock_tolerance();

        let key = fresh_name("db-time");
        let mut req = request(&key, OwnerToken::random(), "node-a", LONG_LEASE);
        req.use_db_time = true;
        // Each time is checked against the clock read just before and just after the call,
        // so a slow round trip on a loaded machine widens the window instead of failing.
        let before = harness.backend_now();
        let lease = must_acquire(&backend, req).await;
        let after = harness.backend_now();
        assert!(
            between(lease.acquired_at, before, after, tolerance),
            "acquired_at {:?} is not the backend's time ({before:?} to {after:?})",
            lease.acquired_at,
        );
        let before = harness.backend_now();
        let extended = backend
            .extend(Renewal::new(&lease, LONG_LEASE).with_db_time(true))
            .await
            .unwrap();
        let after = harness.backend_now();
        let ExtendOutcome::Extended { expires_at } = extended else {
            panic!("extend failed: {extended:?}")
        };
        assert!(
            between(
                expires_at,
                before + LONG_LEASE,
                after + LONG_LEASE,
                tolerance
            ),
            "expires_at {expires_at:?} is not the backend's time plus the lease"
        );

        let key = fresh_name("node-time");
        let before = SystemTime::now();
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        let after = SystemTime::now();
        assert!(
            between(lease.acquired_at, before, after, tolerance),
            "without use_db_time the node's clock is used"
        );
    });
}
