//! Read/write locks: the contract of
//! [`SharedLockBackend`](leader_core::SharedLockBackend) (its `# Contract` lists the rules),
//! checked on the async side; a blocking backend runs them through
//! [`Blocking`](crate::Blocking). Expanded by
//! [`shared_contract_tests!`](crate::shared_contract_tests).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use leader_core::kit::{Deadline, SharedAnswer, SharedAsk, SharedRecord};
use leader_core::{
    AcquireOutcome, AsyncLockBackend, AsyncSharedLockBackend, Error, ExtendOutcome, Lease,
    LockName, MaxReaders, OptionsError, OwnerToken, ReleaseOutcome, ReleaseRequest, Renewal, Role,
    SharedOutcome, SharedRequest, SharedState,
};
use rand::{Rng, SeedableRng};

use super::{LONG_LEASE, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

async fn ask<B: AsyncSharedLockBackend>(
    backend: &B,
    role: Role,
    key: &LockName,
    owner: OwnerToken,
    node: &str,
    lease: Duration,
) -> SharedOutcome {
    let request = SharedRequest::new(request(key, owner, node, lease), role, MaxReaders::DEFAULT);
    backend
        .try_acquire_shared(request)
        .await
        .unwrap_or_else(|err| panic!("try_acquire_shared ({}) failed: {err}", role.as_str()))
}

/// A grant: the lease, or a panic naming what was expected.
fn granted(outcome: SharedOutcome, what: &str) -> Lease {
    match outcome {
        SharedOutcome::Acquired(lease) => lease,
        other => panic!("{what}: expected a grant, got {other:?}"),
    }
}

async fn read<B: AsyncSharedLockBackend>(backend: &B, key: &LockName, node: &str) -> Lease {
    let outcome = ask(
        backend,
        Role::Read,
        key,
        OwnerToken::random(),
        node,
        LONG_LEASE,
    )
    .await;
    granted(outcome, &format!("a read by {node}"))
}

async fn release<B: AsyncSharedLockBackend>(
    backend: &B,
    lease: &Lease,
    role: Role,
) -> ReleaseOutcome {
    backend
        .release_shared(ReleaseRequest::new(lease, Duration::ZERO), role)
        .await
        .unwrap_or_else(|err| panic!("release_shared ({}) failed: {err}", role.as_str()))
}

async fn extend<B: AsyncSharedLockBackend>(
    backend: &B,
    lease: &Lease,
    role: Role,
    lease_time: Duration,
) -> ExtendOutcome {
    backend
        .extend_shared(Renewal::new(lease, lease_time), role)
        .await
        .unwrap_or_else(|err| panic!("extend_shared ({}) failed: {err}", role.as_str()))
}

async fn state<B: AsyncSharedLockBackend>(backend: &B, key: &LockName) -> SharedState {
    backend
        .state_shared(key)
        .await
        .unwrap_or_else(|err| panic!("state_shared failed: {err}"))
}

/// A lease value naming `owner` on `key`, to release or renew by owner alone (as an
/// elector does for a writer that gives up waiting: it has no token).
fn by_owner(key: &LockName, owner: OwnerToken) -> Lease {
    let now = SystemTime::now();
    Lease::new(key.clone(), owner, "node", 0, now, now)
}

/// Readers share; a writer that finds readers is queued, and from then on new readers are
/// held out (writer preference) and other writers too; when the readers leave, the queued
/// writer gets in, alone.
pub fn shared_readers_share_and_a_writer_waits_with_new_readers_held_out<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-share");
        let r1 = read(&backend, &key, "reader-1").await;
        let r2 = read(&backend, &key, "reader-2").await;
        let writer = OwnerToken::random();
        match ask(&backend, Role::Write, &key, writer, "writer", LONG_LEASE).await {
            SharedOutcome::Queued(seen) => assert_eq!(
                seen.readers.len(),
                2,
                "a queued writer sees the readers it waits for: {seen:?}"
            ),
            other => panic!("a writer behind readers must be queued, got {other:?}"),
        }
        match ask(
            &backend,
            Role::Read,
            &key,
            OwnerToken::random(),
            "late",
            LONG_LEASE,
        )
        .await
        {
            SharedOutcome::Held(seen) => assert!(
                seen.intent
                    .as_ref()
                    .is_some_and(|i| i.leader_id == "writer"),
                "a new reader is held out by the waiting writer's intent: {seen:?}"
            ),
            other => panic!("a new reader must queue behind a waiting writer, got {other:?}"),
        }
        let other = ask(
            &backend,
            Role::Write,
            &key,
            OwnerToken::random(),
            "w2",
            LONG_LEASE,
        )
        .await;
        assert!(
            matches!(other, SharedOutcome::Held(_)),
            "a second writer must not pass the first one's intent, got {other:?}"
        );
        // A reader already in asks again (its answer was lost): a renewal, same token.
        let again = ask(&backend, Role::Read, &key, r1.owner, "reader-1", LONG_LEASE).await;
        assert_eq!(
            granted(again, "a reader's retry").fencing_token,
            r1.fencing_token
        );
        assert_eq!(
            release(&backend, &r1, Role::Read).await,
            ReleaseOutcome::Released
        );
        let still = ask(&backend, Role::Write, &key, writer, "writer", LONG_LEASE).await;
        assert!(
            matches!(still, SharedOutcome::Queued(_)),
            "one reader left: the writer is still queued, got {still:?}"
        );
        assert_eq!(
            release(&backend, &r2, Role::Read).await,
            ReleaseOutcome::Released
        );
        let w = granted(
            ask(&backend, Role::Write, &key, writer, "writer", LONG_LEASE).await,
            "the queued writer once the readers left",
        );
        let seen = state(&backend, &key).await;
        assert!(
            seen.writer
                .as_ref()
                .is_some_and(|h| h.fencing_token == w.fencing_token)
                && seen.readers.is_empty()
                && seen.intent.is_none(),
            "the writer holds the lock alone, its intent spent: {seen:?}"
        );
        for role in [Role::Read, Role::Write] {
            let refused = ask(&backend, role, &key, OwnerToken::random(), "x", LONG_LEASE).await;
            assert!(
                matches!(&refused, SharedOutcome::Held(s) if s.writer.is_some()),
                "a {} beside a writer must be held, got {refused:?}",
                role.as_str()
            );
        }
    });
}

