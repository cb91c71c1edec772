//! The operator's calls: `list`, `force_release` and `force_release_if` (the operators' part of the SPI's `# Contract`).

use std::collections::BTreeMap;
use std::time::Duration;

use leader_core::{
    AsyncLockBackend, Backend, ExtendOutcome, ForceReleaseOutcome, ListRequest, LockName,
    LockStatus, OwnerToken, ReleaseOutcome, ReleaseRequest, Renewal,
};

use super::{LONG_LEASE, must_acquire, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

/// How long a woken waiter may take to hear of a force release.
const WAKE_WITHIN: Duration = Duration::from_secs(5);

fn name(text: String) -> LockName {
    LockName::new(text).expect("a valid name")
}

/// `list` pages through exactly the held locks under a prefix: not a released one, not an
/// expired one, not one beside the prefix; each with its holder and fencing token; and a
/// prefix with glob characters (`*`, `?`, `[`) matches them literally.
pub fn list_pages_through_held_locks_under_a_prefix<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let base = fresh_name("list");
        let prefix = format!("{base}:");
        let mut expected = BTreeMap::new();
        for i in 0..5 {
            let key = name(format!("{prefix}{i}"));
            let node = format!("node-{i}");
            let lease = must_acquire(
                &backend,
                request(&key, OwnerToken::random(), &node, LONG_LEASE),
            )
            .await;
            expected.insert(key.to_string(), (node, lease.fencing_token));
        }
        let released = name(format!("{prefix}released"));
        let lease = must_acquire(
            &backend,
            request(&released, OwnerToken::random(), "node-r", LONG_LEASE),
        )
        .await;
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        let short = harness.short_lease();
        let expired = name(format!("{prefix}expired"));
        must_acquire(
            &backend,
            request(&expired, OwnerToken::random(), "node-e", short),
        )
        .await;
        // Beside the prefix: the base name itself does not start with `<base>:`.
        must_acquire(
            &backend,
            request(&base, OwnerToken::random(), "node-x", LONG_LEASE),
        )
        .await;
        harness.expire(short);

        let mut seen = BTreeMap::new();
        let mut list = ListRequest::new(prefix.clone()).with_limit(2);
        let mut pages = 0;
        loop {
            let page = backend.list(&list).await.unwrap();
            pages += 1;
            assert!(
                pages <= 4,
                "five locks in pages of two must end within four pages"
            );
            for state in page.locks {
                assert!(
                    state.lock_name().starts_with(&prefix),
                    "listed `{}` outside the prefix `{prefix}`",
                    state.lock_name()
                );
                assert_eq!(state.status(), LockStatus::Occupied);
                let leader = state.leader().expect("only held locks are listed");
                let entry = (leader.leader_id.clone(), leader.fencing_token);
                seen.insert(state.lock_name().to_owned(), entry);
            }
            match page.next {
                Some(cursor) => list = list.after(cursor),
                None => break,
            }
        }
        assert_eq!(
            seen, expected,
            "the listing must hold exactly the held locks under the prefix"
        );

        let globbed = name(format!("{prefix}a*[b]?"));
        must_acquire(
            &backend,
            request(&globbed, OwnerToken::random(), "node-g", LONG_LEASE),
        )
        .await;
        let literal = backend
            .list(&ListRequest::new(format!("{prefix}a*[")))
            .await
            .unwrap();
        let names: Vec<&str> = literal.locks.iter().map(|s| s.lock_name()).collect();
        assert_eq!(names, [globbed.as_str()], "a prefix matches literally");
        let star = backend
            .list(&ListRequest::new(format!("{prefix}*")))
            .await
            .unwrap();
        assert!(star.locks.is_empty(), "`*` is not a wildcard: {star:?}");
    });
}

/// `force_release` frees a lock whoever holds it and reports that holder; waiters are
/// woken; the holder's renewal and release are `NotHeld`; the fencing token still goes up;
/// a lock kept for its minimum lease is freed too; a free lock is `NotHeld`.
pub fn force_release_frees_whoever_holds<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("force");
        let first = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        let waiter = backend
            .release_events()
            .map(|events| events.listen(key.as_str()));
        match backend.force_release(&key).await.unwrap() {
            ForceReleaseOutcome::Released(holder) => {
                assert_eq!(holder.leader_id, "node-a");
                assert_eq!(holder.fencing_token, first.fencing_token);
            }
            other => panic!("a held lock must be force-released, got {other:?}"),
        }
        if let Some(waiter) = waiter {
            assert!(
                waiter.wait_timeout(WAKE_WITHIN),
                "a force release must wake waiters as a release does"
            );
        }
        assert_eq!(
            backend.state(&key).await.unwrap().status(),
            LockStatus::Empty
        );
        assert_eq!(
            backend
                .extend(Renewal::new(&first, LONG_LEASE))
                .await
                .unwrap(),
            ExtendOutcome::NotHeld,
            "the old holder finds its lease gone at its next renewal"
        );
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&first, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::NotHeld
        );
        assert_eq!(
            backend.force_release(&key).await.unwrap(),
            ForceReleaseOutcome::NotHeld,
            "a free lock has nothing to force"
        );

        let second = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(
            second.fencing_token > first.fencing_token,
            "fencing tokens never go back after a force release"
        );
        // Released by its owner but kept for its minimum lease: still a holder to free.
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&second, LONG_LEASE))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        assert!(matches!(
            backend.force_release(&key).await.unwrap(),
            ForceReleaseOutcome::Released(holder) if holder.fencing_token == second.fencing_token
        ));
        let third = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-c", LONG_LEASE),
        )
        .await;
        assert!(third.fencing_token > second.fencing_token);
    });
}

