//! The store calls, for the backend kit (`leader_core::kit`): each is one short
//! `BEGIN IMMEDIATE` transaction on the file (a batch, one per chunk of [`CHUNK`]
//! requests, the connection given up between chunks), run on the calling thread when
//! blocking, or on a thread of the `blocking` crate's pool when async, so that it works
//! on every runtime without depending on one. A dropped async call does not stop its
//! transaction: it still commits or rolls back whole on its thread, and the electors
//! release an acquisition they gave up on.

use std::future::Future;
use std::time::Instant;

use leader_core::kit::{Call, Failure, Released, Runs, SharedStore, Store, Unsupported, calls};
use leader_core::{
    AcquireOutcome, AcquireRequest, ExtendOutcome, ForceReleaseOutcome, LeaderState, ListPage,
    LockName, RecordWriteOutcome, ReleaseEvents, ReleaseRequest, Renewal, Role, SharedOutcome,
    SharedRequest, SharedState, SlotOutcome, StoredRecord,
};
use rusqlite::Connection;

use crate::backend::SqliteBackend;
use crate::error::OpError;
use crate::operator;
use crate::ops::{self, CHUNK};
use crate::records;
use crate::shared::{self, AcquireShared};
use crate::time::HostClock;

/// A call made of transactions on the file.
pub trait Transactions: Call + 'static {
    /// Runs the call on `db`; `started` is when the caller made it (the busy timeout counts
    /// from then).
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<Self::Output, Failure>;
}

impl<C> Runs<C> for SqliteBackend
where
    C: Transactions,
    C::Output: 'static,
{
    fn run_blocking(&self, call: C) -> Result<C::Output, Failure> {
        call.run(self, Instant::now())
    }

    fn run_async(&self, call: C) -> impl Future<Output = Result<C::Output, Failure>> + Send {
        let (db, started) = (self.clone(), Instant::now());
        ::blocking::unblock(move || call.run(&db, started))
    }
}

/// One transaction: `op` on the connection, its failure the kit's.
fn one<T>(
    db: &SqliteBackend,
    started: Instant,
    op: impl FnOnce(&mut Connection, &HostClock) -> Result<T, OpError>,
) -> Result<T, Failure> {
    db.transaction(started, op).map_err(OpError::into_failure)
}

/// One transaction per chunk of `items`, each request answered on its own; a chunk's
/// transaction that failed as a whole is each of its requests' failure.
fn chunked<I, T>(
    db: &SqliteBackend,
    items: &[I],
    op: impl Fn(&mut Connection, &HostClock, &[I]) -> Result<Vec<Result<T, OpError>>, OpError>,
) -> Vec<Result<T, Failure>> {
    let mut answers = Vec::with_capacity(items.len());
    for chunk in items.chunks(CHUNK) {
        match db.transaction(Instant::now(), |conn, clock| op(conn, clock, chunk)) {
            Ok(chunk_answers) => answers.extend(
                chunk_answers
                    .into_iter()
                    .map(|answer| answer.map_err(OpError::into_failure)),
            ),
            Err(err) => {
                let whole = err.into_failure();
                answers.extend(chunk.iter().map(|_| Err(whole.of_batch())));
            }
        }
    }
    answers
}

impl Transactions for calls::Acquire {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<AcquireOutcome, Failure> {
        one(db, started, |conn, clock| ops::acquire(conn, clock, &self))
    }
}

/// `try_acquire_batch`: one transaction per 500 requests.
#[derive(Debug)]
pub struct AcquireBatch(Vec<calls::Acquire>);

impl Call for AcquireBatch {
    type Output = Vec<Result<AcquireOutcome, Failure>>;
    const NAME: &'static str = "acquire_batch";
}

impl Transactions for AcquireBatch {
    fn run(self, db: &SqliteBackend, _: Instant) -> Result<Self::Output, Failure> {
        Ok(chunked(db, &self.0, ops::acquire_chunk))
    }
}

impl Transactions for calls::Extend {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<ExtendOutcome, Failure> {
        let lease = &self.lease;
        one(db, started, |conn, clock| {
            ops::extend(conn, clock, &lease.key, lease.owner, self.lease_time)
        })
    }
}

