//! Read/write locks on the async elector (`AsyncReadWriteLocks`), each body run on tokio
//! (both flavours), async-std and smol: waiting, the writer's intent withdrawn when it
//! gives up or its future is dropped, renewals. The store's side is the contract suite's.

use std::time::Duration;

use futures_lite::FutureExt;
use leader_async::{AsyncLeaderElector, AsyncReadWriteLocks};
use leader_core::{Error, InMemoryBackend, LeaderElectionOptions, LeaseMode};
use leader_testkit::{Runner, eventually, within};

leader_testkit::on_every_runtime!(
    a_waiting_writer_gets_in_when_the_readers_leave,
    a_writer_that_gives_up_withdraws_its_intent,
    a_dropped_write_withdraws_its_intent,
    holds_are_renewed_while_their_guards_live,
);

fn locks(backend: &InMemoryBackend, wait: Duration) -> AsyncReadWriteLocks<InMemoryBackend> {
    let options = LeaderElectionOptions::default().with_wait_time(wait);
    AsyncReadWriteLocks::new(&AsyncLeaderElector::new(backend.clone(), options).unwrap())
}

fn a_waiting_writer_gets_in_when_the_readers_leave<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let readers = locks(&backend, Duration::ZERO);
    let writers = locks(&backend, Duration::from_secs(30));
    runner.block_on(async {
        let reader = readers.read("report", LeaseMode::watchdog()).await.unwrap();
        let first = reader.fencing_token();
        let write = writers.write("report", LeaseMode::watchdog());
        let leave = async {
            eventually("the writer's intent", Duration::from_secs(10), || {
                backend_intent(&backend, "report")
            })
            .await;
            let late = readers.read("report", LeaseMode::watchdog()).await;
            assert!(matches!(late, Err(Error::NotAcquired { .. })), "{late:?}");
            reader.release().await;
            std::future::pending().await
        };
        let writer = within(Duration::from_secs(20), write.or(leave))
            .await
            .expect("the writer got in once the reader left")
            .unwrap();
        assert!(writer.fencing_token() > first);
    });
}

fn backend_intent(backend: &InMemoryBackend, name: &str) -> bool {
    use leader_core::{LockName, SharedLockBackend};
    let key = LockName::new(name).unwrap();
    backend.state_shared(&key).unwrap().intent.is_some()
}

fn a_writer_that_gives_up_withdraws_its_intent<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let readers = locks(&backend, Duration::ZERO);
    let writer = locks(&backend, Duration::from_millis(100));
    runner.block_on(async {
        let _reading = readers.read("cache", LeaseMode::watchdog()).await.unwrap();
        let gave_up = writer.write("cache", LeaseMode::watchdog()).await;
        assert!(
            matches!(gave_up, Err(Error::NotAcquired { .. })),
            "{gave_up:?}"
        );
        // Withdrawn before `write` returned, not left to lapse with its lease.
        assert!(!backend_intent(&backend, "cache"));
        readers
            .read("cache", LeaseMode::watchdog())
            .await
            .unwrap()
            .release()
            .await;
    });
}

fn a_dropped_write_withdraws_its_intent<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let readers = locks(&backend, Duration::ZERO);
    let writer = locks(&backend, Duration::from_secs(60));
    runner.block_on(async {
        let _reading = readers.read("index", LeaseMode::watchdog()).await.unwrap();
        let cancelled = within(
            Duration::from_millis(300),
            writer.write("index", LeaseMode::watchdog()),
        )
        .await;
        assert!(
            cancelled.is_none(),
            "the write was still waiting when dropped"
        );
        eventually(
            "the dropped writer's intent withdrawn",
            Duration::from_secs(10),
            || !backend_intent(&backend, "index"),
        )
        .await;
        readers
            .read("index", LeaseMode::watchdog())
            .await
            .unwrap()
            .release()
            .await;
    });
}

fn holds_are_renewed_while_their_guards_live<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let options = LeaderElectionOptions::default()
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_millis(600));
    let rw = AsyncReadWriteLocks::new(&AsyncLeaderElector::new(backend, options).unwrap());
    runner.block_on(async {
        let writer = rw.write("renewed", LeaseMode::watchdog()).await.unwrap();
        let lost = within(Duration::from_millis(1_500), writer.context().lost()).await;
        assert!(lost.is_none(), "renewed for two leases");
        assert!(rw.state("renewed").await.unwrap().writer.is_some());
        writer.release().await;
        assert!(rw.state("renewed").await.unwrap().is_free());
    });
}
