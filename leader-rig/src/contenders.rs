//! Child processes that lead one job in turn while a test breaks the store under them:
//! the fault tests' way of checking that separate processes never act at once and that
//! their fencing tokens only go forward.
//!
//! A test spawns [`Contenders`]: copies of its own test binary, each running that same
//! test, which finds itself a child through [`Contender::from_env`] and runs its elector in
//! [`Contender::run`]. Each child appends every action it ran (fencing token, start and end
//! in microseconds of the host's clock) to a file of its own; the parent reads them
//! ([`Contenders::actions`], [`Contenders::progress`]) while it drives the faults, then
//! stops the children and checks them ([`Contenders::finish`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use leader_rig::contenders::{Action, Contender, Contenders};
//!
//! #[test]
//! fn processes_never_overlap() {
//!     if let Some(child) = Contender::from_env() {
//!         // Connect to `child.url()`, build an elector, and lead:
//!         return child.run(Duration::from_millis(20), || {
//!             Ok::<_, leader_core::Error>(Some(Action::hold(7, Duration::from_millis(10))))
//!         });
//!     }
//!     let contenders = Contenders::spawn("processes_never_overlap", 3, "redis://127.0.0.1/");
//!     contenders.progress(10);
//!     // ... break the store ...
//!     contenders.progress(10);
//!     let actions = contenders.finish();
//!     assert!(actions.len() >= 20);
//! }
//! # fn main() {}
//! ```

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leader_testkit::wait_until;

/// The child's settings, in its environment: the store's URL, its output file, and the
/// file whose existence tells it to stop.
const CHILD_URL: &str = "LEADER_TESTKIT_CONTEND_URL";
const CHILD_OUT: &str = "LEADER_TESTKIT_CONTEND_OUT";
const CHILD_STOP: &str = "LEADER_TESTKIT_CONTEND_STOP";
/// A child gives up this long after it started, whether told to stop or not.
const CHILD_MAX: Duration = Duration::from_secs(120);
/// How long [`Contenders::progress`] waits for the actions it asks for.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(60);

/// One action a child ran while it led.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// The lease's fencing token.
    pub token: u64,
    /// When the action started, µs since the epoch on the host's clock.
    pub start: u128,
    /// When it ended.
    pub end: u128,
}

impl Action {
    /// An action of the lease with `token` that holds the lock for `hold` (sleeping).
    pub fn hold(token: u64, hold: Duration) -> Action {
        let start = micros_now();
        std::thread::sleep(hold);
        Action {
            token,
            start,
            end: micros_now(),
        }
    }

    /// Whether it ran at some time while `other` ran.
    pub fn overlaps(&self, other: &Action) -> bool {
        self.start < other.end && other.start < self.end
    }

    fn parse(line: &str) -> Option<Action> {
        let mut words = line.trim_end().split(' ');
        let action = Action {
            token: words.next()?.parse().ok()?,
            start: words.next()?.parse().ok()?,
            end: words.next()?.parse().ok()?,
        };
        words.next().is_none().then_some(action)
    }
}

/// The host's clock in µs since the epoch (the unit of [`Action`]'s times).
pub fn micros_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros())
}

/// The child processes of one test.
#[derive(Debug)]
pub struct Contenders {
    dir: PathBuf,
    stop: PathBuf,
    files: Vec<PathBuf>,
    children: Vec<Child>,
}

