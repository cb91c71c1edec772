//! The contract checks, one public function per guarantee (numbers refer to DESIGN §4).
//!
//! Each check makes a fresh random lock name, drives the backend through a [`Runner`] and
//! panics with a message naming the broken guarantee.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, ExtendOutcome, Lease, LockName, LockStatus,
    OwnerToken, ReleaseOutcome,
};

use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

const LONG_LEASE: Duration = Duration::from_secs(30);

fn request<'a>(
    key: &'a LockName,
    owner: OwnerToken,
    node: &'a str,
    lease: Duration,
) -> AcquireRequest<'a> {
    AcquireRequest {
        key,
        owner,
        leader_id: node,
        lease_time: lease,
        use_db_time: false,
    }
}

async fn acquire<B: AsyncLockBackend>(backend: &B, request: AcquireRequest<'_>) -> AcquireOutcome {
    backend
        .try_acquire(request)
        .await
        .unwrap_or_else(|err| panic!("try_acquire failed: {err}"))
}

async fn must_acquire<B: AsyncLockBackend>(backend: &B, request: AcquireRequest<'_>) -> Lease {
    match acquire(backend, request).await {
        AcquireOutcome::Acquired(lease) => lease,
        AcquireOutcome::Held(holder) => {
            panic!("expected to acquire {}, held by {holder:?}", request.key)
        }
    }
}

fn within(actual: SystemTime, expected: SystemTime, tolerance: Duration) -> bool {
    let diff = match actual.duration_since(expected) {
        Ok(d) => d,
        Err(e) => e.duration(),
    };
    diff <= tolerance
}

/// §4.1: a free lock is acquired; the lease names the key, the node, a positive fencing
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

/// §4.1, §4.4: a second owner is told the lock is held, and by whom.
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

/// §4.2, §4.3: the same owner token re-acquires (a renewal): same fencing token, later expiry.
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

/// §4.1, §4.3: after expiry another owner acquires, with a larger fencing token.
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
        harness.advance(lease + lease / 2);
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

/// §4.2: the owner's extend moves the expiry, and the lock outlives its first lease.
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
        let outcome = backend.extend(&lease, lease_time * 4, false).await.unwrap();
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

/// §4.2: extend by another owner, or after expiry, is `NotHeld` and changes nothing.
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
            backend.extend(&stranger, LONG_LEASE, false).await.unwrap(),
            ExtendOutcome::NotHeld
        );
        harness.advance(lease_time + lease_time / 2);
        assert_eq!(
            backend.extend(&lease, LONG_LEASE, false).await.unwrap(),
            ExtendOutcome::NotHeld
        );
        assert_eq!(
            backend.state(&key).await.unwrap().status(),
            LockStatus::Empty,
            "a late extend must not revive the lock"
        );
    });
}

/// §4.2, §4.5: the owner's release frees the lock at once.
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
            backend.release(&lease, Duration::ZERO).await.unwrap(),
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
            backend.release(&lease, Duration::ZERO).await.unwrap(),
            ReleaseOutcome::NotHeld,
            "a stale release must not free the new holder's lock"
        );
    });
}

/// §4.2: a release by another owner is `NotHeld` and changes nothing.
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
            backend.release(&stranger, Duration::ZERO).await.unwrap(),
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

/// §4.6: release with a minimum lease returns at once, keeps the lock until
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
            backend.release(&lease, min_lease).await.unwrap(),
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
        harness.advance(min_lease + min_lease / 2);
        let next = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(next.fencing_token > lease.fencing_token);
    });
}

/// §4.6: a release after the minimum lease has passed frees at once.
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
        harness.advance(min_lease + min_lease / 2);
        assert_eq!(
            backend.release(&lease, min_lease).await.unwrap(),
            ReleaseOutcome::Released
        );
        assert_eq!(
            backend.state(&key).await.unwrap().status(),
            LockStatus::Empty
        );
    });
}

/// §4.3: fencing tokens strictly increase over 100 acquire/release cycles and across expiry.
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
                backend.release(&lease, Duration::ZERO).await.unwrap(),
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
        harness.advance(short + short / 2);
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

/// §4 (state): `Empty` for an unknown key, `Occupied` with the holder, never an expired lease.
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

        harness.advance(lease_time + lease_time / 2);
        let expired = backend.state(&key).await.unwrap();
        assert_eq!(
            expired.status(),
            LockStatus::Empty,
            "an expired lease must not be reported"
        );
    });
}

/// §4.1: 16 contenders racing `try_acquire` on one key produce exactly one winner, in each
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

/// §3: a name of exactly 255 bytes and a non-ASCII UTF-8 name work end to end.
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
            "x".repeat(LockName::MAX_LEN - prefix.as_str().len())
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
                backend.release(&lease, Duration::ZERO).await.unwrap(),
                ReleaseOutcome::Released
            );
        }
    });
}

/// §4.8: with `use_db_time` the lease's timestamps come from the backend's clock; without,
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
        let lease = must_acquire(&backend, req).await;
        let server_now = harness.backend_now();
        assert!(
            within(lease.acquired_at, server_now, tolerance),
            "acquired_at {:?} is not the backend's time {:?}",
            lease.acquired_at,
            server_now
        );
        let extended = backend.extend(&lease, LONG_LEASE, true).await.unwrap();
        let ExtendOutcome::Extended { expires_at } = extended else {
            panic!("extend failed: {extended:?}")
        };
        assert!(within(
            expires_at,
            harness.backend_now() + LONG_LEASE,
            tolerance
        ));

        let key = fresh_name("node-time");
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        assert!(
            within(lease.acquired_at, SystemTime::now(), tolerance),
            "without use_db_time the node's clock is used"
        );
    });
}
