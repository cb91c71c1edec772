//! Short runs of the binary: broken workers must be caught, healthy ones must pass.
//!
//! They need `redis-server` (and `secantusd-rs` for MongoDB, `etcd` for etcd) on `PATH`: without them a
//! test prints a skip line, or fails under `LEADER_TEST_REQUIRE_SERVERS=1`. The runs go
//! one at a time (each starts several processes and servers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Whether `binary` is on `PATH` or in `~/.cargo/bin` (where the fixtures look too).
fn installed(binary: &str) -> bool {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.iter().any(|dir| dir.join(binary).is_file())
}

/// `true` when every binary is there; otherwise a skip line, or a failure when servers
/// are required.
fn servers(binaries: &[&str]) -> bool {
    let missing: Vec<&str> = binaries.iter().copied().filter(|b| !installed(b)).collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("LEADER_TEST_REQUIRE_SERVERS").as_deref() != Ok("1"),
        "{missing:?} not installed but LEADER_TEST_REQUIRE_SERVERS=1 (scripts/services.sh install)"
    );
    eprintln!("skipped: {missing:?} not installed (scripts/services.sh install)");
    false
}

/// Runs the binary; returns its exit code and its final `chaos:` line.
fn run(name: &str, args: &[&str]) -> (Option<i32>, String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("chaos-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let output = Command::new(env!("CARGO_BIN_EXE_leader-chaos"))
        .args(args)
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with("chaos: "))
        .unwrap_or_else(|| panic!("no chaos: line (logs in {})", dir.display()))
        .to_owned();
    (output.status.code(), line)
}

/// The figure `name` of a `chaos:` line.
fn figure(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .parse()
        .unwrap()
}

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
