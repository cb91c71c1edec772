//! What a backend refuses: input it cannot honour is a typed error that changes nothing.
//!
//! - A lease time the store cannot represent (`Duration::MAX`, or a huge finite one) is
//!   either honoured exactly (the reported expiry is now plus the lease) or refused with a
//!   permanent error, leaving the lock as it was: never an overflow, a panic, or a lease
//!   silently cut to what the store holds.
//! - A list cursor the backend did not make for this listing (garbled, made for another
//!   prefix, made by another kind of backend) is a permanent error, never a page that
//!   silently starts somewhere else.

use std::time::{Duration, SystemTime};

use leader_core::{
    AcquireOutcome, AsyncLockBackend, Backend, Error, GroupSlots, InMemoryBackend, LeaderState,
    Lease, ListCursor, ListRequest, LockBackend, LockName, OwnerToken, ReleaseOutcome,
    ReleaseRequest, Renewal, SlotRequest,
};

use super::{LONG_LEASE, must_acquire, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

const YEAR: u64 = 365 * 24 * 3600;

/// Leases no store can hold: `now + lease` is not even a `SystemTime`.
const UNREPRESENTABLE: [Duration; 2] = [Duration::MAX, Duration::from_secs(i64::MAX as u64)];

/// A million years: some stores hold it (a `SystemTime` does), others cannot.
const HUGE: Duration = Duration::from_secs(1_000_000 * YEAR);

/// The longest lease the electors' options allow: every backend must honour it.
const CENTURY: Duration = Duration::from_secs(100 * YEAR);

pub(crate) fn refused(what: &str, lease: Duration, err: &Error) {
    assert!(
        !err.is_transient(),
        "{what} with a lease of {lease:?} must be a permanent error (retrying cannot help), got {err:?}"
    );
}

/// The expiry a backend reported for a lease of `lease` taken (with `use_db_time`) between
/// `before` and now on its clock is that lease, give or take the clock tolerance.
fn honoured<H: Harness>(
    harness: &H,
    what: &str,
    lease: Duration,
    expires_at: SystemTime,
    before: SystemTime,
) {
    let after = harness.backend_now();
    let tolerance = harness.clock_tolerance();
    let (Some(low), Some(high)) = (
        before
            .checked_add(lease)
            .and_then(|t| t.checked_sub(tolerance)),
        after.checked_add(lease + tolerance),
    ) else {
        panic!("{what}: a lease of {lease:?} was granted, but no time is that far ahead");
    };
    assert!(
        low <= expires_at && expires_at <= high,
        "{what}: a lease of {lease:?} must end {lease:?} from now, not at {expires_at:?} (the store cut it short or stretched it)"
    );
}

async fn state<B: AsyncLockBackend>(backend: &B, key: &LockName) -> LeaderState {
    backend
        .state(key)
        .await
        .unwrap_or_else(|err| panic!("state failed: {err}"))
}

/// The lock is free, as before a refused acquisition.
async fn still_free<B: AsyncLockBackend>(backend: &B, key: &LockName, what: &str) {
    let state = state(backend, key).await;
    assert!(
        state.leader().is_none(),
        "{what} was refused but took the lock: {state:?}"
    );
}

/// The lock is still held by `lease`, with its expiry, as before a refused renewal.
async fn unchanged<H: Harness>(harness: &H, backend: &H::Backend, lease: &Lease, what: &str)
where
    H::Backend: AsyncLockBackend,
{
    let state = state(backend, &lease.key).await;
    let holder = state
        .leader()
        .unwrap_or_else(|| panic!("{what} was refused but the lease is gone"));
    assert_eq!(holder.fencing_token, lease.fencing_token, "{what}");
    assert!(
        super::within(
            holder.expires_at,
            lease.expires_at,
            harness.clock_tolerance()
        ),
        "{what} was refused but moved the expiry from {:?} to {:?}",
        lease.expires_at,
        holder.expires_at
    );
}

/// `try_acquire`, `try_acquire_batch` and a group's `try_acquire_slot` with a lease the
/// store cannot hold are permanent errors and take nothing; a huge lease is honoured
/// exactly or refused so; a lease as long as the options allow (a century) is honoured.
pub fn unrepresentable_leases_are_refused_on_acquire<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        for lease in UNREPRESENTABLE {
            let key = fresh_name("lease-acquire");
            let result = backend
                .try_acquire(request(&key, OwnerToken::random(), "node", lease))
                .await;
            match result {
                Err(err) => refused("try_acquire", lease, &err),
                Ok(outcome) => panic!("try_acquire with a lease of {lease:?}: {outcome:?}"),
            }
            still_free(&backend, &key, "try_acquire").await;

            let batch = backend
                .try_acquire_batch(&[request(&key, OwnerToken::random(), "node", lease)])
                .await;
            match batch.as_slice() {
                [Err(err)] => refused("try_acquire_batch", lease, err),
                other => panic!("try_acquire_batch with a lease of {lease:?}: {other:?}"),
            }
            still_free(&backend, &key, "try_acquire_batch").await;

            let group = fresh_name("lease-group");
            let slots = GroupSlots::new(3).unwrap_or_else(|err| panic!("{err}"));
            let keys = slots.keys(&group).unwrap_or_else(|err| panic!("{err}"));
            let slot = SlotRequest::group(
                request(keys.group(), OwnerToken::random(), "node", lease),
                &keys,
                0,
            );
            match backend.try_acquire_slot(slot).await {
                Err(err) => refused("try_acquire_slot", lease, &err),
                Ok(outcome) => panic!("try_acquire_slot with a lease of {lease:?}: {outcome:?}"),
            }
            for n in 0..keys.len() {
                still_free(&backend, keys.slot(n), "try_acquire_slot").await;
            }
        }

        for lease in [HUGE, CENTURY] {
            let key = fresh_name("lease-acquire");
            let before = harness.backend_now();
            let result = backend
                .try_acquire(request(&key, OwnerToken::random(), "node", lease).with_db_time(true))
                .await;
            match result {
                Ok(AcquireOutcome::Acquired(granted)) => {
                    honoured(harness, "try_acquire", lease, granted.expires_at, before);
                    let held = state(&backend, &key).await;
                    let expires_at = held.leader().map(|holder| holder.expires_at);
                    let expires_at = expires_at.expect("the granted lease is held");
                    honoured(harness, "state", lease, expires_at, before);
                    assert_eq!(
                        backend
                            .release(ReleaseRequest::new(&granted, Duration::ZERO))
                            .await
                            .ok(),
                        Some(ReleaseOutcome::Released)
                    );
                }
                Err(err) if lease != CENTURY => {
                    refused("try_acquire", lease, &err);
                    still_free(&backend, &key, "try_acquire").await;
                }
                other => panic!("try_acquire with a lease of {lease:?}: {other:?}"),
            }
        }
    });
}