impl Contenders {
    /// Starts `count` copies of this test binary running the test `test` (its full name,
    /// as `--exact` takes it), each to connect to `url`.
    ///
    /// # Panics
    ///
    /// When the children cannot be started (a test helper: the panic is the test's
    /// failure).
    pub fn spawn(test: &str, count: usize, url: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "leader-contend-{}-{}",
            std::process::id(),
            test.replace("::", "-")
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let stop = dir.join("stop");
        let _ = std::fs::remove_file(&stop);
        let files: Vec<PathBuf> = (0..count).map(|i| dir.join(format!("child-{i}"))).collect();
        let exe = std::env::current_exe().unwrap();
        let children = files
            .iter()
            .map(|out| {
                Command::new(&exe)
                    .args(["--exact", test, "--nocapture"])
                    .env(CHILD_URL, url)
                    .env(CHILD_OUT, out)
                    .env(CHILD_STOP, &stop)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        Contenders {
            dir,
            stop,
            files,
            children,
        }
    }

    /// Every action the children recorded so far (a line still being written is left
    /// out).
    pub fn actions(&self) -> Vec<Action> {
        let mut all = Vec::new();
        for file in &self.files {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
                all.push(
                    Action::parse(line).unwrap_or_else(|| panic!("a bad action line {line:?}")),
                );
            }
        }
        all
    }

    /// Waits until the children recorded `more` actions than now.
    ///
    /// # Panics
    ///
    /// When they do not within a minute.
    pub fn progress(&self, more: usize) {
        let now = self.actions().len();
        wait_until("the children to lead", PROGRESS_TIMEOUT, || {
            std::thread::sleep(Duration::from_millis(20));
            self.actions().len() >= now + more
        });
    }

    /// Tells the children to stop and waits for them; checks each ended well (every error
    /// it met was transient) and that the tokens strictly increase in the order the
    /// actions started. Returns the actions in that order.
    ///
    /// # Panics
    ///
    /// When a child failed or the tokens went back.
    pub fn finish(mut self) -> Vec<Action> {
        std::fs::write(&self.stop, b"").unwrap();
        for child in std::mem::take(&mut self.children) {
            let output = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "a child failed:\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            for line in stdout.lines().filter(|line| line.starts_with("led=")) {
                println!("child {line}");
            }
        }
        let mut all = self.actions();
        all.sort_by_key(|action| action.start);
        for pair in all.windows(2) {
            assert!(
                pair[0].token < pair[1].token,
                "tokens out of order: {} then {}",
                pair[0].token,
                pair[1].token
            );
        }
        all
    }
}

impl Drop for Contenders {
    /// Children still running (the test failed before [`finish`](Self::finish)) are
    /// killed; the files go.
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// This process as a child of [`Contenders`].
#[derive(Debug)]
pub struct Contender {
    url: String,
    out: File,
    stop: PathBuf,
}

impl Contender {
    /// `Some` in a child process (its settings are in the environment), for the test to
    /// run [`run`](Self::run) and return.
    ///
    /// # Panics
    ///
    /// When the output file cannot be created.
    pub fn from_env() -> Option<Contender> {
        let url = std::env::var(CHILD_URL).ok()?;
        let out = std::env::var_os(CHILD_OUT)?;
        let stop = std::env::var_os(CHILD_STOP)?;
        Some(Contender {
            url,
            out: File::create(Path::new(&out)).unwrap(),
            stop: PathBuf::from(stop),
        })
    }

    /// The store to connect to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Calls `attempt` (one try to lead, answering the [`Action`] it ran, or `None` when
    /// another held the lock) until told to stop, recording each action. Every error must
    /// be transient (asserted); after one the child waits `pause`. Prints how often it
    /// led and failed, for [`Contenders::finish`] to show.
    ///
    /// # Panics
    ///
    /// On an error that is not transient, or when the output cannot be written.
    pub fn run(
        mut self,
        pause: Duration,
        mut attempt: impl FnMut() -> Result<Option<Action>, leader_core::Error>,
    ) {
        let started = Instant::now();
        let (mut led, mut errors) = (0, 0);
        while !self.stop.exists() && started.elapsed() < CHILD_MAX {
            match attempt() {
                Ok(Some(action)) => {
                    writeln!(self.out, "{} {} {}", action.token, action.start, action.end).unwrap();
                    self.out.flush().unwrap();
                    led += 1;
                }
                Ok(None) => {}
                Err(err) => {
                    assert!(err.is_transient(), "{err}");
                    errors += 1;
                    std::thread::sleep(pause);
                }
            }
        }
        println!("led={led} errors={errors}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_and_overlap() {
        let a = Action::parse("7 100 200\n").unwrap();
        assert_eq!(
            a,
            Action {
                token: 7,
                start: 100,
                end: 200
            }
        );
        assert_eq!(Action::parse("7 100"), None);
        assert_eq!(Action::parse("7 100 200 9"), None);
        let b = Action {
            token: 8,
            start: 150,
            end: 300,
        };
        let c = Action {
            token: 9,
            start: 300,
            end: 400,
        };
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c) && !b.overlaps(&c));
    }
}
