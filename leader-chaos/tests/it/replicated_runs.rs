//! Short runs of the binary on the replicated topologies, through failovers: a Redis
//! master and replica behind three Sentinels (asynchronous replication, so a failover
//! may excuse overlaps), and a PostgreSQL primary with a synchronous standby (a
//! promotion loses nothing acknowledged, so nothing excuses an overlap).
//!
//! They need `redis-server` and, for PostgreSQL, `postgres`: without them a test prints
//! a skip line, or fails under `LEADER_TEST_REQUIRE_SERVERS=1`.

use crate::common::{figure, run, run_dir, servers};

/// The `fault` lines of kind `failover` in the run's journal, with their `data=` field.
fn failovers(name: &str, data: &str) -> usize {
    let journal = std::fs::read_to_string(run_dir(name).join("orchestrator.log")).unwrap();
    journal
        .lines()
        .filter(|l| l.contains(&format!("\tfault\tkind=failover\tdata={data}\t")))
        .count()
}

#[test]
fn a_healthy_redis_sentinel_run_passes_through_failovers() {
    if !servers(&["redis-server"]) {
        return;
    }
    // 15 s: the first fault a failover or a pause, then the other; a failover takes some
    // seven seconds (a second to call the master down, the vote, the old master back as
    // a replica), so a run this long has at least one.
    let (code, line) = run(
        "redis-sentinel",
        &[
            "--backend",
            "redis-sentinel",
            "--workers",
            "4",
            "--seconds",
            "15",
            "--seed",
            "15",
            "--faults",
            "failover,pause",
        ],
    );
    assert_eq!(code, Some(0), "{line}");
    assert!(figure(&line, "acquisitions") > 0, "{line}");
    assert!(
        failovers("redis-sentinel", "lose") >= 1,
        "no failover: {line}"
    );
}

#[test]
fn a_postgres_standby_promotion_lets_no_second_holder_in() {
    if !servers(&["redis-server", "postgres"]) {
        return;
    }
    // Promotions only (each a few seconds, the old primary rebuilt as the new one's
    // standby), so that a short run has two: the second promotes the rebuilt standby.
    // No failover of a synchronous standby excuses an overlap, so the run must see none
    // at all, explained or not.
    let (code, line) = run(
        "postgres-standby",
        &[
            "--backend",
            "postgres-standby",
            "--workers",
            "4",
            "--seconds",
            "15",
            "--seed",
            "16",
            "--faults",
            "failover",
        ],
    );
    assert_eq!(code, Some(0), "{line}");
    assert!(figure(&line, "acquisitions") > 0, "{line}");
    assert_eq!(figure(&line, "explained_overlaps"), 0, "{line}");
    assert!(failovers("postgres-standby", "keep") >= 2, "{line}");
}