/// `extend_batch`: one transaction per 500 renewals.
#[derive(Debug)]
pub struct ExtendBatch(Vec<calls::Extend>);

impl Call for ExtendBatch {
    type Output = Vec<Result<ExtendOutcome, Failure>>;
    const NAME: &'static str = "extend_batch";
}

impl Transactions for ExtendBatch {
    fn run(self, db: &SqliteBackend, _: Instant) -> Result<Self::Output, Failure> {
        Ok(chunked(db, &self.0, ops::extend_chunk))
    }
}

impl Transactions for calls::Release {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<Released, Failure> {
        let lease = &self.lease;
        one(db, started, |conn, clock| {
            ops::release(conn, clock, &lease.key, lease.owner, self.min_lease_time)
        })
    }
}

/// `release_batch`: one transaction per 500 releases.
#[derive(Debug)]
pub struct ReleaseBatch(Vec<calls::Release>);

impl Call for ReleaseBatch {
    type Output = Vec<Result<Released, Failure>>;
    const NAME: &'static str = "release_batch";
}

impl Transactions for ReleaseBatch {
    fn run(self, db: &SqliteBackend, _: Instant) -> Result<Self::Output, Failure> {
        Ok(chunked(db, &self.0, ops::release_chunk))
    }
}

impl Transactions for calls::State {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<LeaderState, Failure> {
        one(db, started, |conn, clock| {
            ops::state(conn, clock, &self.key)
        })
    }
}

impl Transactions for calls::List {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<ListPage, Failure> {
        one(db, started, |conn, clock| {
            operator::list(conn, clock, &self.request)
        })
    }
}

impl Transactions for calls::ForceRelease {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<ForceReleaseOutcome, Failure> {
        one(db, started, |conn, clock| {
            operator::force_release(conn, clock, &self.key, self.only)
        })
    }
}

impl Transactions for calls::ReadRecord {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<Option<StoredRecord>, Failure> {
        one(db, started, |conn, _| records::read(conn, &self.key))
    }
}

impl Transactions for calls::WriteRecord {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<RecordWriteOutcome, Failure> {
        one(db, started, |conn, _| records::write(conn, &self))
    }
}

impl Call for AcquireShared {
    type Output = SharedOutcome;
    const NAME: &'static str = "acquire_shared";

    fn outcome(output: &SharedOutcome) -> &'static str {
        output.as_str()
    }
}

impl Transactions for AcquireShared {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<SharedOutcome, Failure> {
        one(db, started, |conn, clock| {
            shared::acquire(conn, clock, &self)
        })
    }
}

/// `extend_shared`'s arguments, owned.
#[derive(Debug)]
pub struct ExtendShared(calls::Extend, Role);

impl Call for ExtendShared {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend_shared";
}

impl Transactions for ExtendShared {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<ExtendOutcome, Failure> {
        let (renewal, role) = (&self.0, self.1);
        let lease = &renewal.lease;
        one(db, started, |conn, clock| {
            shared::extend(
                conn,
                clock,
                &lease.key,
                lease.owner,
                role,
                renewal.lease_time,
            )
        })
    }
}

/// `release_shared`'s arguments, owned.
#[derive(Debug)]
pub struct ReleaseShared(calls::Release, Role);

impl Call for ReleaseShared {
    type Output = Released;
    const NAME: &'static str = "release_shared";
}

impl Transactions for ReleaseShared {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<Released, Failure> {
        let (release, role) = (&self.0, self.1);
        let lease = &release.lease;
        one(db, started, |conn, clock| {
            shared::release(
                conn,
                clock,
                &lease.key,
                lease.owner,
                role,
                release.min_lease_time,
            )
        })
    }
}

/// `state_shared`'s arguments, owned.
#[derive(Debug)]
pub struct StateShared(LockName);

impl Call for StateShared {
    type Output = SharedState;
    const NAME: &'static str = "state_shared";
}

impl Transactions for StateShared {
    fn run(self, db: &SqliteBackend, started: Instant) -> Result<SharedState, Failure> {
        one(db, started, |conn, clock| {
            shared::state(conn, clock, &self.0)
        })
    }
}

