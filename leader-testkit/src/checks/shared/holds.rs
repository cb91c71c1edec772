//! Holds: readers share, a writer waits and comes first, tokens, expiry, ownership, the
//! minimum lease, snapshots.

use std::time::Instant;

use leader_core::{
    AsyncSharedLockBackend, ExtendOutcome, OwnerToken, ReleaseOutcome, ReleaseRequest, Role,
    SharedOutcome,
};

use super::{ask, by_owner, extend, granted, read, release, state};
use crate::checks::LONG_LEASE;
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

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
