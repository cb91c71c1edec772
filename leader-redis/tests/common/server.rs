//! A private redis-server on a free loopback port, stopped by its PID.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leader_testkit::server_from_env;

/// A redis-server this test started; killed (by PID) when dropped.
#[derive(Debug)]
pub struct PrivateServer {
    bin: String,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl PrivateServer {
    /// Starts one from `LEADER_TEST_REDIS_SERVER_BIN` (skips when unset, unless required).
    pub fn start() -> Option<Self> {
        let bin = server_from_env("LEADER_TEST_REDIS_SERVER_BIN")?;
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("leader-redis-test-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = PrivateServer {
            bin,
            port,
            dir,
            child: None,
        };
        server.restart();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server process (by its PID) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `signal` (`STOP`, `CONT`) to the server's PID.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Starts the server again on the same port (with no data: persistence is off).
    pub fn restart(&mut self) {
        self.stop();
        let child = Command::new(&self.bin)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                let ping = redis::Client::open(self.url())
                    .unwrap()
                    .get_connection()
                    .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
                if ping.is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "private redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
