//! The `leader` binary end to end against every backend: SQLite (a temp file), Redis,
//! Redis Cluster, MongoDB and PostgreSQL, the servers started by `leader_rig::fixtures`.
//!
//! Two scenarios per backend:
//! - `holds_and_watches`: `acquire --hold` in a child, `state` (table and JSON), a `watch`
//!   child that sees the holder then the release when the holder gets SIGTERM;
//! - `lists_and_force_releases`: `list --prefix` and `--tenant` (table and JSON), `release
//!   --force --yes` of a lock held by a child (which reports the lease lost, exit 1), and
//!   `release --force` refused without `--yes` when stdin is not a terminal.

use crate::common;

use crate::common::{Running, fresh, leader, run};
use leader_rig::fixtures;
use serde_json::Value;

/// A holder: `acquire NAME --hold 60s` as `node`, its `acquired` line read.
fn hold(url: &str, extra: &[&str], name: &str, node: &str, lease: &str) -> (Running, u64) {
    let mut args = vec!["--json", "acquire", name, "--hold", "60s", "--lease", lease];
    args.extend(["--node-id", node]);
    args.extend(extra);
    let mut holder = Running::spawn(leader(url, &args));
    let acquired = holder.json_line();
    assert_eq!(acquired["event"], "acquired", "{acquired}");
    assert_eq!(acquired["leader_id"], node, "{acquired}");
    let token = acquired["fencing_token"].as_u64().expect("a token");
    (holder, token)
}

fn holds_and_watches(url: &str) {
    let name = fresh("watch");
    let (holder, token) = hold(url, &[], &name, "node-a", "15s");

    let state = run(leader(url, &["--json", "state", &name]))
        .expect_code(0)
        .json();
    assert_eq!(state["name"], name.as_str(), "{state}");
    assert_eq!(state["status"], "held", "{state}");
    assert_eq!(state["leader"]["leader_id"], "node-a", "{state}");
    assert_eq!(state["leader"]["fencing_token"], token, "{state}");
    assert!(
        state["leader"]["expires_in_ms"].as_u64().unwrap() > 0,
        "{state}"
    );
    let table = run(leader(url, &["state", &name])).expect_code(0).stdout;
    assert!(
        table.contains("held") && table.contains("node-a"),
        "{table}"
    );
    assert!(table.contains(&token.to_string()), "{table}");

    let mut watch = Running::spawn(leader(
        url,
        &["--json", "watch", &name, "--interval", "100ms"],
    ));
    let first = watch.json_line();
    assert_eq!(first["event"], "initial", "{first}");
    assert_eq!(first["leader"]["fencing_token"], token, "{first}");

    // SIGTERM ends the hold cleanly: released, exit 0.
    holder.terminate();
    let held = holder.finish(common::DEADLINE).expect_code(0);
    assert!(held.stdout.contains("\"released\""), "{held:#?}");

    let freed = watch.json_line();
    assert_eq!(freed["event"], "released", "{freed}");
    assert_eq!(freed["status"], "free", "{freed}");
    assert_eq!(freed["leader"], Value::Null, "{freed}");
    assert_eq!(freed["previous"]["leader_id"], "node-a", "{freed}");
    assert_eq!(freed["previous"]["fencing_token"], token, "{freed}");
    watch.terminate();
    watch.finish(common::DEADLINE).expect_code(0);

    // A free lock is an answer, not an error.
    let free = run(leader(url, &["state", &name])).expect_code(0).stdout;
    assert!(free.contains("free"), "{free}");

    reads_and_writes(url);
}

