//! Replica acknowledgement on a standalone master with one replica (`REPLICAOF`): a grant
//! reaches the replica before the caller acts; a grant or renewal the replica does not
//! acknowledge in time (it is stopped) is refused as a transient error naming the lock,
//! and a refused grant is released on the master. A record write (the scheduler's claim
//! of a tick) waits for the replica the same way: acknowledged, it is on the replica;
//! not, it is a transient error naming the record, and the next write over the version
//! the caller knows finds out whether the first one landed.

use std::time::{Duration, Instant};

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, BackendErrorKind, Error, ExtendOutcome,
    Lease, LockBackend, LockName, LockStatus, MaxReaders, OwnerToken, RecordWrite,
    RecordWriteOutcome, ReleaseOutcome, ReleaseRequest, Renewal, Role, SharedLockBackend,
    SharedOutcome, SharedRequest,
};
use leader_redis::{ConnectError, RedisBackend, RedisConfig};
use leader_rig::fixtures::{RedisReplica, RedisServer, require};
use leader_testkit::fresh_name;

const ACK_TIMEOUT: Duration = Duration::from_millis(250);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A master and its replica, in sync; `None` (a skip) without redis-server.
fn pair() -> Option<(RedisServer, RedisReplica)> {
    let master = require("redis-server", RedisServer::start())?;
    let replica = require("redis-server replica", RedisReplica::start(&master))?;
    Some((master, replica))
}

fn acked(master: &RedisServer, replicas: u32) -> RedisBackend {
    let config = RedisConfig::default()
        .with_response_timeout(RESPONSE_TIMEOUT)
        .with_replica_acks(replicas, ACK_TIMEOUT);
    RedisBackend::connect_with(&master.url(), config).unwrap()
}

fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "node-a", Duration::from_secs(30))
}

#[track_caller]
fn acquired(outcome: Result<AcquireOutcome, Error>) -> Lease {
    match outcome {
        Ok(AcquireOutcome::Acquired(lease)) => lease,
        other => panic!("expected to acquire, got {other:?}"),
    }
}

/// A transient backend error naming the lock's key and saying how many replicas
/// acknowledged; its text.
#[track_caller]
fn unacknowledged<T: std::fmt::Debug>(
    result: Result<T, Error>,
    backend: &RedisBackend,
    key: &LockName,
    expected: &str,
) -> String {
    match result {
        Err(Error::Backend(err)) => {
            assert_eq!(err.kind(), BackendErrorKind::Transient, "{err}");
            assert_eq!(err.key(), backend.lock_key(key));
            let text = err.to_string();
            assert!(text.contains(key.as_str()), "{text}");
            assert!(text.contains(expected), "{text}");
            text
        }
        other => panic!("expected a transient backend error, got {other:?}"),
    }
}

