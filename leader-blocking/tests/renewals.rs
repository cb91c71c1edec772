//! The renewal driver: every auto-extended lease over one backend is renewed by the same
//! threads, in batches, and a released lease is renewed no more; every lease is lost at its
//! own deadline whatever the other renewals do, and one stuck key holds up no other.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leader_blocking::LeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, Backend, BackendError, BackendErrorKind, Error, ExtendOutcome,
    ForceReleaseOutcome, InMemoryBackend, LeaderElectionOptions, LeaderState, LeaseContext,
    LeaseMode, ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome,
    ReleaseOutcome, ReleaseRequest, Renewal, StoredRecord, TenantId,
};
use leader_rig::{Call, CountingBackend, DeadlineWitness, Fault, FaultyBackend, Op};
use leader_testkit::{wait_until, within};

/// The threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

const LEASE: Duration = Duration::from_millis(600);

/// The tests count the process's renewal threads: one at a time, each once the drivers
/// of the test before it are gone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    wait_until("no renewal driver left", Duration::from_secs(10), || {
        threads_named("leader-renew") == 0
    });
    one
}

#[test]
fn hundreds_of_leases_are_renewed_by_two_threads_in_batches() {
    let _one = alone();
    let backend = Arc::new(CountingBackend::new(InMemoryBackend::new()));
    let counter = backend.counter();
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector =
        LeaderElector::with_shared_backend(Arc::clone(&backend), options.clone()).unwrap();
    // Another elector over the same backend value shares its driver.
    let other = LeaderElector::with_shared_backend(Arc::clone(&backend), options).unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };
    let started = Instant::now();
    let guards: Vec<_> = (0..300)
        .map(|n| {
            let elector = if n % 2 == 0 { &elector } else { &other };
            elector.acquire(&format!("job-{n}"), mode).unwrap()
        })
        .collect();
    // A thread takes its name once it runs.
    wait_until("the driver's two threads", Duration::from_secs(10), || {
        threads_named("leader-renew") == 2
    });
    let batches = || counter.calls(Call::ExtendBatch);
    let renewed = || counter.locks(Call::ExtendBatch);
    wait_until("five renewal rounds", Duration::from_secs(10), || {
        renewed() >= 5 * guards.len() as u64
    });
    let rounds = started.elapsed().as_secs_f64() / (LEASE / 3).as_secs_f64();
    assert!(
        (batches() as f64) < 3.0 * rounds.ceil() + 3.0,
        "{} batches over about {rounds:.1} renewal intervals: batched, not a call a lease",
        batches()
    );
    assert_eq!(
        counter.calls(Call::Extend),
        0,
        "the driver renews in batches"
    );
    assert!(
        guards.iter().all(|guard| !guard.is_lost()),
        "every lease kept"
    );
    let held = elector.state("job-0").unwrap();
    assert!(held.leader().is_some(), "{held:?}");
    assert_eq!(threads_named("leader-renew"), 2);

    // A released lease is renewed no more.
    let renewed_before = renewed();
    drop(guards);
    std::thread::sleep(LEASE);
    let after_release = renewed() - renewed_before;
    assert!(
        after_release <= 300,
        "at most the batch in flight: {after_release}"
    );
    assert!(elector.state("job-0").unwrap().leader().is_none());
}

#[test]
fn the_driver_goes_away_with_its_last_lease_and_elector() {
    let _one = alone();
    {
        let elector = LeaderElector::new(
            InMemoryBackend::new(),
            LeaderElectionOptions::default().with_wait_time(Duration::ZERO),
        )
        .unwrap();
        let guard = elector
            .acquire("job", LeaseMode::Watchdog { timeout: LEASE })
            .unwrap();
        wait_until("the driver's two threads", Duration::from_secs(10), || {
            threads_named("leader-renew") == 2
        });
        std::thread::sleep(LEASE);
        assert!(!guard.is_lost());
    }
    wait_until("the driver's threads end", Duration::from_secs(10), || {
        threads_named("leader-renew") == 0
    });
}

/// How late after its deadline a lease's loss may be signalled, beyond how late a plain
/// thread parked until the same deadline woke (the host's own delay, on a loaded machine).
const SIGNAL_BOUND: Duration = Duration::from_millis(150);

