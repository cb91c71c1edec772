//! Short runs of the binary: broken workers must be caught, healthy ones must pass.
//!
//! They need `redis-server` (and `secantusd-rs` for MongoDB, `etcd` for etcd) on `PATH`: without them a
//! test prints a skip line, or fails under `LEADER_TEST_REQUIRE_SERVERS=1`. The runs go
//! one at a time (each starts several processes and servers).

use crate::common::{figure, run, servers};

#[test]
fn workers_without_the_lock_are_caught() {
    if !servers(&["redis-server"]) {
        return;
    }
    let (code, line) = run(
        "no-lock",
        &[
            "--broken",
            "no-lock",
            "--workers",
            "3",
            "--seconds",
            "5",
            "--faults",
            "none",
        ],
    );
    assert_eq!(code, Some(1), "{line}");
    assert!(figure(&line, "unexplained_overlaps") > 0, "{line}");
    assert!(figure(&line, "duplicate_tokens") > 0, "{line}");
}

#[test]
fn writes_without_the_fence_are_caught() {
    if !servers(&["redis-server"]) {
        return;
    }
    // Pauses of the holder make stale writes: the fence is what refuses them.
    let (code, line) = run(
        "no-fence",
        &[
            "--broken",
            "no-fence",
            // Long sections, so that a pause catches a holder between its two writes.
            "--long-every",
            "4",
            "--workers",
            "3",
            "--seconds",
            "15",
            "--faults",
            "pause",
        ],
    );
    assert_eq!(code, Some(1), "{line}");
    assert!(figure(&line, "stale_writes_accepted") > 0, "{line}");
    assert_eq!(figure(&line, "unexplained_overlaps"), 0, "{line}");
}

#[test]
fn workers_that_do_not_extend_their_leases_are_caught() {
    if !servers(&["redis-server"]) {
        return;
    }
    // Without auto-extension every hold (2–4 leases) loses its lease at its deadline with
    // no fault to explain it; and still no overlap, since the lease ends on the worker's
    // clock before the store lets anyone else in.
    let (code, line) = run(
        "no-extend",
        &[
            "--broken",
            "no-extend",
            "--workers",
            "3",
            "--seconds",
            "6",
            "--faults",
            "none",
        ],
    );
    assert_eq!(code, Some(1), "{line}");
    assert!(figure(&line, "unexplained_losses") > 0, "{line}");
    assert_eq!(figure(&line, "explained_losses"), 0, "{line}");
    assert_eq!(figure(&line, "unexplained_overlaps"), 0, "{line}");
}

#[test]
fn a_healthy_redis_run_passes() {
    if !servers(&["redis-server"]) {
        return;
    }
    let (code, line) = run(
        "redis",
        &[
            "--backend",
            "redis",
            "--workers",
            "4",
            "--seconds",
            "15",
            "--seed",
            "11",
        ],
    );
    assert_eq!(code, Some(0), "{line}");
    assert!(figure(&line, "acquisitions") > 0, "{line}");
    assert!(figure(&line, "faults") > 0, "{line}");
}

#[test]
fn a_healthy_mongodb_run_passes() {
    if !servers(&["redis-server", "secantusd-rs"]) {
        return;
    }
    let (code, line) = run(
        "mongodb",
        &[
            "--backend",
            "mongodb",
            "--workers",
            "4",
            "--seconds",
            "15",
            "--seed",
            "12",
        ],
    );
    assert_eq!(code, Some(0), "{line}");
    assert!(figure(&line, "acquisitions") > 0, "{line}");
    assert!(figure(&line, "faults") > 0, "{line}");
}

#[test]
fn a_healthy_etcd_run_passes() {
    if !servers(&["redis-server", "etcd"]) {
        return;
    }
    // 20 s: some five faults, each of another kind (a run draws every kind once first).
    let (code, line) = run(
        "etcd",
        &[
            "--backend",
            "etcd",
            "--workers",
            "4",
            "--seconds",
            "20",
            "--seed",
            "13",
        ],
    );
    assert_eq!(code, Some(0), "{line}");
    assert!(figure(&line, "acquisitions") > 0, "{line}");
    assert!(figure(&line, "faults") > 0, "{line}");
}

#[test]
fn etcd_workers_without_the_lock_or_the_fence_are_caught() {
    if !servers(&["redis-server", "etcd"]) {
        return;
    }
    let (code, line) = run(
        "etcd-no-lock",
        &[
            "--backend",
            "etcd",
            "--broken",
            "no-lock",
            "--workers",
            "3",
            "--seconds",
            "5",
            "--faults",
            "none",
        ],
    );
    assert_eq!(code, Some(1), "{line}");
    assert!(figure(&line, "unexplained_overlaps") > 0, "{line}");
    assert!(figure(&line, "duplicate_tokens") > 0, "{line}");
    let (code, line) = run(
        "etcd-no-fence",
        &[
            "--backend",
            "etcd",
            "--broken",
            "no-fence",
            // Long sections, so that a pause catches a holder between its two writes.
            "--long-every",
            "4",
            "--workers",
            "3",
            "--seconds",
            "15",
            "--faults",
            "pause",
        ],
    );
    assert_eq!(code, Some(1), "{line}");
    assert!(figure(&line, "stale_writes_accepted") > 0, "{line}");
    assert_eq!(figure(&line, "unexplained_overlaps"), 0, "{line}");
}
