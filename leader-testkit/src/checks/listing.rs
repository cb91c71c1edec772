//! Listing pages on a server backend: many locks in exact pages, on the blocking API and
//! on the async API under each runtime, and a prefix full of pattern characters.
//!
//! Unlike the contract checks these take a backend the caller made (on its own table or
//! collection, since they count every lock under a prefix), and drive it through both
//! traits at once.

use std::time::Duration;

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Lease, ListPage, ListRequest, LockBackend,
    LockName, LockStatus, OwnerToken, ReleaseOutcome, ReleaseRequest,
};

use crate::harness::fresh_name;
use crate::runner::{Runner, ThreadRunner};

const LONG: Duration = Duration::from_secs(60);

fn name(text: String) -> LockName {
    LockName::new(text).expect("a valid name")
}

fn acquire<B: LockBackend>(backend: &B, key: &LockName) -> Lease {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", LONG);
    match LockBackend::try_acquire(backend, request) {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key}: {other:?}"),
    }
}

/// Every page of `prefix`, by `limit`, through `list`: the names in order, and the pages'
/// sizes. Each lock listed must be held.
fn all_pages(
    prefix: &str,
    limit: usize,
    mut list: impl FnMut(&ListRequest) -> ListPage,
) -> (Vec<String>, Vec<usize>) {
    let (mut names, mut sizes) = (Vec::new(), Vec::new());
    let mut request = ListRequest::new(prefix).with_limit(limit);
    loop {
        let page = list(&request);
        sizes.push(page.locks.len());
        for state in &page.locks {
            assert_eq!(state.status(), LockStatus::Occupied);
            names.push(state.lock_name().to_owned());
        }
        match page.next {
            Some(cursor) => request = request.after(cursor),
            None => return (names, sizes),
        }
        assert!(sizes.len() < 100, "the listing does not end");
    }
}

/// The names under `prefix` in pages of `limit`, through the async API on `runner`.
fn async_pages<B: AsyncLockBackend, R: Runner>(
    backend: &B,
    runner: &R,
    prefix: &str,
    limit: usize,
) -> Vec<String> {
    all_pages(prefix, limit, |request| {
        runner
            .block_on(AsyncLockBackend::list(backend, request))
            .expect("list")
    })
    .0
}

/// Sixty held locks under a prefix (and the prefix itself as a name, and one past every
/// digit) list in pages of seven — eight full pages and one of six — in name order, with
/// nothing beside the prefix (below it, just above its range, a released lock under it):
/// on the blocking API, and the same names on the async API on a plain thread
/// (`futures::executor`) and, with the testkit's features, on tokio (current-thread) and
/// smol.
///
/// `backend` must be alone on its table or collection for the prefix (a fresh one is
/// made each time).
///
/// # Panics
///
/// When a page or a name differs, or a call fails.
pub fn sixty_locks_list_in_pages_of_seven_blocking_and_async<B>(backend: &B)
where
    B: LockBackend + AsyncLockBackend,
{
    let base = fresh_name("sixty");
    let prefix = format!("{base}:");
    let mut expected: Vec<String> = (0..60).map(|i| format!("{prefix}{i:02}")).collect();
    // Under the prefix too: the prefix itself as a name, and one past every digit.
    expected.push(prefix.clone());
    expected.push(format!("{prefix}\u{10FFFF}"));
    expected.sort();
    for held in &expected {
        acquire(backend, &name(held.clone()));
    }
    // Beside the prefix: below it, just above its range (`;` follows `:`), and a lock
    // under it that is released.
    for beside in [base.to_string(), format!("{base};"), format!("{base}9")] {
        acquire(backend, &name(beside));
    }
    let released = acquire(backend, &name(format!("{prefix}released")));
    assert_eq!(
        LockBackend::release(backend, ReleaseRequest::new(&released, Duration::ZERO))
            .expect("release"),
        ReleaseOutcome::Released
    );

    let (blocking, sizes) = all_pages(&prefix, 7, |request| {
        LockBackend::list(backend, request).expect("list")
    });
    assert_eq!(blocking, expected);
    assert_eq!(sizes, [7, 7, 7, 7, 7, 7, 7, 7, 6]);

    assert_eq!(async_pages(backend, &ThreadRunner, &prefix, 7), expected);
    #[cfg(feature = "tokio")]
    assert_eq!(
        async_pages(
            backend,
            &crate::runner::TokioRunner::current_thread(),
            &prefix,
            7
        ),
        expected
    );
    #[cfg(feature = "smol")]
    assert_eq!(
        async_pages(backend, &crate::runner::SmolRunner, &prefix, 7),
        expected
    );
}

/// A prefix holding what a regex (`.`, `*`, `[x]`) or a `LIKE` pattern (`%`, `_`) would
/// read as pattern characters matches them literally: the listing holds the prefix
/// itself and the two names under it, none of the decoys those patterns would match.
///
/// # Panics
///
/// When the listing differs, or a call fails.
pub fn a_prefix_with_metacharacters_matches_literally<B: LockBackend>(backend: &B) {
    let base = fresh_name("meta");
    let prefix = format!("{base}:a.*[x]%_");
    let expected = [
        prefix.clone(),
        format!("{prefix}_"),
        format!("{prefix}tail"),
    ];
    // What a regex (`.`, `*`, `[x]`) or a LIKE pattern (`%`, `_`) would also match.
    let decoys = [
        format!("{base}:ab*[x]%_"),
        format!("{base}:a.[x]%_"),
        format!("{base}:a.*x%_"),
        format!("{base}:a.*[x]Z_"),
        format!("{base}:a.*[x]%Z"),
        format!("{base}:a"),
    ];
    for held in expected.iter().chain(&decoys) {
        acquire(backend, &name(held.clone()));
    }
    let (names, _) = all_pages(&prefix, 2, |request| {
        LockBackend::list(backend, request).expect("list")
    });
    assert_eq!(names, expected);
}