/// The fencing token the replica's copy of the lock holds (a direct read on the replica).
fn replica_fence(replica: &RedisReplica, backend: &RedisBackend, key: &LockName) -> Option<u64> {
    let client = redis::Client::open(replica.server().url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    redis::cmd("HGET")
        .arg(backend.lock_key(key))
        .arg("fence")
        .query::<Option<String>>(&mut conn)
        .unwrap()
        .map(|fence| fence.parse().unwrap())
}

/// The version of the record `key` on the replica (a direct read on the replica).
fn replica_record_version(
    replica: &RedisReplica,
    backend: &RedisBackend,
    key: &LockName,
) -> Option<u64> {
    let client = redis::Client::open(replica.server().url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    redis::cmd("HGET")
        .arg(backend.record_key(key))
        .arg("version")
        .query::<Option<String>>(&mut conn)
        .unwrap()
        .map(|version| version.parse().unwrap())
}

#[test]
fn an_acknowledged_record_write_is_on_the_replica_when_the_caller_gets_it() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let key = fresh_name("acked-record");
    let write = RecordWrite::new(&key, None, "{\"tick\":1}").unwrap();
    assert_eq!(
        LockBackend::write_record(&backend, write).unwrap(),
        RecordWriteOutcome::Written { version: 1 }
    );
    // No wait: WAIT returned only once the replica had the write.
    assert_eq!(replica_record_version(&replica, &backend, &key), Some(1));
}

#[test]
fn a_record_write_the_stopped_replica_does_not_acknowledge_is_a_transient_error() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let key = fresh_name("unacked-record");
    let first = RecordWrite::new(&key, None, "first").unwrap();
    assert!(matches!(
        LockBackend::write_record(&backend, first),
        Ok(RecordWriteOutcome::Written { version: 1 })
    ));
    replica.server().pause();
    let second = RecordWrite::new(&key, Some(1), "second").unwrap();
    match LockBackend::write_record(&backend, second) {
        Err(Error::Backend(err)) => {
            assert_eq!(err.kind(), BackendErrorKind::Transient, "{err}");
            assert_eq!(err.key(), backend.record_key(&key));
            let text = err.to_string();
            assert!(
                text.contains("the write_record reached 0 of 1 replicas"),
                "{text}"
            );
        }
        other => panic!("expected a transient backend error, got {other:?}"),
    }
    replica.server().resume();
    replica.wait_until_synced(&master).unwrap();
    // It may have landed (it did, on the master): a retry over the version the caller
    // knows is a conflict that shows the stored record, so nothing is written twice.
    let retry = RecordWrite::new(&key, Some(1), "second").unwrap();
    match LockBackend::write_record(&backend, retry).unwrap() {
        RecordWriteOutcome::Conflict {
            current: Some(current),
        } => assert_eq!((current.version, current.value.as_str()), (2, "second")),
        other => panic!("expected the landed write to show, got {other:?}"),
    }
    assert_eq!(replica_record_version(&replica, &backend, &key), Some(2));
}

#[test]
fn an_acknowledged_grant_is_on_the_replica_when_the_caller_gets_it() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let key = fresh_name("acked-grant");
    let lease = acquired(LockBackend::try_acquire(&backend, request(&key)));
    // No wait: WAIT returned only once the replica had the write.
    assert_eq!(
        replica_fence(&replica, &backend, &key),
        Some(lease.fencing_token)
    );
    assert!(matches!(
        LockBackend::extend(
            &backend,
            Renewal::new(&lease, Duration::from_secs(30)).with_db_time(true)
        ),
        Ok(ExtendOutcome::Extended { .. })
    ));
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
}

#[test]
fn a_grant_the_stopped_replica_does_not_acknowledge_is_refused_and_released() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let plain = RedisBackend::connect(&master.url()).unwrap();
    let key = fresh_name("unacked-grant");
    replica.server().pause();
    let started = Instant::now();
    let text = unacknowledged(
        LockBackend::try_acquire(&backend, request(&key)),
        &backend,
        &key,
        "reached 0 of 1 replicas",
    );
    let took = started.elapsed();
    assert!(text.contains("released"), "{text}");
    assert!(
        took >= ACK_TIMEOUT && took < RESPONSE_TIMEOUT,
        "WAIT waits its timeout, no longer: {took:?}"
    );
    // Released on the master: nobody holds it, and another owner takes it at once.
    let state = LockBackend::state(&plain, &key).unwrap();
    assert_eq!(state.status(), LockStatus::Empty, "{state:?}");
    let other = acquired(LockBackend::try_acquire(&plain, request(&key)));
    replica.server().resume();
    replica.wait_until_synced(&master).unwrap();
    // The replica back, the next acknowledged grant goes through and keeps fencing order.
    LockBackend::release(&plain, ReleaseRequest::new(&other, Duration::ZERO)).unwrap();
    let next = acquired(LockBackend::try_acquire(&backend, request(&key)));
    assert!(next.fencing_token > other.fencing_token);
}