/// When `lost()` resolved (not merely the deadline passing: the lease was *marked* lost,
/// which is what wakes the action and counts `leader_lease_lost_total`), within `timeout`.
fn lost_signalled(lease: &LeaseContext, timeout: Duration) -> Option<Instant> {
    futures::executor::block_on(within(timeout, lease.lost())).map(|()| Instant::now())
}

#[track_caller]
fn lost_at_its_deadline(lease: &LeaseContext, what: &str) {
    let deadline = lease.deadline();
    let witness = DeadlineWitness::start(deadline);
    let lost_at = lost_signalled(lease, Duration::from_secs(10))
        .unwrap_or_else(|| panic!("{what}: lost() never resolved"));
    witness.assert_on_time(lost_at, SIGNAL_BOUND, &format!("{what}: lost()"));
}

/// Heals the faulty backend when the test ends, passed or not: no renewal stays stuck to
/// hold up the next test's wait for the drivers to go.
struct HealOnDrop(FaultyBackend<InMemoryBackend>);

impl Drop for HealOnDrop {
    fn drop(&mut self) {
        self.0.heal();
    }
}

#[test]
fn each_lease_is_lost_at_its_own_deadline_while_an_earlier_batch_is_stuck() {
    let _one = alone();
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let _heal = HealOnDrop(faulty.clone());
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = LeaderElector::new(faulty.clone(), options).unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };
    let first = elector.acquire("first", mode).unwrap();
    // Taken 0.7 renewal intervals later: its renewals go in a later batch than first's.
    std::thread::sleep(LEASE / 3 * 7 / 10);
    let second = elector.acquire("second", mode).unwrap();
    // The store stops answering renewals: first's batch is sent and never answered.
    faulty.set(Op::Extend, Fault::Stall);
    lost_at_its_deadline(first.context(), "first");
    lost_at_its_deadline(second.context(), "second");
}

#[test]
fn one_stuck_key_does_not_hold_up_the_renewals_of_the_others() {
    let _one = alone();
    let faulty = FaultyBackend::new(InMemoryBackend::new());
    let _heal = HealOnDrop(faulty.clone());
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let elector = LeaderElector::new(faulty.clone(), options).unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };
    let stuck = elector.acquire("stuck", mode).unwrap();
    let fine = elector.acquire("fine", mode).unwrap();
    // Renewals of one key never come back (a row another client keeps locked); a backend
    // without a native batch renews lease after lease.
    faulty.set_on_key(
        Op::Extend,
        &elector.lock_key("stuck").unwrap(),
        Fault::Stall,
    );
    lost_at_its_deadline(stuck.context(), "the stuck lease");
    assert!(
        lost_signalled(fine.context(), LEASE * 4).is_none(),
        "the other lease was not renewed while one key was stuck"
    );
    assert!(!fine.is_lost());
    let holder = elector.state("fine").unwrap();
    assert_eq!(
        holder.leader().map(|l| l.fencing_token),
        Some(fine.context().fencing_token())
    );
    fine.release().unwrap();
}

