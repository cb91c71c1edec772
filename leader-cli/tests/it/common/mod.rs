//! Running the `leader` binary: one-shot commands with a deadline, and long-running
//! children (`acquire`, `watch`) whose output lines are read as they come.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

/// How long any one command may take, however loaded the machine.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// A lock name no other test of this process uses: `cli-<pid>-<tag>-<n>`.
pub(crate) fn fresh(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "cli-{}-{tag}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `leader --url URL ARGS...`, with `LEADER_URL` cleared.
pub(crate) fn leader(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leader"));
    command
        .env_remove("LEADER_URL")
        .arg("--url")
        .arg(url)
        .args(args);
    command
}

/// What a finished command did.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) took: Duration,
}

impl Ran {
    /// Panics unless the exit code is `code`.
    pub(crate) fn expect_code(self, code: i32) -> Self {
        assert_eq!(self.code, code, "exit code; {self:#?}");
        self
    }

    /// Stdout as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {self:#?}"))
    }
}

/// Runs `command` to the end (stdin closed), killing it after [`DEADLINE`].
pub(crate) fn run(command: Command) -> Ran {
    let started = Instant::now();
    let mut running = Running::spawn(command);
    let (status, stdout, stderr) = running.wait(DEADLINE);
    Ran {
        code: code(status),
        stdout,
        stderr,
        took: started.elapsed(),
    }
}

fn code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| panic!("leader died of a signal: {status:?}"))
}

/// A long-running `leader` (acquire, watch): its stdout lines arrive on a channel; it is
/// killed if the test drops it still running.
#[derive(Debug)]
pub(crate) struct Running {
    child: Child,
    lines: Receiver<String>,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// Starts `command` with stdin closed.
    pub(crate) fn spawn(mut command: Command) -> Self {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start leader");
        Running::new(child)
    }

    fn new(mut child: Child) -> Self {
        let stdout = child.stdout.take().expect("piped stdout");
        let (line_tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if line_tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let (err_tx, stderr) = mpsc::channel();
        thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            let _ = err_tx.send(text);
        });
        Running {
            child,
            lines,
            stderr,
            seen: Vec::new(),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line of stdout, waiting at most [`DEADLINE`].
    pub(crate) fn line(&mut self) -> String {
        match self.lines.recv_timeout(DEADLINE) {
            Ok(line) => {
                self.seen.push(line.clone());
                line
            }
            Err(err) => {
                let _ = self.child.kill();
                let stderr = self.stderr.recv_timeout(DEADLINE).unwrap_or_default();
                panic!(
                    "no line from leader ({err}); lines so far: {:?}; stderr: {stderr}",
                    self.seen
                );
            }
        }
    }

    /// The next line of stdout, as JSON.
    pub(crate) fn json_line(&mut self) -> serde_json::Value {
        let line = self.line();
        serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
    }

    /// Sends SIGTERM (as `kill` would).
    pub(crate) fn terminate(&self) {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits for the exit (at most `within`), and returns the code, the rest of stdout and
    /// stderr.
    pub(crate) fn finish(mut self, within: Duration) -> Ran {
        let started = Instant::now();
        let (status, stdout, stderr) = self.wait(within);
        Ran {
            code: code(status),
            stdout,
            stderr,
            took: started.elapsed(),
        }
    }

    fn wait(&mut self, within: Duration) -> (ExitStatus, String, String) {
        let give_up = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for leader") {
                break status;
            }
            if Instant::now() >= give_up {
                let _ = self.child.kill();
                let stderr = self.stderr.recv_timeout(DEADLINE).unwrap_or_default();
                panic!(
                    "leader did not exit within {within:?}; lines: {:?}; stderr: {stderr}",
                    self.seen
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        // The reader threads end at end of file.
        let mut stdout = String::new();
        while let Ok(line) = self.lines.recv_timeout(DEADLINE) {
            stdout.push_str(&line);
            stdout.push('\n');
        }
        let stderr = self.stderr.recv_timeout(DEADLINE).unwrap_or_default();
        (status, stdout, stderr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
