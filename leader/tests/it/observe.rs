//! Observers on every backend: the blocking iterator and the async stream (tokio, smol)
//! each see the lock as it is, then an acquisition by whom with which token, a release,
//! and an expiry within the poll interval of the lease's end; a group's observer names
//! the slot. On the backends that notify releases, another node's release reaches an
//! observer that would not poll for a minute.

use crate::on_every_backend;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::common::notified::{Notified, must_acquire};
use leader::{
    AnyBackend, AsyncLeaderElector, AsyncObserver, ChangeKind, LeaderChange, LeaderElectionOptions,
    LeaderElector, LeaseMode, Shutdown,
};
use leader_core::{AsyncLockBackend, Backend, InMemoryBackend, LockBackend, ReleaseRequest};
use leader_rig::{Call, CountingBackend, Fault, FaultyBackend, Op};
use leader_testkit::fresh_name;

const POLL: Duration = Duration::from_millis(200);

/// The next change, or a panic naming what was awaited.
fn next(changes: &Receiver<LeaderChange>, what: &str) -> LeaderChange {
    match changes.recv_timeout(Duration::from_secs(10)) {
        Ok(change) => change,
        Err(RecvTimeoutError::Timeout) => panic!("no change seen while awaiting {what}"),
        Err(RecvTimeoutError::Disconnected) => panic!("the observer ended awaiting {what}"),
    }
}

/// How late after a lease's end its expiry may be seen: the poll interval and the read,
/// and on etcd the second and a half it may take to drop an expired lease's keys.
fn expiry_slack(backend: &AnyBackend) -> Duration {
    match backend.name() {
        "etcd" => POLL + Duration::from_millis(2500),
        _ => POLL + Duration::from_millis(500),
    }
}

/// The changes of `lock` as `observe` sees them, driven by the test: acquire, release,
/// a lease left to expire.
fn sees_each_change(backend: AnyBackend, changes: Receiver<LeaderChange>, lock: &str) {
    let initial = next(&changes, "the initial state");
    assert_eq!(initial.kind, ChangeKind::Initial);
    assert_eq!(initial.lock_name, lock);
    assert!(initial.holder.is_none(), "{initial:?}");

    let options = LeaderElectionOptions::default().with_node_id("node-a");
    let elector = LeaderElector::new(backend.clone(), options).unwrap();
    let guard = elector.acquire(lock, LeaseMode::watchdog()).unwrap();
    let acquired = next(&changes, "the acquisition");
    assert_eq!(acquired.kind, ChangeKind::Acquired, "{acquired:?}");
    let holder = acquired.holder.clone().unwrap();
    assert_eq!(holder.leader_id, "node-a");
    assert_eq!(holder.fencing_token, guard.fencing_token());

    let token = guard.fencing_token();
    guard.release().unwrap();
    let released = next(&changes, "the release");
    assert_eq!(released.kind, ChangeKind::Released, "{released:?}");
    assert_eq!(released.holder.unwrap().fencing_token, token);

    // A lease nobody renews: seen going once it ran out, soon after.
    let key = elector.observed_key(lock).unwrap();
    let lease = must_acquire(&backend, &key, "node-b", Duration::from_secs(1));
    let acquired = next(&changes, "node-b's acquisition");
    assert_eq!(acquired.kind, ChangeKind::Acquired);
    assert_eq!(acquired.holder.unwrap().fencing_token, lease.fencing_token);
    let expired = next(&changes, "the expiry");
    assert_eq!(expired.kind, ChangeKind::Expired, "{expired:?}");
    let ends = expired.holder.as_ref().unwrap().expires_at;
    let late = expired.seen_at.duration_since(ends).unwrap_or_default();
    assert!(
        late < expiry_slack(&backend),
        "an expiry seen {late:?} after the lease ended"
    );
}

fn a_blocking_observer_sees_each_change(backend: AnyBackend) {
    let elector = LeaderElector::new(backend.clone(), LeaderElectionOptions::default()).unwrap();
    let lock = fresh_name("observed").to_string();
    let shutdown = Shutdown::new();
    let observer = elector
        .observe(&lock)
        .unwrap()
        .with_poll_interval(POLL)
        .until(&shutdown);
    let (tx, changes) = mpsc::channel();
    let thread = pump_blocking(observer, tx);
    sees_each_change(backend, changes, &lock);
    shutdown.trigger();
    thread.join().unwrap();
}

/// Sends each change `observer` sees on `tx`, from a thread of its own, until it ends or
/// nobody listens.
fn pump_blocking(
    observer: impl Iterator<Item = Result<LeaderChange, leader::Error>> + Send + 'static,
    tx: mpsc::Sender<LeaderChange>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for change in observer {
            if tx.send(change.unwrap()).is_err() {
                return;
            }
        }
    })
}

