//! `release --force` asks on a terminal and frees only the holder it showed: when the
//! holder changes while the question waits (A leaves, B takes the lock), the answer `y`
//! releases nothing and the command exits 1. The terminal is a pseudo-terminal made by
//! util-linux `script`; the store is a SQLite file.

use crate::common;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Instant;

use crate::common::{Running, fresh, leader, run};

/// `leader ARGS...` on a pseudo-terminal: what it prints (stdout and stderr, merged by the
/// terminal) arrives in chunks, since a question ends without a newline.
struct OnTerminal {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<Vec<u8>>,
    seen: String,
}

impl OnTerminal {
    fn spawn(url: &str, args: &[&str]) -> Self {
        let quote = |arg: &str| format!("'{}'", arg.replace('\'', r"'\''"));
        let mut line = vec![
            quote(env!("CARGO_BIN_EXE_leader")),
            quote("--url"),
            quote(url),
        ];
        line.extend(args.iter().map(|arg| quote(arg)));
        let mut child = Command::new("script")
            .args(["-q", "-e", "-f", "-c", &line.join(" "), "/dev/null"])
            .env_remove("LEADER_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("util-linux `script` runs the CLI on a pseudo-terminal");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, output) = mpsc::channel();
        thread::spawn(move || {
            let mut buffer = [0; 4096];
            while let Ok(read @ 1..) = stdout.read(&mut buffer) {
                if tx.send(buffer[..read].to_vec()).is_err() {
                    return;
                }
            }
        });
        OnTerminal {
            child,
            stdin,
            output,
            seen: String::new(),
        }
    }

    /// Waits until the output so far contains `text`.
    fn wait_for(&mut self, text: &str) {
        let give_up = Instant::now() + common::DEADLINE;
        while !self.seen.contains(text) {
            let left = give_up.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.seen.push_str(&String::from_utf8_lossy(&chunk)),
                Err(err) => panic!("no `{text}` from leader ({err}); output: {:?}", self.seen),
            }
        }
    }

    fn answer(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The exit code, and all the output.
    fn finish(mut self) -> (i32, String) {
        let give_up = Instant::now() + common::DEADLINE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < give_up,
                "leader did not exit; output: {:?}",
                self.seen
            );
            thread::sleep(std::time::Duration::from_millis(10));
        };
        while let Ok(chunk) = self.output.recv_timeout(common::DEADLINE) {
            self.seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        let code = status.code().expect("an exit code");
        (code, std::mem::take(&mut self.seen))
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `acquire NAME --hold 60s` as `node`: the holder, and its fencing token.
fn hold(url: &str, name: &str, node: &str) -> (Running, u64) {
    let args = [
        "--json",
        "acquire",
        name,
        "--hold",
        "60s",
        "--lease",
        "15s",
        "--node-id",
        node,
    ];
    let mut holder = Running::spawn(leader(url, &args));
    let acquired = holder.json_line();
    assert_eq!(acquired["event"], "acquired", "{acquired}");
    (holder, acquired["fencing_token"].as_u64().expect("a token"))
}

#[test]
fn a_holder_that_changed_while_asking_is_not_released() {
    let dir = std::env::temp_dir().join(format!("leader-cli-{}-race", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("locks.db").display());
    let name = fresh("race");

    let (a, token_a) = hold(&url, &name, "node-a");
    let mut release = OnTerminal::spawn(&url, &["release", "--force", &name]);
    release.wait_for("Release it? [y/N]");
    assert!(
        release.seen.contains("node-a") && release.seen.contains(&token_a.to_string()),
        "the question shows holder A and its token: {:?}",
        release.seen
    );

    // Before the answer: A leaves, B takes over.
    a.terminate();
    a.finish(common::DEADLINE).expect_code(0);
    let (b, token_b) = hold(&url, &name, "node-b");
    assert!(token_b > token_a);

    release.answer("y\n");
    let (code, output) = release.finish();
    assert_eq!(code, 1, "a changed holder is an error: {output:?}");
    assert!(
        output.contains("node-b") && output.contains(&token_b.to_string()),
        "the message names the holder now: {output:?}"
    );
    assert!(output.contains("not released"), "{output:?}");

    // B still holds, and keeps its lease to the end of its hold.
    let state = run(leader(&url, &["--json", "state", &name]))
        .expect_code(0)
        .json();
    assert_eq!(state["leader"]["leader_id"], "node-b", "{state}");
    assert_eq!(state["leader"]["fencing_token"], token_b, "{state}");
    b.terminate();
    let held = b.finish(common::DEADLINE).expect_code(0);
    assert!(held.stdout.contains("\"released\""), "{held:#?}");
    let _ = std::fs::remove_dir_all(dir);
}