/// `extend` and `extend_batch` with a lease the store cannot hold are permanent errors
/// and leave the lease as it was; a huge renewal is honoured exactly or refused so; a
/// release whose minimum lease is beyond any time keeps the lock no longer than its
/// expiry.
pub fn unrepresentable_leases_are_refused_on_extend<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("lease-extend");
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node", LONG_LEASE).with_db_time(true),
        )
        .await;
        for lease_time in UNREPRESENTABLE {
            match backend
                .extend(Renewal::new(&lease, lease_time).with_db_time(true))
                .await
            {
                Err(err) => refused("extend", lease_time, &err),
                Ok(outcome) => panic!("extend with a lease of {lease_time:?}: {outcome:?}"),
            }
            unchanged(harness, &backend, &lease, "extend").await;
            let batch = backend
                .extend_batch(&[Renewal::new(&lease, lease_time).with_db_time(true)])
                .await;
            match batch.as_slice() {
                [Err(err)] => refused("extend_batch", lease_time, err),
                other => panic!("extend_batch with a lease of {lease_time:?}: {other:?}"),
            }
            unchanged(harness, &backend, &lease, "extend_batch").await;
        }

        match backend
            .release(ReleaseRequest::new(&lease, Duration::MAX))
            .await
        {
            Ok(ReleaseOutcome::Released) => {
                let state = state(&backend, &key).await;
                if let Some(holder) = state.leader() {
                    assert!(
                        holder.expires_at <= lease.expires_at + harness.clock_tolerance(),
                        "a release never keeps the lock past its lease: {holder:?}"
                    );
                }
            }
            Err(err) => {
                refused("release", Duration::MAX, &err);
                unchanged(harness, &backend, &lease, "release").await;
            }
            other => panic!("release with a minimum lease of Duration::MAX: {other:?}"),
        }

        let key = fresh_name("lease-extend");
        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node", LONG_LEASE).with_db_time(true),
        )
        .await;
        let before = harness.backend_now();
        match backend
            .extend(Renewal::new(&lease, HUGE).with_db_time(true))
            .await
        {
            Ok(leader_core::ExtendOutcome::Extended { expires_at }) => {
                honoured(harness, "extend", HUGE, expires_at, before);
            }
            Err(err) => {
                refused("extend", HUGE, &err);
                unchanged(harness, &backend, &lease, "extend").await;
            }
            Ok(other) => panic!("extend with a lease of {HUGE:?}: {other:?}"),
        }
        let _ = backend
            .release(ReleaseRequest::new(&lease, Duration::ZERO))
            .await;
    });
}