/// Read/write locks: each call one `BEGIN IMMEDIATE` transaction (`state_shared` one read
/// transaction) on `leader_rw` and `leader_rw_holders`, running the kit's
/// `SharedRecord` rules on the host's monotonic clock (see the crate docs, Read/write
/// locks). `use_db_time` changes nothing: every time comes from the host's clocks.
impl SharedStore for SqliteBackend {
    type AcquireShared<'a> = AcquireShared;
    fn plan_acquire_shared<'a>(&'a self, request: SharedRequest<'a>) -> AcquireShared {
        AcquireShared {
            acquire: request.request.into(),
            role: request.role,
            max_readers: request.max_readers.get(),
        }
    }

    type ExtendShared<'a> = ExtendShared;
    fn plan_extend_shared<'a>(&'a self, renewal: Renewal<'a>, role: Role) -> ExtendShared {
        ExtendShared(renewal.into(), role)
    }

    type ReleaseShared<'a> = ReleaseShared;
    fn plan_release_shared<'a>(&'a self, release: ReleaseRequest<'a>, role: Role) -> ReleaseShared {
        ReleaseShared(release.into(), role)
    }

    type StateShared<'a> = StateShared;
    fn plan_state_shared<'a>(&'a self, key: &'a LockName) -> StateShared {
        StateShared(key.clone())
    }
}

