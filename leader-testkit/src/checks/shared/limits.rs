//! Races, the reader limit, the exclusive lock of the same name, unrepresentable leases.

use std::sync::Arc;
use std::time::Duration;

use leader_core::{
    AcquireOutcome, AsyncLockBackend, AsyncSharedLockBackend, MaxReaders, OptionsError, OwnerToken,
    Renewal, Role, SharedOutcome, SharedRequest,
};

use super::{ask, granted, read, state};
use crate::checks::refusals::refused;
use crate::checks::{LONG_LEASE, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

/// Sixteen writers racing for a free lock: exactly one wins. Sixteen readers racing: all
/// get in, each with its own token. Twenty rounds of each (a round costs etcd sixteen lease
/// grants; the exclusive race's 200 rounds check the store's atomic step the read/write
/// calls share on most backends).
pub fn shared_racing_writers_have_one_winner_and_readers_all_get_in<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncSharedLockBackend,
{
    let backend = Arc::new(runner.block_on(harness.backend()));
    for round in 0..20 {
        for role in [Role::Write, Role::Read] {
            let key = Arc::new(fresh_name("rw-race"));
            let racers = (0..16)
                .map(|i| {
                    let backend = Arc::clone(&backend);
                    let key = Arc::clone(&key);
                    async move {
                        let node = format!("node-{i}");
                        let request = SharedRequest::new(
                            request(&key, OwnerToken::random(), &node, LONG_LEASE),
                            role,
                            MaxReaders::DEFAULT,
                        );
                        backend.try_acquire_shared(request).await
                    }
                })
                .collect();
            let outcomes = runner.race(racers);
            let errors: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
            assert!(errors.is_empty(), "round {round}: errors {errors:?}");
            let mut tokens: Vec<u64> = outcomes
                .iter()
                .filter_map(|o| match o {
                    Ok(SharedOutcome::Acquired(lease)) => Some(lease.fencing_token),
                    _ => None,
                })
                .collect();
            let expected = if role == Role::Write { 1 } else { 16 };
            assert_eq!(
                tokens.len(),
                expected,
                "round {round}: {} winners",
                role.as_str()
            );
            tokens.sort_unstable();
            tokens.dedup();
            assert_eq!(
                tokens.len(),
                expected,
                "round {round}: every grant its own token"
            );
        }
    }
}

/// A read among `max_readers` readers is held once that many hold the lock; the ones in
/// still renew. A reader count of zero or above the limit is a typed error before any
/// request is made.
pub fn shared_readers_beyond_the_limit_are_held<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    for readers in [0, MaxReaders::LIMIT + 1, u32::MAX] {
        assert_eq!(
            MaxReaders::new(readers),
            Err(OptionsError::ReadersOutOfRange {
                readers,
                max: MaxReaders::LIMIT
            })
        );
    }
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-limit");
        let two = MaxReaders::new(2).unwrap();
        let owners = [
            OwnerToken::random(),
            OwnerToken::random(),
            OwnerToken::random(),
        ];
        let mut answers = Vec::new();
        for owner in owners {
            let request = SharedRequest::read(request(&key, owner, "r", LONG_LEASE), two);
            answers.push(backend.try_acquire_shared(request).await.unwrap());
        }
        assert!(
            matches!(answers[0], SharedOutcome::Acquired(_)),
            "{answers:?}"
        );
        assert!(
            matches!(answers[1], SharedOutcome::Acquired(_)),
            "{answers:?}"
        );
        assert!(
            matches!(&answers[2], SharedOutcome::Held(s) if s.readers.len() == 2),
            "a third reader among two is held: {answers:?}"
        );
        let again = SharedRequest::read(request(&key, owners[1], "r", LONG_LEASE), two);
        assert!(matches!(
            backend.try_acquire_shared(again).await.unwrap(),
            SharedOutcome::Acquired(_)
        ));
        let one = MaxReaders::new(1).unwrap();
        let single = SharedRequest::read(request(&key, OwnerToken::random(), "r", LONG_LEASE), one);
        assert!(matches!(
            backend.try_acquire_shared(single).await.unwrap(),
            SharedOutcome::Held(_)
        ));
    });
}

/// A read/write lock and the exclusive lock of the same name never see each other.
pub fn shared_locks_live_apart_from_exclusive_locks<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-apart");
        let exclusive = match backend
            .try_acquire(request(&key, OwnerToken::random(), "x", LONG_LEASE))
            .await
            .unwrap()
        {
            AcquireOutcome::Acquired(lease) => lease,
            other => panic!("{other:?}"),
        };
        granted(
            ask(
                &backend,
                Role::Write,
                &key,
                OwnerToken::random(),
                "w",
                LONG_LEASE,
            )
            .await,
            "a write beside the exclusive lock of the same name",
        );
        assert!(
            backend
                .state(&key)
                .await
                .unwrap()
                .leader()
                .is_some_and(|h| h.fencing_token == exclusive.fencing_token),
            "the exclusive lock is untouched"
        );
        let rw_only = fresh_name("rw-apart");
        read(&backend, &rw_only, "r").await;
        assert!(
            backend.state(&rw_only).await.unwrap().leader().is_none(),
            "a read/write lock is no exclusive lock"
        );
    });
}

/// A lease the store cannot hold is a permanent error on acquire (either role) and on
/// renewal, and changes nothing.
pub fn shared_unrepresentable_leases_are_refused<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        for lease in [Duration::MAX, Duration::from_secs(i64::MAX as u64)] {
            let key = fresh_name("rw-lease");
            for role in [Role::Read, Role::Write] {
                let request = SharedRequest::new(
                    request(&key, OwnerToken::random(), "n", lease),
                    role,
                    MaxReaders::DEFAULT,
                );
                match backend.try_acquire_shared(request).await {
                    Err(err) => refused("try_acquire_shared", lease, &err),
                    Ok(outcome) => panic!("a lease of {lease:?}: {outcome:?}"),
                }
                assert!(
                    state(&backend, &key).await.is_free(),
                    "a refused acquire took the lock"
                );
            }
            let reader = read(&backend, &key, "r").await;
            match backend
                .extend_shared(Renewal::new(&reader, lease), Role::Read)
                .await
            {
                Err(err) => refused("extend_shared", lease, &err),
                Ok(outcome) => panic!("a renewal for {lease:?}: {outcome:?}"),
            }
            let seen = state(&backend, &key).await;
            assert!(
                seen.readers
                    .iter()
                    .any(|r| r.fencing_token == reader.fencing_token),
                "a refused renewal keeps the hold: {seen:?}"
            );
        }
    });
}