/// Five locks held under `prefix` on `backend`, and the cursor it made after the first of
/// them in a listing by pages of one.
async fn made_cursor<B: AsyncLockBackend>(backend: &B, prefix: &str) -> ListCursor {
    for i in 0..5 {
        let key = LockName::new(format!("{prefix}{i}")).expect("a valid name");
        must_acquire(
            backend,
            request(&key, OwnerToken::random(), "node", LONG_LEASE),
        )
        .await;
    }
    let page = backend
        .list(&ListRequest::new(prefix).with_limit(1))
        .await
        .unwrap_or_else(|err| panic!("list failed: {err}"));
    match page.next {
        Some(cursor) => cursor,
        None => panic!(
            "five locks in pages of one need a cursor after the first page: {:?}",
            page.locks
        ),
    }
}

fn bad_cursor(what: &str, cursor: &str, result: Result<leader_core::ListPage, Error>) {
    match result {
        Err(err) => assert!(
            !err.is_transient(),
            "a {what} cursor ({cursor:?}) must be a permanent error, got {err:?}"
        ),
        Ok(page) => {
            panic!("a {what} cursor ({cursor:?}) must be refused, not answered with {page:?}")
        }
    }
}

/// `list` refuses a cursor it did not make for this listing: garbled text, a cursor of
/// another prefix's listing, a cursor of another kind of backend.
pub fn list_refuses_cursors_it_did_not_make<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let base = fresh_name("cursor");
        let (mine, other) = (format!("{base}:a:"), format!("{base}:b:"));
        let cursor = made_cursor(&backend, &mine).await;
        let ours = backend
            .list(&ListRequest::new(mine.clone()).after(cursor.clone()))
            .await;
        assert!(ours.is_ok(), "its own cursor resumes the listing: {ours:?}");

        let text = cursor.as_str();
        let mangled: String = std::iter::once('~').chain(text.chars().skip(1)).collect();
        for garbled in [
            String::new(),
            "garbled".to_owned(),
            "\u{0}\u{1}".to_owned(),
            "-1".to_owned(),
            "99999999999999999999999999".to_owned(),
            "1:2:3:4".to_owned(),
            mangled,
        ] {
            let resumed = ListRequest::new(mine.clone()).after(ListCursor::new(garbled.clone()));
            bad_cursor("garbled", &garbled, backend.list(&resumed).await);
        }

        let elsewhere = ListRequest::new(other.clone()).after(cursor.clone());
        bad_cursor(
            "another prefix's",
            cursor.as_str(),
            backend.list(&elsewhere).await,
        );

        if backend.name() != "memory" {
            let memory = InMemoryBackend::new();
            for i in 0..2 {
                let key = LockName::new(format!("{mine}{i}")).expect("a valid name");
                let request = request(&key, OwnerToken::random(), "node", LONG_LEASE);
                let taken = LockBackend::try_acquire(&memory, request);
                assert!(matches!(taken, Ok(AcquireOutcome::Acquired(_))));
            }
            let page = LockBackend::list(&memory, &ListRequest::new(mine.clone()).with_limit(1));
            let foreign = page.ok().and_then(|page| page.next);
            let foreign = foreign.expect("the memory backend pages two locks in pages of one");
            let resumed = ListRequest::new(mine.clone()).after(foreign.clone());
            bad_cursor(
                "memory backend's",
                foreign.as_str(),
                backend.list(&resumed).await,
            );
        }
    });
}
