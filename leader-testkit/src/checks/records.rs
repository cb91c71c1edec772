//! Records: `read_record` and `write_record` (the **Records** part of the SPI's
//! `# Contract`), the compare-and-set register the scheduler claims its ticks with.

use std::sync::Arc;
use std::time::Duration;

use leader_core::{
    AsyncLockBackend, ForceReleaseOutcome, LockName, MAX_RECORD_LEN, OwnerToken, RecordWrite,
    RecordWriteOutcome, ReleaseOutcome, ReleaseRequest, StoredRecord,
};

use super::{LONG_LEASE, must_acquire, request};
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

async fn write<B: AsyncLockBackend>(
    backend: &B,
    key: &LockName,
    expected: Option<u64>,
    value: &str,
) -> RecordWriteOutcome {
    let write = RecordWrite::new(key, expected, value).expect("a value within the limit");
    backend
        .write_record(write)
        .await
        .unwrap_or_else(|err| panic!("write_record failed: {err}"))
}

async fn read<B: AsyncLockBackend>(backend: &B, key: &LockName) -> Option<StoredRecord> {
    backend
        .read_record(key)
        .await
        .unwrap_or_else(|err| panic!("read_record failed: {err}"))
}

fn conflict_shows(outcome: &RecordWriteOutcome, stored: &StoredRecord) -> bool {
    match outcome {
        RecordWriteOutcome::Conflict { current: None } => true,
        RecordWriteOutcome::Conflict {
            current: Some(current),
        } => current == stored,
        _ => false,
    }
}

/// Records: a write lands only over the version it expects, versions count 1, 2, 3, and a
/// write over any other version (none where one exists, an old one, one never written)
/// changes nothing. Values come back byte for byte: quotes, newlines, non-ASCII text, and
/// a value of the longest allowed length.
pub fn records_are_written_by_compare_and_set<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("record");
        assert_eq!(read(&backend, &key).await, None, "a new name has no record");
        assert!(
            matches!(
                write(&backend, &key, Some(1), "x").await,
                RecordWriteOutcome::Conflict { current: None }
            ),
            "a write over a version that was never written must not create the record"
        );
        assert_eq!(read(&backend, &key).await, None);

        let first = "{\"tick\":1,\"note\":\"a \\\"quoted\\\" line\\nand zählung-日本-🚀\"}";
        assert_eq!(
            write(&backend, &key, None, first).await,
            RecordWriteOutcome::Written { version: 1 }
        );
        let v1 = StoredRecord::new(1, first);
        assert_eq!(read(&backend, &key).await.as_ref(), Some(&v1));
        let again = write(&backend, &key, None, "second creator").await;
        assert!(
            conflict_shows(&again, &v1),
            "a second create must conflict and show the record: {again:?}"
        );

        let longest = "r".repeat(MAX_RECORD_LEN);
        assert_eq!(
            write(&backend, &key, Some(1), &longest).await,
            RecordWriteOutcome::Written { version: 2 }
        );
        let v2 = StoredRecord::new(2, longest.clone());
        assert_eq!(read(&backend, &key).await.as_ref(), Some(&v2));
        for stale in [Some(1), Some(3), None] {
            let outcome = write(&backend, &key, stale, "stale").await;
            assert!(
                conflict_shows(&outcome, &v2),
                "a write over {stale:?} while the record is at version 2 must conflict: {outcome:?}"
            );
        }
        assert_eq!(read(&backend, &key).await.as_ref(), Some(&v2));
        assert_eq!(
            write(&backend, &key, Some(2), "").await,
            RecordWriteOutcome::Written { version: 3 },
            "an empty value is a value"
        );
        assert_eq!(
            read(&backend, &key).await,
            Some(StoredRecord::new(3, "")),
            "the empty value is read back as written"
        );
    });
}

/// Records: concurrent writes over one version have exactly one winner, round after
/// round, and the record holds the winner's value.
pub fn racing_record_writes_have_one_winner<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    let backend = Arc::new(runner.block_on(harness.backend()));
    let key = Arc::new(fresh_name("record-race"));
    let mut version = None;
    for round in 0..50u64 {
        let racers = (0..8)
            .map(|i| {
                let backend = Arc::clone(&backend);
                let key = Arc::clone(&key);
                async move {
                    let value = format!("round {round} racer {i}");
                    let write = RecordWrite::new(&key, version, &value).expect("short value");
                    (value.clone(), backend.write_record(write).await)
                }
            })
            .collect();
        let outcomes = runner.race(racers);
        let errors: Vec<_> = outcomes
            .iter()
            .filter_map(|(_, o)| o.as_ref().err())
            .collect();
        assert!(errors.is_empty(), "round {round}: errors {errors:?}");
        let winners: Vec<_> = outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Ok(RecordWriteOutcome::Written { .. })))
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let (value, outcome) = winners[0];
        let next = version.map_or(1, |v| v + 1);
        assert_eq!(
            outcome.as_ref().ok(),
            Some(&RecordWriteOutcome::Written { version: next })
        );
        let stored = runner.block_on(read(&*backend, &key));
        assert_eq!(stored, Some(StoredRecord::new(next, value.clone())));
        version = Some(next);
    }
}

/// Records live apart from locks: the same name may be a lock and a record; acquiring,
/// releasing, force-releasing and expiring the lock leave the record as it was, and
/// writing the record leaves the lock's holder and fencing token as they were.
pub fn records_live_apart_from_locks<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let key = fresh_name("record-lock");
        assert_eq!(
            write(&backend, &key, None, "kept").await,
            RecordWriteOutcome::Written { version: 1 }
        );
        let kept = Some(StoredRecord::new(1, "kept"));

        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-a", LONG_LEASE),
        )
        .await;
        assert_eq!(read(&backend, &key).await, kept, "acquire left the record");
        assert_eq!(
            write(&backend, &key, Some(1), "written while held").await,
            RecordWriteOutcome::Written { version: 2 }
        );
        let holder = backend.state(&key).await.unwrap();
        let holder = holder.leader().expect("the record write left the holder");
        assert_eq!(holder.fencing_token, lease.fencing_token);
        assert_eq!(
            backend
                .release(ReleaseRequest::new(&lease, Duration::ZERO))
                .await
                .unwrap(),
            ReleaseOutcome::Released
        );
        let kept = Some(StoredRecord::new(2, "written while held"));
        assert_eq!(read(&backend, &key).await, kept, "release left the record");

        let lease = must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-b", LONG_LEASE),
        )
        .await;
        assert!(matches!(
            backend.force_release(&key).await.unwrap(),
            ForceReleaseOutcome::Released(_)
        ));
        assert_eq!(
            read(&backend, &key).await,
            kept,
            "force release left the record"
        );
        assert!(lease.fencing_token > holder.fencing_token);

        let short = harness.short_lease();
        must_acquire(
            &backend,
            request(&key, OwnerToken::random(), "node-c", short),
        )
        .await;
        harness.expire(short);
        assert!(backend.state(&key).await.unwrap().leader().is_none());
        assert_eq!(read(&backend, &key).await, kept, "expiry left the record");

        // A record of a name that was never a lock, and a lock with no record.
        let lock_only = fresh_name("lock-only");
        must_acquire(
            &backend,
            request(&lock_only, OwnerToken::random(), "node-d", LONG_LEASE),
        )
        .await;
        assert_eq!(
            read(&backend, &lock_only).await,
            None,
            "a lock is no record"
        );
    });
}