/// The calls own what they send (an async call moves to a pool thread).
impl Store for SqliteBackend {
    type Acquire<'a> = calls::Acquire;
    fn plan_acquire<'a>(&'a self, request: AcquireRequest<'a>) -> calls::Acquire {
        request.into()
    }

    type AcquireBatch<'a> = AcquireBatch;
    /// One transaction per 500 requests (see the crate docs, Batches), each request
    /// answered as `try_acquire` would answer it.
    fn plan_acquire_batch<'a>(
        &'a self,
        requests: &'a [AcquireRequest<'a>],
    ) -> Option<AcquireBatch> {
        Some(AcquireBatch(calls::each(requests)))
    }

    type Slot<'a> = Unsupported<SlotOutcome>;

    type Extend<'a> = calls::Extend;
    /// `use_db_time` changes nothing: every time comes from the host's clocks.
    fn plan_extend<'a>(&'a self, renewal: Renewal<'a>) -> calls::Extend {
        renewal.into()
    }

    type ExtendBatch<'a> = ExtendBatch;
    /// One transaction per 500 renewals, each answered as `extend` would answer it.
    fn plan_extend_batch<'a>(&'a self, renewals: &'a [Renewal<'a>]) -> Option<ExtendBatch> {
        Some(ExtendBatch(calls::each(renewals)))
    }

    /// A batch renews its leases in one transaction (per chunk), so that one lease's
    /// renewal can only wait where all of them would: for the file's write lock.
    fn extend_batch_is_native(&self) -> bool {
        true
    }

    type Release<'a> = calls::Release;
    fn plan_release<'a>(&'a self, release: ReleaseRequest<'a>) -> calls::Release {
        release.into()
    }

    type ReleaseBatch<'a> = ReleaseBatch;
    /// One transaction per 500 releases, each answered as `release` would answer it.
    fn plan_release_batch<'a>(
        &'a self,
        releases: &'a [ReleaseRequest<'a>],
    ) -> Option<ReleaseBatch> {
        Some(ReleaseBatch(calls::each(releases)))
    }

    fn local_waiters(&self) -> Option<&ReleaseEvents> {
        Some(self.events())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use leader_core::{
        Error, Lease, LockBackend, LockName, OwnerToken, RecordWrite, ReleaseOutcome,
    };
    use rusqlite::params;

    use super::*;

    /// A backend on a file of its own; dropped with the directory.
    struct Fixture {
        backend: SqliteBackend,
        dir: std::path::PathBuf,
    }

    impl Fixture {
        fn new(what: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "leader-sqlite-{what}-{}-{}",
                std::process::id(),
                rand::random::<u32>()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let backend = SqliteBackend::open(dir.join("locks.db")).unwrap();
            Fixture { backend, dir }
        }

        /// Counts the commits on the backend's connection from now on.
        fn count_commits(&self) -> Arc<AtomicUsize> {
            let commits = Arc::new(AtomicUsize::new(0));
            let counted = Arc::clone(&commits);
            self.backend.with_connection(|conn| {
                conn.commit_hook(Some(move || {
                    counted.fetch_add(1, Ordering::Relaxed);
                    false
                }));
            });
            commits
        }
    }

    impl Fixture {
        /// What the backend's connection is asked to do from now on, as its statements are
        /// prepared: the changes of `synchronous`, the transaction steps and the writes, in
        /// order (a write of several columns once).
        fn watch_writes(&self) -> Arc<parking_lot::Mutex<Vec<String>>> {
            use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
            let seen = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
            let log = Arc::clone(&seen);
            self.backend.with_connection(|conn| {
                conn.authorizer(Some(move |context: AuthContext<'_>| {
                    let step = match context.action {
                        AuthAction::Pragma {
                            pragma_name: "synchronous",
                            pragma_value: Some(value),
                        } => format!("synchronous = {value}"),
                        AuthAction::Transaction { operation } => format!("{operation:?}"),
                        AuthAction::Insert { table_name }
                        | AuthAction::Update { table_name, .. }
                        | AuthAction::Delete { table_name } => format!("write {table_name}"),
                        _ => return Authorization::Allow,
                    };
                    let mut log = log.lock();
                    if log.last() != Some(&step) {
                        log.push(step);
                    }
                    Authorization::Allow
                }));
            });
            seen
        }
    }

    /// A record write (a scheduler's tick claim or outcome) must survive a power cut, so
    /// its transaction commits with `synchronous = FULL`, which syncs the WAL; the lock
    /// operations, which a reboot expires anyway, stay on `NORMAL`.
    #[test]
    fn a_record_is_written_with_synchronous_full_and_locks_with_normal() {
        let fixture = Fixture::new("durable-records");
        let backend = &fixture.backend;
        let key = LockName::new("nightly").unwrap();
        let seen = fixture.watch_writes();
        let write = RecordWrite::new(&key, None, "{}").unwrap();
        LockBackend::write_record(backend, write).unwrap();
        assert_eq!(
            std::mem::take(&mut *seen.lock()),
            [
                "synchronous = FULL",
                "Begin",
                "write leader_records",
                "Unknown", // COMMIT
                "synchronous = NORMAL",
            ]
        );
        let sync: i64 = backend
            .with_connection(|conn| conn.query_row("PRAGMA synchronous", [], |row| row.get(0)))
            .unwrap();
        assert_eq!(sync, 1, "NORMAL again after the record write");

        let request =
            AcquireRequest::new(&key, OwnerToken::random(), "node", Duration::from_secs(30));
        assert!(matches!(
            backend.try_acquire(request).unwrap(),
            AcquireOutcome::Acquired(_)
        ));
        let steps = std::mem::take(&mut *seen.lock());
        assert!(
            !steps.iter().any(|step| step.starts_with("synchronous")),
            "{steps:?}"
        );
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn names(n: usize) -> Vec<LockName> {
        (0..n)
            .map(|i| LockName::new(format!("batch-{i}")).unwrap())
            .collect()
    }

    /// 100,000 leases renewed one transaction each took a commit apiece (each a write of
    /// the WAL, each the file's write lock again); a batch takes one per chunk.
    #[test]
    fn a_batch_commits_once_per_chunk() {
        let fixture = Fixture::new("batch-commits");
        let backend = &fixture.backend;
        // Three chunks: two whole ones and one request.
        let requests_made = 2 * CHUNK + 1;
        let names = names(requests_made);
        let owner = OwnerToken::random();
        let lease = Duration::from_secs(30);
        let requests: Vec<_> = names
            .iter()
            .map(|name| AcquireRequest::new(name, owner, "node", lease))
            .collect();

        let commits = fixture.count_commits();
        let leases: Vec<Lease> = backend
            .try_acquire_batch(&requests)
            .into_iter()
            .map(|answer| match answer.unwrap() {
                AcquireOutcome::Acquired(lease) => lease,
                held => panic!("a free lock was not taken: {held:?}"),
            })
            .collect();
        assert_eq!(
            commits.swap(0, Ordering::Relaxed),
            3,
            "acquire of {requests_made}"
        );

        let renewals: Vec<_> = leases.iter().map(|l| Renewal::new(l, lease)).collect();
        for answer in backend.extend_batch(&renewals) {
            assert!(matches!(answer.unwrap(), ExtendOutcome::Extended { .. }));
        }
        assert_eq!(
            commits.swap(0, Ordering::Relaxed),
            3,
            "extend of {requests_made}"
        );

        let releases: Vec<_> = leases
            .iter()
            .map(|l| ReleaseRequest::new(l, Duration::ZERO))
            .collect();
        for answer in backend.release_batch(&releases) {
            assert_eq!(answer.unwrap(), ReleaseOutcome::Released);
        }
        assert_eq!(
            commits.swap(0, Ordering::Relaxed),
            3,
            "release of {requests_made}"
        );
    }

    /// The async forms cut a batch into the same chunks, each on a pool thread, and
    /// answer every request in order.
    #[test]
    fn an_async_batch_commits_once_per_chunk_in_order() {
        use leader_core::AsyncLockBackend;

        let fixture = Fixture::new("async-batch");
        let backend = &fixture.backend;
        let requests_made = 2 * CHUNK + 1;
        let names = names(requests_made);
        let lease = Duration::from_secs(30);
        // Every other lock is held by somebody else first: the answers must line up.
        let other = OwnerToken::random();
        for name in names.iter().step_by(2) {
            let AcquireOutcome::Acquired(_) =
                LockBackend::try_acquire(backend, AcquireRequest::new(name, other, "other", lease))
                    .unwrap()
            else {
                panic!("free")
            };
        }
        let owner = OwnerToken::random();
        let requests: Vec<_> = names
            .iter()
            .map(|name| AcquireRequest::new(name, owner, "node", lease))
            .collect();
        let commits = fixture.count_commits();
        let answers =
            futures_lite::future::block_on(AsyncLockBackend::try_acquire_batch(backend, &requests));
        assert_eq!(
            commits.swap(0, Ordering::Relaxed),
            3,
            "acquire of {requests_made}"
        );
        assert_eq!(answers.len(), requests_made);
        let mut leases = Vec::new();
        for (i, answer) in answers.into_iter().enumerate() {
            match (i % 2, answer.unwrap()) {
                (0, AcquireOutcome::Held(Some(holder))) => assert_eq!(holder.leader_id, "other"),
                (1, AcquireOutcome::Acquired(lease)) => {
                    assert_eq!(lease.key, names[i]);
                    leases.push(lease);
                }
                (_, answer) => panic!("request {i}: {answer:?}"),
            }
        }
        let renewals: Vec<_> = leases.iter().map(|l| Renewal::new(l, lease)).collect();
        let renewed =
            futures_lite::future::block_on(AsyncLockBackend::extend_batch(backend, &renewals));
        assert!(
            renewed
                .iter()
                .all(|r| matches!(r, Ok(ExtendOutcome::Extended { .. })))
        );
        let releases: Vec<_> = leases
            .iter()
            .map(|l| ReleaseRequest::new(l, Duration::ZERO))
            .collect();
        let released =
            futures_lite::future::block_on(AsyncLockBackend::release_batch(backend, &releases));
        assert!(
            released
                .iter()
                .all(|r| matches!(r, Ok(ReleaseOutcome::Released)))
        );
        assert_eq!(
            commits.load(Ordering::Relaxed),
            2,
            "extend and release of {}",
            leases.len()
        );
    }

    /// A request answered with its own error in a batch leaves its lock as it was (as its
    /// single call would), and the requests around it are answered and written.
    #[test]
    fn a_request_failing_in_a_batch_leaves_its_lock_alone() {
        let fixture = Fixture::new("batch-isolation");
        let backend = &fixture.backend;
        let names = names(3);
        let owner = OwnerToken::random();
        let lease = Duration::from_secs(30);
        // The middle lock is held by `owner`, with a fencing token no backend writes: its
        // renewal by a second acquire updates the row, then fails reading the token.
        let AcquireOutcome::Acquired(_) = backend
            .try_acquire(AcquireRequest::new(&names[1], owner, "node", lease))
            .unwrap()
        else {
            panic!("free")
        };
        let expiry = |name: &LockName| -> i64 {
            backend.with_connection(|conn| {
                conn.query_row(
                    "SELECT expires_us FROM leader_locks WHERE name = ?1",
                    params![name.as_str()],
                    |row| row.get(0),
                )
                .unwrap()
            })
        };
        backend.with_connection(|conn| {
            conn.execute(
                "UPDATE leader_locks SET fencing_token = -5 WHERE name = ?1",
                params![names[1].as_str()],
            )
            .unwrap();
        });
        let before = expiry(&names[1]);
        std::thread::sleep(Duration::from_millis(2));

        let requests: Vec<_> = names
            .iter()
            .map(|name| AcquireRequest::new(name, owner, "node", Duration::from_secs(60)))
            .collect();
        let answers = backend.try_acquire_batch(&requests);
        assert!(matches!(answers[0], Ok(AcquireOutcome::Acquired(_))));
        match &answers[1] {
            Err(Error::Backend(err)) => assert!(!err.is_transient(), "{err}"),
            other => panic!("the corrupted row's answer: {other:?}"),
        }
        assert!(matches!(answers[2], Ok(AcquireOutcome::Acquired(_))));
        assert_eq!(
            expiry(&names[1]),
            before,
            "the failed renewal was rolled back"
        );
        let single = backend.try_acquire(requests[1]);
        assert!(
            matches!(single, Err(Error::Backend(_))),
            "the single call fails alike: {single:?}"
        );
        assert_eq!(expiry(&names[1]), before);
    }

    /// An uncontended read or write acquire of a read/write lock is one transaction (one
    /// commit), and so are its renewal and its release; a refused acquire commits nothing
    /// it changed (its transaction writes no row).
    #[test]
    fn a_read_write_lock_call_is_one_transaction() {
        use leader_core::{MaxReaders, SharedLockBackend, SharedOutcome, SharedRequest};

        let fixture = Fixture::new("rw-one-transaction");
        let backend = &fixture.backend;
        let lease = Duration::from_secs(30);
        let commits = fixture.count_commits();
        for (role, name) in [(Role::Read, "rw-read"), (Role::Write, "rw-write")] {
            let key = LockName::new(name).unwrap();
            let request = AcquireRequest::new(&key, OwnerToken::random(), "node", lease);
            let request = SharedRequest::new(request, role, MaxReaders::DEFAULT);
            let SharedOutcome::Acquired(held) = backend.try_acquire_shared(request).unwrap() else {
                panic!("a free lock")
            };
            assert_eq!(commits.swap(0, Ordering::Relaxed), 1, "{role:?} acquire");
            assert!(matches!(
                backend
                    .extend_shared(Renewal::new(&held, lease), role)
                    .unwrap(),
                ExtendOutcome::Extended { .. }
            ));
            assert_eq!(commits.swap(0, Ordering::Relaxed), 1, "{role:?} extend");
            assert_eq!(
                backend
                    .release_shared(ReleaseRequest::new(&held, Duration::ZERO), role)
                    .unwrap(),
                ReleaseOutcome::Released
            );
            assert_eq!(commits.swap(0, Ordering::Relaxed), 1, "{role:?} release");
        }
        let key = LockName::new("rw-read").unwrap();
        let reader = AcquireRequest::new(&key, OwnerToken::random(), "node", lease);
        let reader = SharedRequest::read(reader, MaxReaders::DEFAULT);
        assert!(matches!(
            backend.try_acquire_shared(reader).unwrap(),
            SharedOutcome::Acquired(_)
        ));
        let changes = || -> i64 {
            backend.with_connection(|conn| {
                conn.query_row("SELECT total_changes()", [], |row| row.get(0))
                    .unwrap()
            })
        };
        let before = changes();
        let writer = AcquireRequest::new(&key, OwnerToken::random(), "node", lease);
        let queued = backend
            .try_acquire_shared(SharedRequest::write(writer))
            .unwrap();
        assert!(matches!(queued, SharedOutcome::Queued(_)), "{queued:?}");
        let after_queue = changes();
        assert!(after_queue > before, "the intent is written");
        let late = AcquireRequest::new(&key, OwnerToken::random(), "node", lease);
        let held = backend
            .try_acquire_shared(SharedRequest::read(late, MaxReaders::DEFAULT))
            .unwrap();
        assert!(matches!(held, SharedOutcome::Held(_)), "{held:?}");
        assert_eq!(changes(), after_queue, "a refusal writes no row");
    }
}
