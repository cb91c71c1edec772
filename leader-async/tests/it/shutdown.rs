//! No orphaned lock (guarantee 8 in ARCHITECTURE.md) when a tokio runtime shuts down: its tasks are dropped, queued or half-way,
//! and the releases they leave behind must still reach the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leader_async::AsyncLeaderElector;
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, Backend, BackendError, BackendErrorKind,
    CampaignConfig, Error, ExtendOutcome, ForceReleaseOutcome, InMemoryBackend,
    LeaderElectionOptions, LeaderState, LeaseMode, ListPage, ListRequest, LockBackend, LockName,
    LockStatus, RecordWrite, RecordWriteOutcome, ReleaseOutcome, ReleaseRequest, Renewal,
    StoredRecord,
};
use leader_rig::{Fault, FaultyBackend, Op};
use leader_testkit::{eventually, wait_until};
use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;

fn runtimes() -> [(&'static str, Runtime); 2] {
    [
        (
            "current-thread",
            Builder::new_current_thread().enable_all().build().unwrap(),
        ),
        (
            "multi-thread",
            Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        ),
    ]
}

fn elector(store: &InMemoryBackend) -> AsyncLeaderElector<InMemoryBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id("a")
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(60))
        .with_auto_extend(true);
    AsyncLeaderElector::new(store.clone(), options).unwrap()
}

/// The lock is free well before its 60 s lease would have run out.
fn freed_soon(store: &InMemoryBackend, what: &str) {
    let key = LockName::new("job").unwrap();
    wait_until(what, Duration::from_secs(2), || {
        LockBackend::state(store, &key).unwrap().status() == LockStatus::Empty
    });
}

#[test]
fn a_run_dropped_with_its_runtime_releases_its_lease() {
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let (running, started) = oneshot::channel();
        runtime.block_on(async {
            tokio::spawn(async move {
                a.run_if_leader("job", || async move {
                    running.send(()).unwrap();
                    std::future::pending::<()>().await
                })
                .await
            });
            started.await.unwrap();
        });
        drop(runtime);
        freed_soon(&store, &format!("the release ({flavor})"));
    }
}

#[test]
fn a_guard_dropped_with_its_runtime_releases_its_lease() {
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let (held, acquired) = oneshot::channel();
        runtime.block_on(async {
            tokio::spawn(async move {
                let guard = a.acquire("job", LeaseMode::watchdog()).await.unwrap();
                held.send(()).unwrap();
                std::future::pending::<()>().await;
                drop(guard);
            });
            acquired.await.unwrap();
        });
        drop(runtime);
        freed_soon(&store, &format!("the guard's release ({flavor})"));
    }
}

#[test]
fn a_campaign_whose_runtime_shuts_down_releases_its_term() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1));
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            handle.wait_for_term().await;
            handle
        });
        // A resignation started just before the shutdown, and the shutdown itself.
        let resigning = runtime.spawn(handle.resign());
        drop(resigning);
        drop(runtime);
        freed_soon(&store, &format!("the campaign's release ({flavor})"));
    }
}

#[test]
fn a_campaign_whose_runtime_shuts_down_mid_attempt_releases_what_the_attempt_took() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1));
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        // The store applies the campaign's attempt, and the answer never comes back.
        let stalled = FaultyBackend::new(store.clone());
        stalled.set(Op::Acquire, Fault::ApplyThenStall);
        let options = LeaderElectionOptions::default().with_node_id("a");
        let a = AsyncLeaderElector::new(stalled.clone(), options).unwrap();
        let key = LockName::new("job").unwrap();
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            eventually("the attempt took the lock", Duration::from_secs(5), || {
                LockBackend::state(&store, &key).unwrap().status() != LockStatus::Empty
            })
            .await;
            handle
        });
        assert!(!handle.is_leader(), "the answer is still on its way");
        drop(runtime);
        freed_soon(
            &store,
            &format!("the in-flight attempt's release ({flavor})"),
        );
        drop(handle);
    }
}