/// Two readers held by children (`acquire --read`), `state --rw` (JSON and table) shows
/// them; a writer that finds them gives up (exit 1) without holding later readers out; the
/// readers released, `acquire --write` holds it alone.
fn reads_and_writes(url: &str) {
    let name = fresh("rw");
    let (reader_a, token_a) = hold(url, &["--read"], &name, "reader-a", "15s");
    let (reader_b, token_b) = hold(url, &["--read"], &name, "reader-b", "15s");
    let state = run(leader(url, &["--json", "state", "--rw", &name]))
        .expect_code(0)
        .json();
    assert_eq!(state["status"], "read", "{state}");
    assert_eq!(state["writer"], Value::Null, "{state}");
    let mut readers: Vec<(String, u64)> = state["readers"]
        .as_array()
        .expect("readers")
        .iter()
        .map(|r| {
            let id = r["leader_id"].as_str().expect("an id").to_owned();
            (id, r["fencing_token"].as_u64().expect("a token"))
        })
        .collect();
    readers.sort();
    let expected = [
        ("reader-a".to_owned(), token_a),
        ("reader-b".to_owned(), token_b),
    ];
    assert_eq!(readers, expected, "{state}");
    let table = run(leader(url, &["state", "--rw", &name]))
        .expect_code(0)
        .stdout;
    assert!(
        table.contains("reader-a") && table.contains("reader-b"),
        "{table}"
    );
    // The exclusive lock of the same name is another lock: free.
    let exclusive = run(leader(url, &["--json", "state", &name]))
        .expect_code(0)
        .json();
    assert_eq!(exclusive["status"], "free", "{exclusive}");

    let writer = leader(
        url,
        &["acquire", &name, "--write", "--hold", "1s", "--wait", "0s"],
    );
    run(writer).expect_code(1);
    let third = hold(url, &["--read"], &name, "reader-c", "15s").0;
    for reader in [reader_a, reader_b, third] {
        reader.terminate();
        reader.finish(common::DEADLINE).expect_code(0);
    }
    let (writer, token_w) = hold(url, &["--write"], &name, "writer", "15s");
    assert!(token_w > token_a.max(token_b), "{token_w}");
    let state = run(leader(url, &["--json", "state", "--rw", &name]))
        .expect_code(0)
        .json();
    assert_eq!(state["status"], "write", "{state}");
    assert_eq!(state["writer"]["fencing_token"], token_w, "{state}");
    writer.terminate();
    writer.finish(common::DEADLINE).expect_code(0);
    let free = run(leader(url, &["state", "--rw", &name]))
        .expect_code(0)
        .stdout;
    assert!(free.contains("free"), "{free}");
}

