//! Listing one name's derived locks (a leader group's slots, ranked candidates' records):
//! exactly the live ones, however each of the others went.

use std::collections::BTreeSet;
use std::time::Duration;

use leader_core::{
    AsyncLockBackend, ListRequest, LockName, OwnerToken, ReleaseOutcome, ReleaseRequest,
};

use super::{LONG_LEASE, must_acquire, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

/// The names that `list` pages through under `prefix` (in pages of two).
async fn listed<B: AsyncLockBackend>(backend: &B, prefix: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut list = ListRequest::new(prefix).with_limit(2);
    for _ in 0..20 {
        let page = backend.list(&list).await.unwrap();
        for state in page.locks {
            assert!(
                state.leader().is_some(),
                "only held locks are listed: {state:?}"
            );
            seen.insert(state.lock_name().to_owned());
        }
        match page.next {
            Some(cursor) => list = list.after(cursor),
            None => return seen,
        }
    }
    panic!("a listing of a few names under `{prefix}` did not end within 20 pages");
}

/// `list` over a prefix inside one name's derived names (`<name>#rank:`, as a ranked
/// campaign surveys its candidates, and `<name>#`) holds exactly the live derived locks
/// under it: not one released, expired or force-released; not the name itself or a
/// derived lock beside the prefix; and one taken again after it went is listed again.
pub fn list_of_a_names_derived_locks_holds_only_the_live_ones<H: Harness, R: Runner>(
    harness: &H,
    runner: &R,
) where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let base = fresh_name("derived");
        let record = |rank: u32| -> LockName {
            base.derive(&format!("rank:{rank:010}:{:016x}", u64::from(rank) * 17))
                .expect("a ranked record's name")
        };
        let mut live = BTreeSet::new();
        for rank in 1..=3 {
            let key = record(rank);
            must_acquire(
                &backend,
                request(&key, OwnerToken::random(), "n", LONG_LEASE),
            )
            .await;
            live.insert(key.to_string());
        }
        let released = record(4);
        let lease = must_acquire(
            &backend,
            request(&released, OwnerToken::random(), "n", LONG_LEASE),
        )
        .await;
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        let forced = record(5);
        must_acquire(
            &backend,
            request(&forced, OwnerToken::random(), "n", LONG_LEASE),
        )
        .await;
        backend.force_release(&forced).await.unwrap();
        let short = harness.short_lease();
        let expired = record(6);
        must_acquire(
            &backend,
            request(&expired, OwnerToken::random(), "n", short),
        )
        .await;
        // Beside `<name>#rank:`: a group slot, and the name itself.
        let slot = base.derive("1").expect("a slot's name");
        must_acquire(
            &backend,
            request(&slot, OwnerToken::random(), "n", LONG_LEASE),
        )
        .await;
        must_acquire(
            &backend,
            request(&base, OwnerToken::random(), "n", LONG_LEASE),
        )
        .await;
        harness.expire(short);

        let ranks = format!("{base}#rank:");
        assert_eq!(
            listed(&backend, &ranks).await,
            live,
            "the live records, and only they"
        );
        let mut derived = live.clone();
        derived.insert(slot.to_string());
        assert_eq!(
            listed(&backend, &format!("{base}#")).await,
            derived,
            "every live derived lock of the name, and not the name itself"
        );

        // Taken again after it expired, a record is listed again.
        must_acquire(
            &backend,
            request(&expired, OwnerToken::random(), "n", LONG_LEASE),
        )
        .await;
        live.insert(expired.to_string());
        assert_eq!(listed(&backend, &ranks).await, live);
    });
}