/// A ranked campaign dropped with its runtime withdraws its membership record too (in the
/// background, as it releases its term), so its rank stops deferring the others at once.
#[test]
fn a_ranked_campaign_whose_runtime_shuts_down_withdraws_its_record() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1))
        .with_rank(1);
    let prefix = ListRequest::new("job#rank:");
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let a = elector(&store);
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            handle.wait_for_term().await;
            handle
        });
        assert_eq!(LockBackend::list(&store, &prefix).unwrap().locks.len(), 1);
        drop(runtime);
        freed_soon(&store, &format!("the campaign's release ({flavor})"));
        wait_until(
            &format!("the record's release ({flavor})"),
            Duration::from_secs(2),
            || LockBackend::list(&store, &prefix).unwrap().locks.is_empty(),
        );
        drop(handle);
    }
}

/// An in-memory store whose first acquire is answered with an error at once while the
/// store applies it `late` later: a request held in a stalled server's socket, landing
/// when the server goes on.
#[derive(Debug, Clone)]
struct LandsLate {
    inner: InMemoryBackend,
    armed: Arc<AtomicBool>,
    late: Duration,
    /// Set once the late request was applied.
    landed: Arc<AtomicBool>,
}

impl Backend for LandsLate {
    fn name(&self) -> &'static str {
        "lands-late"
    }
}

impl AsyncLockBackend for LandsLate {
    async fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        if !self.armed.swap(false, Ordering::SeqCst) {
            return AsyncLockBackend::try_acquire(&self.inner, request).await;
        }
        let (inner, late, landed) = (self.inner.clone(), self.late, Arc::clone(&self.landed));
        let (key, owner, leader) = (
            request.key.clone(),
            request.owner,
            request.leader_id.to_owned(),
        );
        let lease_time = request.lease_time;
        std::thread::spawn(move || {
            std::thread::sleep(late);
            let request = AcquireRequest::new(&key, owner, &leader, lease_time);
            let taken = LockBackend::try_acquire(&inner, request);
            assert!(
                matches!(taken, Ok(AcquireOutcome::Acquired(_))),
                "{taken:?}"
            );
            landed.store(true, Ordering::SeqCst);
        });
        Err(BackendError::new(
            "lands-late",
            request.key.as_str(),
            BackendErrorKind::Transient,
            "no answer",
        )
        .into())
    }
    async fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        AsyncLockBackend::extend(&self.inner, renewal).await
    }
    async fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        AsyncLockBackend::release(&self.inner, release).await
    }
    async fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        AsyncLockBackend::state(&self.inner, key).await
    }
    async fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        AsyncLockBackend::list(&self.inner, request).await
    }
    async fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        AsyncLockBackend::force_release(&self.inner, key).await
    }
    async fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        AsyncLockBackend::force_release_if(&self.inner, key, fencing_token).await
    }
    async fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        AsyncLockBackend::read_record(&self.inner, key).await
    }
    async fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        AsyncLockBackend::write_record(&self.inner, write).await
    }
}

/// A campaign elected after an attempt whose answer was lost, dropped with its runtime:
/// besides the term, what that attempt may still take is released in the background (as
/// the campaign releases it when a term ends any other way), so when the attempt lands
/// after the term's release the lock does not stay taken by a token nobody holds.
#[test]
fn a_campaign_whose_runtime_shuts_down_releases_what_a_late_attempt_takes() {
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(60))
        .with_heartbeat(Duration::from_secs(1))
        .with_poll_interval(Duration::from_millis(50));
    let late = Duration::from_millis(1500);
    for (flavor, runtime) in runtimes() {
        let store = InMemoryBackend::new();
        let landed = Arc::new(AtomicBool::new(false));
        let backend = LandsLate {
            inner: store.clone(),
            armed: Arc::new(AtomicBool::new(true)),
            late,
            landed: Arc::clone(&landed),
        };
        let options = LeaderElectionOptions::default().with_node_id("a");
        let a = AsyncLeaderElector::new(backend, options).unwrap();
        let handle = runtime.block_on(async {
            let handle = a.campaign("job", config).unwrap();
            handle.wait_for_term().await;
            handle
        });
        assert!(
            !landed.load(Ordering::SeqCst),
            "elected before the first attempt lands"
        );
        drop(runtime);
        freed_soon(&store, &format!("the campaign's release ({flavor})"));
        wait_until(
            &format!("the first attempt to land ({flavor})"),
            late * 2,
            || landed.load(Ordering::SeqCst),
        );
        // It took the lock with the campaign's old owner token: released in the background.
        freed_soon(&store, &format!("the late attempt's release ({flavor})"));
        drop(handle);
    }
}