#[test]
fn a_renewal_the_stopped_replica_does_not_acknowledge_is_a_transient_error() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let key = fresh_name("unacked-renewal");
    let lease = acquired(LockBackend::try_acquire(&backend, request(&key)));
    replica.server().pause();
    unacknowledged(
        LockBackend::extend(
            &backend,
            Renewal::new(&lease, Duration::from_secs(30)).with_db_time(true),
        ),
        &backend,
        &key,
        "the extend reached 0 of 1 replicas",
    );
    // Not released: the lease is still the holder's until it runs out.
    let state = LockBackend::state(&backend, &key).unwrap();
    assert_eq!(
        state.leader().map(|l| l.fencing_token),
        Some(lease.fencing_token)
    );
    replica.server().resume();
    replica.wait_until_synced(&master).unwrap();
    assert!(matches!(
        LockBackend::extend(
            &backend,
            Renewal::new(&lease, Duration::from_secs(30)).with_db_time(true)
        ),
        Ok(ExtendOutcome::Extended { .. })
    ));
}

#[test]
fn a_batch_the_stopped_replica_does_not_acknowledge_is_refused_and_released_whole() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let keys: Vec<LockName> = (0..3)
        .map(|i| fresh_name(&format!("unacked-batch-{i}")))
        .collect();
    let requests: Vec<_> = keys.iter().map(request).collect();
    replica.server().pause();
    let answers = LockBackend::try_acquire_batch(&backend, &requests);
    assert_eq!(answers.len(), keys.len());
    for (answer, key) in answers.into_iter().zip(&keys) {
        unacknowledged(answer, &backend, key, "reached 0 of 1 replicas");
        let state = LockBackend::state(&backend, key).unwrap();
        assert_eq!(state.status(), LockStatus::Empty, "{state:?}");
    }
    replica.server().resume();
    replica.wait_until_synced(&master).unwrap();
    let answers = LockBackend::try_acquire_batch(&backend, &requests);
    for (answer, key) in answers.into_iter().zip(&keys) {
        let lease = acquired(answer);
        assert_eq!(
            replica_fence(&replica, &backend, key),
            Some(lease.fencing_token)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_side_waits_for_the_replica_too() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let key = fresh_name("async-acked");
    let lease = acquired(AsyncLockBackend::try_acquire(&backend, request(&key)).await);
    assert_eq!(
        replica_fence(&replica, &backend, &key),
        Some(lease.fencing_token)
    );
    AsyncLockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO))
        .await
        .unwrap();
    replica.server().pause();
    unacknowledged(
        AsyncLockBackend::try_acquire(&backend, request(&key)).await,
        &backend,
        &key,
        "reached 0 of 1 replicas",
    );
    let state = AsyncLockBackend::state(&backend, &key).await.unwrap();
    assert_eq!(state.status(), LockStatus::Empty, "{state:?}");
    replica.server().resume();
}