/// Runs a future to its end on a runtime of the caller's choice.
type BlockOn = fn(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>);

/// [`pump_blocking`] for an async observer, on a runtime (`block_on`) of its own thread.
fn pump_async<B: AsyncLockBackend + 'static>(
    mut observer: AsyncObserver<B>,
    tx: mpsc::Sender<LeaderChange>,
    block_on: BlockOn,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        block_on(Box::pin(async move {
            while let Some(change) = observer.next().await {
                if tx.send(change.unwrap()).is_err() {
                    return;
                }
            }
        }));
    })
}

/// The async observer's stream, on a runtime of its own thread.
fn an_async_observer_sees_each_change_on(backend: AnyBackend, block_on: BlockOn) {
    let elector =
        AsyncLeaderElector::new(backend.clone(), LeaderElectionOptions::default()).unwrap();
    let lock = fresh_name("observed").to_string();
    let shutdown = Shutdown::new();
    let observer = elector
        .observe(&lock)
        .unwrap()
        .with_poll_interval(POLL)
        .until(&shutdown);
    let (tx, changes) = mpsc::channel();
    let thread = pump_async(observer, tx, block_on);
    sees_each_change(backend, changes, &lock);
    shutdown.trigger();
    thread.join().unwrap();
}

/// Runs `future` to its end on a current-thread tokio runtime of its own.
fn block_on_tokio(future: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future);
}

fn an_async_observer_sees_each_change_on_tokio(backend: AnyBackend) {
    an_async_observer_sees_each_change_on(backend, block_on_tokio);
}

fn an_async_observer_sees_each_change_on_smol(backend: AnyBackend) {
    an_async_observer_sees_each_change_on(backend, smol::block_on);
}

fn a_group_observer_names_the_slot_that_changed(backend: AnyBackend) {
    let options = LeaderElectionOptions::default().with_node_id("node-a");
    let group = LeaderElector::new(backend, options)
        .unwrap()
        .group(3)
        .unwrap();
    let name = fresh_name("observed-group").to_string();
    let mut changes = group.observe(&name).unwrap().with_poll_interval(POLL);
    let initial: Vec<LeaderChange> = changes.by_ref().take(3).map(Result::unwrap).collect();
    let names: Vec<&str> = initial.iter().map(|c| c.lock_name.as_str()).collect();
    assert_eq!(
        names,
        [name.clone(), format!("{name}#1"), format!("{name}#2")]
    );

    let ran = group
        .run_if_leader_with(&name, |lease| {
            let acquired = changes.next().unwrap().unwrap();
            assert_eq!(acquired.kind, ChangeKind::Acquired);
            assert_eq!(acquired.slot, lease.slot());
            assert_eq!(acquired.lock_name, initial[lease.slot() as usize].lock_name);
            let holder = acquired.holder.unwrap();
            assert_eq!(holder.fencing_token, lease.fencing_token());
            Ok::<_, std::convert::Infallible>(lease.slot())
        })
        .unwrap();
    let slot = ran.value().copied().expect("a free group elects");
    let released = changes.next().unwrap().unwrap();
    assert_eq!((released.kind, released.slot), (ChangeKind::Released, slot));
}

on_every_backend!(
    a_blocking_observer_sees_each_change,
    an_async_observer_sees_each_change_on_tokio,
    an_async_observer_sees_each_change_on_smol,
    a_group_observer_names_the_slot_that_changed,
);