/// One counter: a writer's token is greater than every token issued to a reader before
/// it, and a reader's greater than the last writer's.
pub fn shared_tokens_order_writers_after_readers_and_readers_after_writers<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-tokens");
        let mut last = 0;
        for round in 0..3 {
            let readers = [
                read(&backend, &key, "r1").await,
                read(&backend, &key, "r2").await,
                read(&backend, &key, "r3").await,
            ];
            for reader in &readers {
                assert!(
                    reader.fencing_token > last,
                    "round {round}: a reader's token {} must exceed the last writer's {last}",
                    reader.fencing_token
                );
                release(&backend, reader, Role::Read).await;
            }
            let highest = readers.iter().map(|r| r.fencing_token).max().unwrap_or(0);
            let w = granted(
                ask(
                    &backend,
                    Role::Write,
                    &key,
                    OwnerToken::random(),
                    "w",
                    LONG_LEASE,
                )
                .await,
                "a writer on a free lock",
            );
            assert!(
                w.fencing_token > highest,
                "round {round}: the writer's token {} must exceed its readers' {highest}",
                w.fencing_token
            );
            release(&backend, &w, Role::Write).await;
            last = w.fencing_token;
        }
    });
}

/// A crashed reader frees itself when its lease runs out (a writer gets in without it),
/// and a crashed writer too (readers get in).
pub fn shared_crashed_readers_and_writers_run_out<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-crash");
        let short = harness.short_lease();
        let reader = granted(
            ask(
                &backend,
                Role::Read,
                &key,
                OwnerToken::random(),
                "crashes",
                short,
            )
            .await,
            "a short read",
        );
        let writer = OwnerToken::random();
        let queued = ask(&backend, Role::Write, &key, writer, "w", LONG_LEASE).await;
        assert!(matches!(queued, SharedOutcome::Queued(_)), "{queued:?}");
        harness.expire(short);
        let w = granted(
            ask(&backend, Role::Write, &key, writer, "w", short).await,
            "the writer once the crashed reader's lease ran out",
        );
        assert!(w.fencing_token > reader.fencing_token);
        // The writer crashes in turn; a reader gets in after its lease.
        let held = ask(
            &backend,
            Role::Read,
            &key,
            OwnerToken::random(),
            "r",
            LONG_LEASE,
        )
        .await;
        assert!(matches!(held, SharedOutcome::Held(_)), "{held:?}");
        harness.expire(short);
        let r = read(&backend, &key, "r").await;
        assert!(r.fencing_token > w.fencing_token);
        assert_eq!(
            extend(&backend, &w, Role::Write, LONG_LEASE).await,
            ExtendOutcome::NotHeld,
            "an expired writer cannot renew"
        );
        assert_eq!(
            release(&backend, &w, Role::Write).await,
            ReleaseOutcome::NotHeld
        );
    });
}