fn lists_and_force_releases(url: &str) {
    let prefix = format!("{}-", fresh("list"));
    let (a, b) = (format!("{prefix}a"), format!("{prefix}b"));
    // A short lease: the holder of `a` finds out about the forced release within a second.
    let (holder_a, token_a) = hold(url, &[], &a, "node-a", "3s");
    let (_holder_b, token_b) = hold(url, &[], &b, "node-b", "15s");
    let tenant = fresh("tenant");
    let (_holder_t, token_t) = hold(url, &["--tenant", &tenant], "sync", "node-t", "15s");

    // JSON: an array of locks, sorted by name, each once.
    let listed = run(leader(
        url,
        &["--json", "list", "--prefix", &prefix, "--page-size", "1"],
    ))
    .expect_code(0)
    .json();
    let names: Vec<&str> = listed
        .as_array()
        .expect("an array")
        .iter()
        .map(|lock| lock["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, [a.as_str(), b.as_str()], "{listed}");
    assert_eq!(listed[0]["leader"]["fencing_token"], token_a, "{listed}");
    assert_eq!(listed[1]["leader"]["leader_id"], "node-b", "{listed}");
    assert_eq!(listed[1]["leader"]["fencing_token"], token_b, "{listed}");

    let table = run(leader(url, &["list", "--prefix", &prefix]))
        .expect_code(0)
        .stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("EXPIRES IN"),
        "{table}"
    );
    assert!(
        lines[1].starts_with(&a) && lines[1].contains("node-a"),
        "{table}"
    );
    assert!(lines[2].contains(&token_b.to_string()), "{table}");

    // Inside a tenant, names come without the tenant prefix.
    let scoped = run(leader(url, &["--json", "list", "--tenant", &tenant]))
        .expect_code(0)
        .json();
    assert_eq!(scoped[0]["name"], "sync", "{scoped}");
    assert_eq!(scoped[0]["leader"]["fencing_token"], token_t, "{scoped}");
    assert_eq!(scoped.as_array().map(Vec::len), Some(1), "{scoped}");
    let full = format!("tenant:{tenant}:sync");
    let state = run(leader(url, &["--json", "state", &full]))
        .expect_code(0)
        .json();
    assert_eq!(state["leader"]["leader_id"], "node-t", "{state}");
    let empty = run(leader(url, &["list", "--prefix", &format!("{prefix}none")]))
        .expect_code(0)
        .stdout;
    assert!(empty.contains("no locks held"), "{empty}");

    // Without --yes and without a terminal: refused, nothing released.
    let refused = run(leader(url, &["release", "--force", &a])).expect_code(2);
    assert!(refused.stderr.contains("--yes"), "{refused:#?}");
    let still = run(leader(url, &["--json", "state", &a]))
        .expect_code(0)
        .json();
    assert_eq!(still["status"], "held", "{still}");

    let released = run(leader(url, &["--json", "release", "--force", "--yes", &a]))
        .expect_code(0)
        .json();
    assert_eq!(released["released"], true, "{released}");
    assert_eq!(released["leader"]["leader_id"], "node-a", "{released}");
    assert_eq!(released["leader"]["fencing_token"], token_a, "{released}");

    // The holder finds out at its next renewal.
    let lost = holder_a.finish(common::DEADLINE).expect_code(1);
    assert!(lost.stderr.contains("lost the lock"), "{lost:#?}");

    // Releasing a free lock is not an error.
    let again = run(leader(url, &["release", "--force", "--yes", &a])).expect_code(0);
    assert!(again.stdout.contains("free"), "{again:#?}");
    let listed = run(leader(url, &["--json", "list", "--prefix", &prefix]))
        .expect_code(0)
        .json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}

fn sqlite_url(tag: &str) -> (String, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("leader-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    (format!("sqlite://{}", dir.join("locks.db").display()), dir)
}

fn cluster_url(cluster: &fixtures::RedisCluster) -> String {
    let hosts: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|node| node.addr().to_string())
        .collect();
    format!("redis+cluster://{}", hosts.join(","))
}

#[test]
fn sqlite_holds_and_watches() {
    let (url, dir) = sqlite_url("watch");
    holds_and_watches(&url);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sqlite_lists_and_force_releases() {
    let (url, dir) = sqlite_url("list");
    lists_and_force_releases(&url);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn redis_holds_and_watches() {
    let Some(server) = fixtures::shared_redis() else {
        return;
    };
    holds_and_watches(&server.url());
}

#[test]
fn redis_lists_and_force_releases() {
    let Some(server) = fixtures::shared_redis() else {
        return;
    };
    lists_and_force_releases(&server.url());
}

#[test]
fn redis_cluster_holds_and_watches() {
    let Some(cluster) = fixtures::shared_redis_cluster() else {
        return;
    };
    holds_and_watches(&cluster_url(cluster));
}

#[test]
fn redis_cluster_lists_and_force_releases() {
    let Some(cluster) = fixtures::shared_redis_cluster() else {
        return;
    };
    lists_and_force_releases(&cluster_url(cluster));
}

#[test]
fn mongodb_holds_and_watches() {
    let Some(server) = fixtures::shared_mongo() else {
        return;
    };
    holds_and_watches(&server.uri());
}

#[test]
fn mongodb_lists_and_force_releases() {
    let Some(server) = fixtures::shared_mongo() else {
        return;
    };
    lists_and_force_releases(&server.uri());
}

#[test]
fn postgres_holds_and_watches() {
    let Some(server) = fixtures::shared_postgres() else {
        return;
    };
    holds_and_watches(&server.url());
}

#[test]
fn postgres_lists_and_force_releases() {
    let Some(server) = fixtures::shared_postgres() else {
        return;
    };
    lists_and_force_releases(&server.url());
}

#[test]
fn etcd_holds_and_watches() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    holds_and_watches(&server.url());
}

#[test]
fn etcd_lists_and_force_releases() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    lists_and_force_releases(&format!("{}/cli", server.url()));
}