/// Another node's release reaches an observer that polls once a minute, through the
/// backend's notification: seen within a second, and without a read of the lock (the
/// notification names the lease that ended).
fn a_release_is_pushed_to_observers(kind: &str) {
    let Some(servers) = Notified::on(kind, "observed_locks") else {
        return;
    };
    let observing = CountingBackend::new(servers.listening());
    let reads = observing.counter();
    let holder = servers.backend(false);
    let elector = LeaderElector::new(observing, LeaderElectionOptions::default()).unwrap();
    let lock = fresh_name("pushed");
    let lease = must_acquire(&holder, &lock, "node-b", Duration::from_secs(30));
    let mut changes = elector
        .observe(lock.as_str())
        .unwrap()
        .with_poll_interval(Duration::from_secs(60));
    let initial = changes.next().unwrap().unwrap();
    assert_eq!(initial.holder.unwrap().fencing_token, lease.fencing_token);
    assert_eq!(reads.calls(Call::State), 1, "the initial read");
    // The poll interval is a minute: only the notification the release sends can wake
    // the observer. The reads are counted as each change arrives, before the next.
    let (tx, seen) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        for change in changes {
            let change = change.unwrap();
            let read = reads.calls(Call::State);
            if change.kind != ChangeKind::Initial
                && tx.send((change, Instant::now(), read)).is_err()
            {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    let released_at = Instant::now();
    LockBackend::release(&holder, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    let (change, at, read) = seen
        .recv_timeout(Duration::from_secs(5))
        .unwrap_or_else(|_| panic!("the release was not pushed to the observer within 5 s"));
    assert_eq!(change.kind, ChangeKind::Released, "{change:?}");
    assert_eq!(
        change.holder.as_ref().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    assert_eq!(
        read, 1,
        "the release was handed over before any read after it"
    );
    let after = at.duration_since(released_at);
    assert!(
        after < Duration::from_secs(1),
        "seen {after:?} after the release"
    );
    assert!(SystemTime::now() >= change.seen_at);
    drop(seen);
    // The observer thread ends at its next change (or with the process).
    drop(thread);
}

mod pushed {
    #[test]
    fn redis() {
        super::a_release_is_pushed_to_observers("redis");
    }
    #[test]
    fn redis_cluster() {
        super::a_release_is_pushed_to_observers("redis_cluster");
    }
    #[test]
    fn postgres() {
        super::a_release_is_pushed_to_observers("postgres");
    }
    #[test]
    fn etcd() {
        super::a_release_is_pushed_to_observers("etcd");
    }
    #[test]
    fn mongodb() {
        super::a_release_is_pushed_to_observers("mongodb");
    }
}

/// How an observer is started for `a_read_answered_after_the_lease_ended_sees_an_expiry`:
/// on `backend`, polling every `POLL` until `shutdown`, sending its changes on the way.
type StartObserver = fn(
    FaultyBackend<InMemoryBackend>,
    String,
    Shutdown,
    mpsc::Sender<LeaderChange>,
) -> JoinHandle<()>;

/// The observer meets a store that answers its reads only after the lease it watches has
/// ended: each read waits 1.5 s before it is served, so the read that goes out while the
/// 1 s lease still runs finds it gone. The lease ran out: an expiry, not a release.
/// (Judged by when the read went out, as the observers did, it showed as released.)
fn a_read_answered_after_the_lease_ended_sees_an_expiry(start: StartObserver) {
    let backend = FaultyBackend::new(InMemoryBackend::new());
    let lock = fresh_name("late-read");
    let shutdown = Shutdown::new();
    let (tx, changes) = mpsc::channel();
    let observer = start(backend.clone(), lock.to_string(), shutdown.clone(), tx);
    let initial = next(&changes, "the initial state");
    assert!(initial.holder.is_none(), "{initial:?}");
    let lease = must_acquire(&backend, &lock, "node-b", Duration::from_secs(1));
    let acquired = next(&changes, "node-b's acquisition");
    assert_eq!(acquired.kind, ChangeKind::Acquired, "{acquired:?}");
    // The next read goes out within the poll interval, well before the lease ends; the
    // store serves it only after.
    backend.set(Op::State, Fault::Delay(Duration::from_millis(1500)));
    let ended = next(&changes, "the end of node-b's lease");
    backend.clear(Op::State);
    assert_eq!(ended.kind, ChangeKind::Expired, "{ended:?}");
    assert_eq!(
        ended.holder.as_ref().map(|holder| holder.fencing_token),
        Some(lease.fencing_token)
    );
    assert!(ended.seen_at >= lease.expires_at, "{ended:?}");
    shutdown.trigger();
    observer.join().unwrap();
}

#[test]
fn a_blocking_read_answered_after_the_lease_ended_sees_an_expiry() {
    a_read_answered_after_the_lease_ended_sees_an_expiry(|backend, lock, shutdown, tx| {
        let elector = LeaderElector::new(backend, LeaderElectionOptions::default()).unwrap();
        let observer = elector
            .observe(&lock)
            .unwrap()
            .with_poll_interval(POLL)
            .until(&shutdown);
        pump_blocking(observer, tx)
    });
}

#[test]
fn an_async_read_answered_after_the_lease_ended_sees_an_expiry() {
    a_read_answered_after_the_lease_ended_sees_an_expiry(|backend, lock, shutdown, tx| {
        let elector = AsyncLeaderElector::new(backend, LeaderElectionOptions::default()).unwrap();
        let observer = elector
            .observe(&lock)
            .unwrap()
            .with_poll_interval(POLL)
            .until(&shutdown);
        pump_async(observer, tx, block_on_tokio)
    });
}