/// A writer that died while queued holds readers out only until its intent lapses, a
/// lease after it last asked; a writer that gives up withdraws its intent by releasing.
pub fn shared_a_dead_writers_intent_lapses<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-intent");
        let short = harness.short_lease();
        read(&backend, &key, "long-reader").await;
        let dead = ask(
            &backend,
            Role::Write,
            &key,
            OwnerToken::random(),
            "dies",
            short,
        )
        .await;
        assert!(matches!(dead, SharedOutcome::Queued(_)), "{dead:?}");
        let held = ask(
            &backend,
            Role::Read,
            &key,
            OwnerToken::random(),
            "r",
            LONG_LEASE,
        )
        .await;
        assert!(matches!(held, SharedOutcome::Held(_)), "{held:?}");
        harness.expire(short);
        read(&backend, &key, "after-the-intent").await;

        let quitter = OwnerToken::random();
        let queued = ask(&backend, Role::Write, &key, quitter, "quits", LONG_LEASE).await;
        assert!(matches!(queued, SharedOutcome::Queued(_)), "{queued:?}");
        assert_eq!(
            release(&backend, &by_owner(&key, quitter), Role::Write).await,
            ReleaseOutcome::Released,
            "a writer gives up waiting by releasing its intent"
        );
        assert!(state(&backend, &key).await.intent.is_none());
        read(&backend, &key, "after-the-quitter").await;
    });
}

/// `extend_shared` and `release_shared` act only for the owner in that role: another
/// owner, or the right owner in the other role, is `NotHeld` and changes nothing; the
/// owner's renewal moves the expiry; a released hold cannot be renewed.
pub fn shared_extend_and_release_act_for_the_owner_in_its_role<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-owner");
        let short = harness.short_lease();
        let reader = granted(
            ask(&backend, Role::Read, &key, OwnerToken::random(), "r", short).await,
            "a read",
        );
        let stranger = by_owner(&key, OwnerToken::random());
        assert_eq!(
            extend(&backend, &stranger, Role::Read, LONG_LEASE).await,
            ExtendOutcome::NotHeld
        );
        assert_eq!(
            extend(&backend, &reader, Role::Write, LONG_LEASE).await,
            ExtendOutcome::NotHeld
        );
        assert_eq!(
            release(&backend, &stranger, Role::Read).await,
            ReleaseOutcome::NotHeld
        );
        assert_eq!(
            release(&backend, &reader, Role::Write).await,
            ReleaseOutcome::NotHeld
        );
        assert_eq!(
            state(&backend, &key).await.readers.len(),
            1,
            "nothing changed"
        );
        match extend(&backend, &reader, Role::Read, LONG_LEASE).await {
            ExtendOutcome::Extended { expires_at } => assert!(
                expires_at > reader.expires_at,
                "the renewal moves the expiry: {expires_at:?} after {:?}",
                reader.expires_at
            ),
            other => panic!("the owner's renewal must extend, got {other:?}"),
        }
        // Renewed for a long lease: the short one running out does not free it.
        harness.expire(short);
        assert_eq!(
            state(&backend, &key).await.readers.len(),
            1,
            "renewed past its first lease"
        );
        assert_eq!(
            release(&backend, &reader, Role::Read).await,
            ReleaseOutcome::Released
        );
        assert_eq!(
            release(&backend, &reader, Role::Read).await,
            ReleaseOutcome::NotHeld
        );
        assert_eq!(
            extend(&backend, &reader, Role::Read, LONG_LEASE).await,
            ExtendOutcome::NotHeld
        );
        assert!(state(&backend, &key).await.is_free());
    });
}

