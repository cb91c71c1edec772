//! What the run tests share: finding the servers, running the binary, reading its
//! `chaos:` line.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

pub(crate) static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Whether `binary` is on `PATH` or in `~/.cargo/bin` (where the fixtures look too).
pub(crate) fn installed(binary: &str) -> bool {
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
pub(crate) fn servers(binaries: &[&str]) -> bool {
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

/// The directory the run `name` writes its logs to (emptied when it starts).
pub(crate) fn run_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("chaos-{name}"))
}

/// Runs the binary; returns its exit code and its final `chaos:` line.
pub(crate) fn run(name: &str, args: &[&str]) -> (Option<i32>, String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = run_dir(name);
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

/// The `details:` line of the run `name` (from its `report.txt`).
pub(crate) fn details(name: &str) -> String {
    let report = std::fs::read_to_string(run_dir(name).join("report.txt")).unwrap();
    report
        .lines()
        .find(|l| l.starts_with("details: "))
        .unwrap_or_else(|| panic!("no details: line in {report}"))
        .to_owned()
}

/// The figure `name` of a `chaos:` line (or a `details:` line).
pub(crate) fn figure(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .parse()
        .unwrap()
}