/// `force_release_if` frees the lock only while its holder has the fencing token named:
/// the holder with that token is freed (waiters woken, its renewal `NotHeld` afterwards);
/// with another token, on a free lock, and once another owner took over after the first
/// holder left, nothing changes: the holder now seen is reported and its next `extend`
/// still succeeds. A holder kept for its minimum lease is freed by its token too.
pub fn force_release_if_frees_only_the_holder_seen<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("force-if");
        let first = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;

        // Another token than the holder's: refused, the holder reported, nothing changed.
        for other in [
            first.fencing_token + 1,
            first.fencing_token.saturating_sub(1),
            0,
            u64::MAX,
        ] {
            match backend.force_release_if(&key, other).await.unwrap() {
                ForceReleaseOutcome::HolderChanged(now) => {
                    assert_eq!(now.leader_id, "node-a");
                    assert_eq!(now.fencing_token, first.fencing_token);
                }
                outcome => {
                    panic!("a holder with another token than {other} must be kept, got {outcome:?}")
                }
            }
        }
        assert!(
            matches!(
                backend
                    .extend(Renewal::new(&first, LONG_LEASE))
                    .await
                    .unwrap(),
                ExtendOutcome::Extended { .. }
            ),
            "a refused conditional force release must leave the holder's lease alone"
        );

        // The holder's own token: freed as force_release frees.
        let waiter = backend
            .release_events()
            .map(|events| events.listen(key.as_str()));
        match backend
            .force_release_if(&key, first.fencing_token)
            .await
            .unwrap()
        {
            ForceReleaseOutcome::Released(holder) => {
                assert_eq!(holder.leader_id, "node-a");
                assert_eq!(holder.fencing_token, first.fencing_token);
            }
            outcome => panic!("the holder with the token must be freed, got {outcome:?}"),
        }
        if let Some(waiter) = waiter {
            assert!(
                waiter.wait_timeout(WAKE_WITHIN),
                "a conditional force release must wake waiters as a release does"
            );
        }
        assert_eq!(
            backend
                .extend(Renewal::new(&first, LONG_LEASE))
                .await
                .unwrap(),
            ExtendOutcome::NotHeld,
            "the freed holder finds its lease gone at its next renewal"
        );

        // A free lock: nothing to free, whatever the token.
        assert_eq!(
            backend
                .force_release_if(&key, first.fencing_token)
                .await
                .unwrap(),
            ForceReleaseOutcome::NotHeld,
            "a free lock has nothing to force"
        );

        // The operator saw `first`; another owner took the lock after it left.
        let second = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        match backend
            .force_release_if(&key, first.fencing_token)
            .await
            .unwrap()
        {
            ForceReleaseOutcome::HolderChanged(now) => {
                assert_eq!(now.leader_id, "node-b");
                assert_eq!(now.fencing_token, second.fencing_token);
            }
            outcome => panic!("a new holder must be kept and reported, got {outcome:?}"),
        }
        assert!(
            matches!(
                backend
                    .extend(Renewal::new(&second, LONG_LEASE))
                    .await
                    .unwrap(),
                ExtendOutcome::Extended { .. }
            ),
            "the new holder keeps its lease"
        );
        let state = backend.state(&key).await.unwrap();
        assert_eq!(
            state.leader().map(|holder| holder.fencing_token),
            Some(second.fencing_token),
            "the new holder still holds: {state:?}"
        );

        // Released by its owner but kept for its minimum lease: freed by its token.
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&second, LONG_LEASE))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        assert!(matches!(
            backend.force_release_if(&key, second.fencing_token).await.unwrap(),
            ForceReleaseOutcome::Released(holder) if holder.fencing_token == second.fencing_token
        ));
        let third = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-c", LONG_LEASE),
        )
        .await;
        assert!(third.fencing_token > second.fencing_token);
    });
}