/// A release with a minimum lease returns at once and keeps the hold until
/// `acquired_at + min_lease_time`: others stay out, the owner can neither renew nor release
/// it again; then it is free.
pub fn shared_min_lease_keeps_the_hold_without_blocking<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-min-lease");
        let min = harness.short_lease();
        let w = granted(
            ask(&backend, Role::Write, &key, OwnerToken::random(), "w", LONG_LEASE).await,
            "a write",
        );
        let started = Instant::now();
        let released = backend
            .release_shared(ReleaseRequest::new(&w, min), Role::Write)
            .await
            .unwrap_or_else(|err| panic!("release_shared failed: {err}"));
        assert_eq!(released, ReleaseOutcome::Released);
        assert!(started.elapsed() < min, "release must not park the caller for the minimum lease");
        let held = ask(&backend, Role::Read, &key, OwnerToken::random(), "r", LONG_LEASE).await;
        assert!(
            matches!(&held, SharedOutcome::Held(s) if s.writer.as_ref().is_some_and(|h| h.fencing_token == w.fencing_token)),
            "the writer's hold stays for its minimum lease, got {held:?}"
        );
        assert_eq!(extend(&backend, &w, Role::Write, LONG_LEASE).await, ExtendOutcome::NotHeld);
        assert_eq!(release(&backend, &w, Role::Write).await, ReleaseOutcome::NotHeld);
        harness.expire(min);
        read(&backend, &key, "r").await;
    });
}

/// `state_shared` shows the writer, the readers (node ids, tokens, times) and a waiting
/// writer's intent, and never a hold that ran out.
pub fn shared_state_shows_the_holders_and_hides_expired_ones<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("rw-state");
        let short = harness.short_lease();
        assert!(state(&backend, &key).await.is_free(), "a new name is free");
        let r1 = granted(
            ask(
                &backend,
                Role::Read,
                &key,
                OwnerToken::random(),
                "node-r1",
                short,
            )
            .await,
            "a read",
        );
        let r2 = granted(
            ask(
                &backend,
                Role::Read,
                &key,
                OwnerToken::random(),
                "node-r2",
                short,
            )
            .await,
            "a read",
        );
        let queued = ask(
            &backend,
            Role::Write,
            &key,
            OwnerToken::random(),
            "node-w",
            short,
        )
        .await;
        assert!(matches!(queued, SharedOutcome::Queued(_)), "{queued:?}");
        let seen = state(&backend, &key).await;
        assert_eq!(seen.lock_name, key.as_str());
        assert!(seen.writer.is_none(), "{seen:?}");
        let mut readers: Vec<_> = seen
            .readers
            .iter()
            .map(|r| (r.leader_id.as_str(), r.fencing_token))
            .collect();
        readers.sort_unstable();
        assert_eq!(
            readers,
            [("node-r1", r1.fencing_token), ("node-r2", r2.fencing_token)],
            "{seen:?}"
        );
        for reader in &seen.readers {
            assert!(reader.expires_at > reader.acquired_at, "{reader:?}");
        }
        assert_eq!(
            seen.intent.as_ref().map(|i| i.leader_id.as_str()),
            Some("node-w")
        );
        harness.expire(short);
        let after = state(&backend, &key).await;
        assert!(
            after.is_free(),
            "expired holds and intents are never reported: {after:?}"
        );
        let w = granted(
            ask(
                &backend,
                Role::Write,
                &key,
                OwnerToken::random(),
                "node-w2",
                LONG_LEASE,
            )
            .await,
            "a write",
        );
        let seen = state(&backend, &key).await;
        assert!(
            seen.writer
                .as_ref()
                .is_some_and(|h| h.leader_id == "node-w2" && h.fencing_token == w.fencing_token),
            "{seen:?}"
        );
    });
}

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