#[test]
fn a_batch_lease_waiting_to_run_is_renewed_from_when_it_was_taken() {
    let _one = alone();
    let store = InMemoryBackend::new();
    let options = LeaderElectionOptions::default()
        .with_wait_time(Duration::ZERO)
        .with_lease_time(LEASE)
        .with_auto_extend(true);
    let a = LeaderElector::new(store.clone(), options.clone().with_node_id("a")).unwrap();
    let b = LeaderElector::new(store, options.with_node_id("b")).unwrap();
    let tenants = [TenantId::new("t1").unwrap(), TenantId::new("t2").unwrap()];
    let taken_at = Instant::now();
    let mut won: Vec<_> = a
        .try_acquire_for_tenants("job", &tenants)
        .into_iter()
        .map(|answer| answer.unwrap().expect("a free lock"))
        .collect();
    let late = won.pop().unwrap();
    // Its action starts past two thirds of the first lease...
    std::thread::sleep((taken_at + LEASE * 4 / 5).saturating_duration_since(Instant::now()));
    let outcome = late
        .run(|lease| {
            // ... and runs past the first lease's end.
            std::thread::sleep(
                (taken_at + LEASE * 11 / 10).saturating_duration_since(Instant::now()),
            );
            let other = b
                .for_tenant("t2")
                .unwrap()
                .run_if_leader("job", || ())
                .unwrap();
            Ok::<_, ()>((other, lease.is_lost()))
        })
        .expect("renewed in time, the lease was live when its action started");
    let (other, lost) = outcome.into_value().expect("elected");
    assert_eq!(other, None, "another node was elected while the action ran");
    assert!(!lost, "the lease was lost while the action ran");
    // The other one waits longer than a whole lease before its action runs: still held.
    let waiting = won.pop().unwrap();
    std::thread::sleep((taken_at + LEASE * 3 / 2).saturating_duration_since(Instant::now()));
    assert!(!waiting.is_lost());
    let other = b
        .for_tenant("t1")
        .unwrap()
        .run_if_leader("job", || ())
        .unwrap();
    assert_eq!(other, None, "another node took a lock still waiting to run");
    let outcome = waiting
        .run(|_| Ok::<_, ()>(()))
        .expect("renewed while waiting, the lease was live when its action started");
    assert!(outcome.is_elected() && !outcome.lease_lost(), "{outcome:?}");
}

/// An in-memory store whose native batch of renewals answers one key with a transient
/// error, as PostgreSQL's batch answers a row another session holds locked for a moment,
/// while that key's own `extend` renews it.
#[derive(Debug, Clone)]
struct BusyInBatch {
    inner: InMemoryBackend,
    busy: LockName,
    singles: Arc<AtomicUsize>,
}

impl Backend for BusyInBatch {
    fn name(&self) -> &'static str {
        "busy-in-batch"
    }
}

impl LockBackend for BusyInBatch {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.inner.try_acquire(request)
    }
    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let lease = renewal.lease;
        if lease.key == self.busy {
            self.singles.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.extend(renewal)
    }
    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        renewals
            .iter()
            .map(|renewal| {
                if renewal.lease.key == self.busy {
                    let busy = BackendError::new(
                        self.name(),
                        renewal.lease.key.as_str(),
                        BackendErrorKind::Transient,
                        "its row is locked by another session",
                    );
                    return Err(busy.into());
                }
                self.inner
                    .extend(Renewal::new(renewal.lease, renewal.lease_time))
            })
            .collect()
    }
    fn extend_batch_is_native(&self) -> bool {
        true
    }
    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        self.inner.release(release)
    }
    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.inner.state(key)
    }
    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        LockBackend::list(&self.inner, request)
    }
    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release(key)
    }
    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.inner.force_release_if(key, fencing_token)
    }
    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.inner.read_record(key)
    }
    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        self.inner.write_record(write)
    }
}

#[test]
fn a_lease_its_native_batch_answers_transiently_is_renewed_alone_and_kept() {
    let _one = alone();
    let options = LeaderElectionOptions::default().with_wait_time(Duration::ZERO);
    let singles = Arc::new(AtomicUsize::new(0));
    let busy = BusyInBatch {
        inner: InMemoryBackend::new(),
        busy: LockName::new("busy").unwrap(),
        singles: Arc::clone(&singles),
    };
    let elector = LeaderElector::new(busy, options).unwrap();
    let mode = LeaseMode::Watchdog { timeout: LEASE };
    let held = elector.acquire("busy", mode).unwrap();
    let other = elector.acquire("other", mode).unwrap();
    // Three renewals of each, the busy one's each answered by its batch with an error.
    wait_until("three single renewals", LEASE * 10, || {
        held.is_lost() || singles.load(Ordering::SeqCst) >= 3
    });
    assert!(
        !held.is_lost(),
        "a lease was lost to a transient error of its batch, with {:?} of it left",
        held.context()
            .deadline()
            .saturating_duration_since(Instant::now())
    );
    assert!(!other.is_lost());
    for lease in [&held, &other] {
        let holder = elector.state(lease.context().lock_name()).unwrap();
        assert_eq!(
            holder.leader().map(|l| l.fencing_token),
            Some(lease.context().fencing_token())
        );
    }
    held.release().unwrap();
    other.release().unwrap();
}
