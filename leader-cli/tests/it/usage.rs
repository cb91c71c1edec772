//! Exit codes and messages of the `leader` binary for bad input and unreachable servers
//! (exit 2 for usage, 1 for failures), and the flows that need no server (SQLite files).

use crate::common;

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use crate::common::{Running, fresh, leader, run};

/// A port of 127.0.0.1 where nothing listens (bound, then closed).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn sqlite_url() -> (String, tempdir::Dir) {
    let dir = tempdir::Dir::new();
    (
        format!("sqlite://{}", dir.0.join("locks.db").display()),
        dir,
    )
}

mod tempdir {
    pub(crate) struct Dir(pub(crate) std::path::PathBuf);
    impl Dir {
        pub(crate) fn new() -> Self {
            let path =
                std::env::temp_dir().join(format!("leader-cli-usage-{}", super::fresh("db")));
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn a_closed_redis_port_fails_fast_with_a_clear_message_and_no_password() {
    let url = format!("redis://user:secret@127.0.0.1:{}/", closed_port());
    let ran = run(leader(&url, &["state", "x"])).expect_code(1);
    assert!(ran.took < Duration::from_secs(10), "{ran:#?}");
    assert!(ran.stderr.starts_with("leader: error: "), "{ran:#?}");
    assert!(ran.stderr.contains("unreachable"), "{ran:#?}");
    assert!(
        ran.stderr.contains("redis://user:***@127.0.0.1"),
        "{ran:#?}"
    );
    assert!(!ran.stderr.contains("secret"), "{ran:#?}");
    assert_eq!(ran.stderr.lines().count(), 1, "{ran:#?}");
}

#[test]
fn closed_postgres_and_mongodb_ports_fail_within_their_timeouts() {
    let url = format!("postgres://app:secret@127.0.0.1:{}/db", closed_port());
    let ran = run(leader(&url, &["state", "x"])).expect_code(1);
    assert!(ran.took < Duration::from_secs(15), "{ran:#?}");
    assert!(ran.stderr.contains("unreachable"), "{ran:#?}");
    assert!(!ran.stderr.contains("secret"), "{ran:#?}");

    // The MongoDB driver looks for a server for `serverSelectionTimeoutMS` (5 s by default).
    let url = format!(
        "mongodb://app:secret@127.0.0.1:{}/?serverSelectionTimeoutMS=500",
        closed_port()
    );
    let ran = run(leader(&url, &["state", "x"])).expect_code(1);
    assert!(ran.took < Duration::from_secs(15), "{ran:#?}");
    assert!(!ran.stderr.contains("secret"), "{ran:#?}");
}

#[test]
fn bad_urls_are_usage_errors_with_the_password_masked() {
    for url in [
        "mysql://app:hunter2@db/app",
        "redis+cluster://:hunter2@/",
        "redis:/user:hunter2@127.0.0.1/",
        "mongodb://app:hunter2@[::1/",
    ] {
        let ran = run(leader(url, &["state", "x"])).expect_code(2);
        assert!(ran.stderr.starts_with("leader: error: "), "{url}: {ran:#?}");
        assert!(!ran.stderr.contains("hunter2"), "{url}: {ran:#?}");
    }
    let ran = run(leader("mysql://db/app", &["list"])).expect_code(2);
    assert!(
        ran.stderr.contains("unknown backend URL scheme `mysql`"),
        "{ran:#?}"
    );
}

#[test]
fn a_missing_url_is_a_usage_error_and_leader_url_is_read() {
    let ran = run({
        let mut command = Command::new(env!("CARGO_BIN_EXE_leader"));
        command.env_remove("LEADER_URL").args(["state", "x"]);
        command
    })
    .expect_code(2);
    assert!(ran.stderr.contains("LEADER_URL"), "{ran:#?}");

    let (url, _dir) = sqlite_url();
    let ran = run({
        let mut command = Command::new(env!("CARGO_BIN_EXE_leader"));
        command
            .env("LEADER_URL", &url)
            .args(["--json", "state", "x"]);
        command
    })
    .expect_code(0);
    assert_eq!(ran.json()["status"], "free", "{ran:#?}");
}

#[test]
fn bad_names_tenants_durations_and_flags_are_usage_errors() {
    let (url, _dir) = sqlite_url();
    for (args, says) in [
        (&["state", " padded"][..], "bad lock name"),
        (&["state", "a{b}"][..], "bad lock name"),
        (&["state", "job#02"][..], "bad lock name"),
        (&["acquire", "job#2", "--hold", "1s"][..], "bad lock name"),
        (&["state", "tenant:"][..], "--tenant"),
        (&["--tenant", "a:b", "state", "x"][..], "bad tenant"),
        (&["acquire", "x", "--hold", "soon"][..], "--hold"),
        (&["acquire", "x", "--hold", "0s"][..], "above zero"),
        (&["acquire", "x"][..], "--hold"),
        (
            &["acquire", "x", "--hold", "1s", "--node-id", ""][..],
            "node_id",
        ),
        (&["watch", "x", "--interval", "0ms"][..], "above zero"),
        (&["list", "--page-size", "0"][..], "page-size"),
        (&["release", "x"][..], "--force"),
        (&["release", "--force", "x"][..], "--yes"),
        (&["frobnicate"][..], "frobnicate"),
    ] {
        let ran = run(leader(&url, args)).expect_code(2);
        assert!(ran.stderr.contains(says), "{args:?}: {ran:#?}");
    }
}

#[test]
fn a_groups_slot_is_looked_at_and_freed_by_its_name() {
    let (url, _dir) = sqlite_url();
    let slot = format!("{}#2", fresh("group"));
    let ran = run(leader(&url, &["state", &slot])).expect_code(0);
    assert!(ran.stdout.contains("free"), "{ran:#?}");
    let ran = run(leader(&url, &["release", "--force", "--yes", &slot])).expect_code(0);
    assert!(!ran.stdout.is_empty(), "{ran:#?}");
}

#[test]
fn acquire_fails_while_another_node_holds_the_lock_naming_it() {
    let (url, _dir) = sqlite_url();
    let name = fresh("busy");
    let mut holder = Running::spawn(leader(
        &url,
        &["acquire", &name, "--hold", "60s", "--node-id", "node-a"],
    ));
    let acquired = holder.line();
    assert!(acquired.contains("node-a"), "{acquired}");

    let ran = run(leader(
        &url,
        &[
            "acquire",
            &name,
            "--hold",
            "1s",
            "--wait",
            "200ms",
            "--node-id",
            "node-b",
        ],
    ))
    .expect_code(1);
    assert!(ran.stderr.contains("held by `node-a`"), "{ran:#?}");

    holder.terminate();
    let held = holder.finish(common::DEADLINE).expect_code(0);
    assert!(held.stdout.contains("released"), "{held:#?}");

    // Once released, a hold runs to its end by itself and releases.
    let ran = run(leader(&url, &["acquire", &name, "--hold", "100ms"])).expect_code(0);
    assert!(ran.stdout.contains("released"), "{ran:#?}");
}

#[test]
fn help_and_version_exit_zero() {
    let ran = run(leader("memory://", &["--help"])).expect_code(0);
    assert!(ran.stdout.contains("Exit codes"), "{ran:#?}");
    run(leader("memory://", &["--version"])).expect_code(0);
}