#[test]
fn the_url_sets_it_and_more_replicas_than_there_are_refuse_every_grant() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let key = fresh_name("url-acks");
    let url = format!("{}?replica_acks=1&replica_ack_timeout=150ms", master.url());
    let from_url = RedisBackend::connect(&url).unwrap();
    let lease = acquired(LockBackend::try_acquire(&from_url, request(&key)));
    assert_eq!(
        replica_fence(&replica, &from_url, &key),
        Some(lease.fencing_token)
    );
    LockBackend::release(&from_url, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();

    // Two replicas asked, one there: never granted.
    let two = RedisBackend::connect(
        format!("{}?replica_acks=2&replica_ack_timeout=100", master.url()).as_str(),
    )
    .unwrap();
    unacknowledged(
        LockBackend::try_acquire(&two, request(&key)),
        &two,
        &key,
        "reached 1 of 2 replicas",
    );
    // Off (`replica_acks=0`), or not asked: granted while the replica is stopped.
    replica.server().pause();
    let off = RedisBackend::connect(&format!("{}?replica_acks=0", master.url())).unwrap();
    let lease = acquired(LockBackend::try_acquire(&off, request(&key)));
    LockBackend::release(&off, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap();
    replica.server().resume();

    for bad in [
        "?replica_acks=many",
        "?replica_acks=1&replica_ack_timeout=0ms",
        "?replica_acks=1&replica_ack_timeout=5s",
        "?replica_ack_timeout=50ms",
    ] {
        let result = RedisBackend::connect(&format!("redis://:secret@127.0.0.1:1/{bad}"));
        match result {
            Err(
                err @ (ConnectError::InvalidUrlParameter { .. }
                | ConnectError::InvalidReplicaAcks { .. }),
            ) => {
                assert!(!err.to_string().contains("secret"), "{err}");
            }
            other => panic!("{bad}: expected a typed error, got {other:?}"),
        }
    }
}

/// A transient error naming the read/write lock's key, saying how many replicas
/// acknowledged.
#[track_caller]
fn shared_unacknowledged<T: std::fmt::Debug>(
    result: Result<T, Error>,
    backend: &RedisBackend,
    key: &LockName,
    expected: &str,
) -> String {
    match result {
        Err(Error::Backend(err)) => {
            assert_eq!(err.kind(), BackendErrorKind::Transient, "{err}");
            assert_eq!(err.key(), backend.shared_key(key));
            let text = err.to_string();
            assert!(text.contains(expected), "{text}");
            text
        }
        other => panic!("expected a transient backend error, got {other:?}"),
    }
}

#[test]
fn read_write_grants_and_renewals_wait_for_the_replica_and_unacknowledged_grants_are_released() {
    let Some((master, replica)) = pair() else {
        return;
    };
    let backend = acked(&master, 1);
    let plain = RedisBackend::connect(&master.url()).unwrap();
    let key = fresh_name("acked-rw");
    let ask = |role| SharedRequest::new(request(&key), role, MaxReaders::DEFAULT);
    let reader = match SharedLockBackend::try_acquire_shared(&backend, ask(Role::Read)) {
        Ok(SharedOutcome::Acquired(lease)) => lease,
        other => panic!("expected a grant, got {other:?}"),
    };
    // No wait: WAIT returned only once the replica had the write.
    let on_replica: Option<String> = redis::cmd("GET")
        .arg(backend.shared_key(&key))
        .query(
            &mut redis::Client::open(replica.server().url())
                .unwrap()
                .get_connection()
                .unwrap(),
        )
        .unwrap();
    assert!(
        on_replica.is_some_and(|record| record.contains(&reader.fencing_token.to_string())),
        "the grant is on the replica"
    );

    replica.server().pause();
    let text = shared_unacknowledged(
        SharedLockBackend::try_acquire_shared(&backend, ask(Role::Read)),
        &backend,
        &key,
        "the acquire_shared reached 0 of 1 replicas",
    );
    assert!(text.contains("released"), "{text}");
    shared_unacknowledged(
        SharedLockBackend::extend_shared(
            &backend,
            Renewal::new(&reader, Duration::from_secs(30)),
            Role::Read,
        ),
        &backend,
        &key,
        "the extend_shared reached 0 of 1 replicas",
    );
    // The refused grant was released on the master; the first reader (renewed, not
    // acknowledged) still holds until its lease runs out.
    let state = SharedLockBackend::state_shared(&plain, &key).unwrap();
    let tokens: Vec<u64> = state.readers.iter().map(|r| r.fencing_token).collect();
    assert_eq!(tokens, [reader.fencing_token], "{state:?}");
    // A writer's intent is no grant: it is answered as it is.
    let queued = SharedLockBackend::try_acquire_shared(&backend, ask(Role::Write));
    assert!(matches!(queued, Ok(SharedOutcome::Queued(_))), "{queued:?}");
    // Releases do not wait.
    assert_eq!(
        SharedLockBackend::release_shared(
            &backend,
            ReleaseRequest::new(&reader, Duration::ZERO),
            Role::Read
        )
        .unwrap(),
        ReleaseOutcome::Released
    );
    replica.server().resume();
    replica.wait_until_synced(&master).unwrap();
}
