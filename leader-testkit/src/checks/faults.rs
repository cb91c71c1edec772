//! A server backend whose server is gone: every call fails closed, with a typed,
//! transient error naming the lock, within its operation timeout; never a hang.
//!
//! The caller hurts the server (a server it started for the
//! test: kill or pause it) and hands over the backend; these functions only call and check.

use std::time::{Duration, Instant};

use leader_core::{
    AcquireRequest, AsyncLockBackend, Error, Lease, LockBackend, OwnerToken, ReleaseRequest,
    Renewal,
};

use crate::harness::fresh_name;
use crate::runner::{Runner, ThreadRunner};

/// The lease time the calls below ask for.
const LEASE: Duration = Duration::from_secs(30);

/// `result` is a backend error on the lock `key` (its [`Error::lock_key`]), transient or
/// not as `transient` says, whose text names the backend `backend_name`.
///
/// # Panics
///
/// When it is not.
#[track_caller]
pub fn assert_backend_error<T: std::fmt::Debug>(
    result: Result<T, Error>,
    key: &str,
    transient: bool,
    backend_name: &str,
) {
    let err = result.expect_err("expected a backend error");
    assert!(matches!(err, Error::Backend(_)), "{err:?}");
    assert_eq!(err.lock_key(), Some(key), "{err}");
    assert_eq!(err.is_transient(), transient, "{err}");
    assert!(err.to_string().contains(backend_name), "{err}");
}

/// Runs `call` (`what`, for the message) and checks that it failed within `bound` with a
/// transient backend error on `key`, as [`assert_backend_error`] says.
///
/// # Panics
///
/// When it took `bound` or longer, or failed otherwise (or not at all).
#[track_caller]
pub fn fails_fast<T: std::fmt::Debug>(
    what: &str,
    key: &str,
    bound: Duration,
    backend_name: &str,
    call: impl FnOnce() -> Result<T, Error>,
) {
    let started = Instant::now();
    let result = call();
    let took = started.elapsed();
    assert!(took < bound, "{what} took {took:?}, bound {bound:?}");
    assert_backend_error(result, key, true, backend_name);
}

/// With the server of `backend` gone (killed, or paused) while `lease` is held: each call
/// on the lease's lock — `try_acquire` by another owner, `extend` (on the backend's clock
/// if `use_db_time`), `release`, `state` — and `try_acquire` of a fresh lock fail within
/// `bound` with a transient backend error naming their lock and `backend_name`; so do
/// the async calls, on a plain thread (`futures::executor`) and, with the testkit's
/// features, on tokio (current-thread) and smol.
///
/// # Panics
///
/// When a call succeeds, takes `bound` or longer, or fails otherwise.
pub fn a_stopped_server_fails_closed_within_the_timeout<B>(
    backend: &B,
    lease: &Lease,
    bound: Duration,
    use_db_time: bool,
    backend_name: &str,
) where
    B: LockBackend + AsyncLockBackend,
{
    let key = &lease.key;
    let held = key.as_str();
    let other = OwnerToken::random();
    let fails = |what: &str, key: &str, call: &dyn Fn() -> Result<String, Error>| {
        fails_fast(what, key, bound, backend_name, call);
    };
    fails("blocking try_acquire", held, &|| {
        let request = AcquireRequest::new(key, other, "node-b", LEASE);
        LockBackend::try_acquire(backend, request).map(|outcome| format!("{outcome:?}"))
    });
    fails("blocking extend", held, &|| {
        LockBackend::extend(
            backend,
            Renewal::new(lease, LEASE).with_db_time(use_db_time),
        )
        .map(|outcome| format!("{outcome:?}"))
    });
    fails("blocking release", held, &|| {
        LockBackend::release(backend, ReleaseRequest::new(lease, Duration::ZERO))
            .map(|outcome| format!("{outcome:?}"))
    });
    fails("blocking state", held, &|| {
        LockBackend::state(backend, key).map(|state| format!("{state:?}"))
    });
    let fresh = fresh_name("stopped-other");
    fails(
        "blocking try_acquire of a free lock",
        fresh.as_str(),
        &|| {
            let request = AcquireRequest::new(&fresh, OwnerToken::random(), "node-b", LEASE);
            LockBackend::try_acquire(backend, request).map(|outcome| format!("{outcome:?}"))
        },
    );

    let async_calls = AsyncCalls {
        backend,
        lease,
        use_db_time,
        fails: &fails,
    };
    async_calls.fail_on(&ThreadRunner, "a thread");
    #[cfg(feature = "tokio")]
    async_calls.fail_on(&crate::runner::TokioRunner::current_thread(), "tokio");
    #[cfg(feature = "smol")]
    async_calls.fail_on(&crate::runner::SmolRunner, "smol");
}

/// Checks one call: its name, its lock, the call.
type Fails<'a> = &'a dyn Fn(&str, &str, &dyn Fn() -> Result<String, Error>);

/// The async calls on a lease of a stopped server.
struct AsyncCalls<'a, B> {
    backend: &'a B,
    lease: &'a Lease,
    use_db_time: bool,
    fails: Fails<'a>,
}

impl<B: AsyncLockBackend> AsyncCalls<'_, B> {
    /// `try_acquire` by another owner, `extend` and `state` through the async API on
    /// `runner` (`on`, for the messages).
    fn fail_on<R: Runner>(&self, runner: &R, on: &str) {
        let AsyncCalls {
            backend,
            lease,
            use_db_time,
            fails,
        } = *self;
        let key = &lease.key;
        fails(&format!("async try_acquire on {on}"), key.as_str(), &|| {
            let request = AcquireRequest::new(key, OwnerToken::random(), "node-b", LEASE);
            runner
                .block_on(AsyncLockBackend::try_acquire(backend, request))
                .map(|outcome| format!("{outcome:?}"))
        });
        fails(&format!("async extend on {on}"), key.as_str(), &|| {
            runner
                .block_on(AsyncLockBackend::extend(
                    backend,
                    Renewal::new(lease, LEASE).with_db_time(use_db_time),
                ))
                .map(|outcome| format!("{outcome:?}"))
        });
        fails(&format!("async state on {on}"), key.as_str(), &|| {
            runner
                .block_on(AsyncLockBackend::state(backend, key))
                .map(|state| format!("{state:?}"))
        });
    }
}