fn refused(what: &str, lease: Duration, err: &Error) {
    assert!(
        !err.is_transient(),
        "{what} with a lease of {lease:?} must be a permanent error, got {err:?}"
    );
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

/// Random acquires, renewals and releases of six owners on one lock, with leases too long
/// to run out, answer as the record's rules ([`SharedRecord`]) say, step by step; every
/// new grant's token exceeds every earlier one.
pub fn shared_answers_follow_the_record_rules<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let seed: u64 = rand::rng().random();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let key = fresh_name("rw-model");
        let owners: Vec<OwnerToken> = (0..6).map(|_| OwnerToken::random()).collect();
        let mut model: SharedRecord<Still> = SharedRecord::default();
        let now = Still(false);
        let mut leases: Vec<Option<Lease>> = vec![None; owners.len()];
        let mut last_token = 0;
        for step in 0..120 {
            let who = rng.random_range(0..owners.len());
            let owner = owners[who];
            let role = if rng.random_bool(0.35) {
                Role::Write
            } else {
                Role::Read
            };
            let context = format!("seed {seed}, step {step}, owner {who}, {}", role.as_str());
            match rng.random_range(0..5) {
                0..=2 => {
                    let renewing = leases[who].is_some();
                    let expected = model.acquire(
                        SharedAsk {
                            role,
                            owner,
                            node: "n",
                            expires: Still(true),
                            max_readers: MaxReaders::DEFAULT.get(),
                            token_floor: 0,
                        },
                        now,
                    );
                    let node = format!("node-{who}");
                    let actual = ask(&backend, role, &key, owner, &node, LONG_LEASE * 10).await;
                    match (&expected, actual) {
                        (SharedAnswer::Acquired(_), SharedOutcome::Acquired(lease)) => {
                            if !renewing {
                                assert!(lease.fencing_token > last_token, "{context}: token order");
                                last_token = lease.fencing_token;
                            }
                            leases[who] = Some(lease);
                        }
                        (SharedAnswer::Held, SharedOutcome::Held(_))
                        | (SharedAnswer::Queued, SharedOutcome::Queued(_)) => {}
                        (expected, actual) => {
                            panic!("{context}: expected {expected:?}, got {actual:?}")
                        }
                    }
                }
                3 => {
                    let lease = leases[who].clone().unwrap_or_else(|| by_owner(&key, owner));
                    let expected = model.extend(role, owner, Still(true), now).is_some();
                    let actual = extend(&backend, &lease, role, LONG_LEASE * 10).await;
                    assert_eq!(
                        matches!(actual, ExtendOutcome::Extended { .. }),
                        expected,
                        "{context}: extend answered {actual:?}"
                    );
                }
                _ => {
                    let lease = leases[who].clone().unwrap_or_else(|| by_owner(&key, owner));
                    let expected = model.release(role, owner, Duration::ZERO, now);
                    let actual = release(&backend, &lease, role).await;
                    assert_eq!(
                        actual == ReleaseOutcome::Released,
                        expected,
                        "{context}: release answered {actual:?}"
                    );
                    let holds = model.readers.iter().any(|r| r.owner == owner)
                        || model.writer.as_ref().is_some_and(|w| w.owner == owner);
                    if !holds {
                        leases[who] = None;
                    }
                }
            }
        }
    });
}

/// The model's clock in [`shared_answers_follow_the_record_rules`]: time stands still, so
/// no hold runs out (the leases there are far longer than the check), and a minimum lease
/// of zero is over at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Still(bool);

impl Deadline for Still {
    fn after(self, by: Duration) -> Option<Self> {
        Some(if by.is_zero() { self } else { Still(true) })
    }
}
