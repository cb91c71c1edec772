//! The server fixtures: start, pause/resume, kill, restart with and without data, and no
//! server left behind when the test process ends without dropping its fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use leader_testkit::fixtures::{self, Data, MongoServer, RedisServer};

/// One inline command; `None` when the server does not answer within 500 ms.
fn redis(addr: SocketAddr, command: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    stream.write_all(format!("{command}\r\n").as_bytes()).ok()?;
    let mut reply = [0_u8; 512];
    let n = stream.read(&mut reply).ok()?;
    Some(String::from_utf8_lossy(&reply[..n]).into_owned())
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[test]
fn a_redis_server_pauses_resumes_and_restarts_without_its_data() {
    let Some(mut server) = fixtures::require("redis-server", RedisServer::start()) else {
        return;
    };
    let addr = server.addr();
    assert_eq!(redis(addr, "SET k v").as_deref(), Some("+OK\r\n"));
    server.pause();
    assert_eq!(redis(addr, "PING"), None, "a paused server answers nothing");
    server.resume();
    assert_eq!(redis(addr, "PING").as_deref(), Some("+PONG\r\n"));

    let pid = server.pid().unwrap();
    server.kill();
    assert!(!alive(pid), "killed and reaped");
    assert_eq!(redis(addr, "PING"), None);
    server.restart(Data::Keep).unwrap();
    assert_eq!(
        redis(addr, "GET k").as_deref(),
        Some("$-1\r\n"),
        "nothing persisted"
    );
}

#[test]
fn a_persistent_redis_server_keeps_acknowledged_writes_across_kill_9() {
    let Some(mut server) = fixtures::require("redis-server", RedisServer::start_persistent())
    else {
        return;
    };
    let addr = server.addr();
    assert_eq!(redis(addr, "SET k v").as_deref(), Some("+OK\r\n"));
    server.restart(Data::Keep).unwrap();
    assert_eq!(redis(addr, "GET k").as_deref(), Some("$1\r\nv\r\n"));
    server.restart(Data::Lose).unwrap();
    assert_eq!(redis(addr, "GET k").as_deref(), Some("$-1\r\n"));
}

#[test]
fn the_shared_redis_server_is_one_per_process() {
    let Some(a) = fixtures::shared_redis() else {
        return;
    };
    let b = fixtures::shared_redis().unwrap();
    assert_eq!(a.url(), b.url());
    assert_eq!(redis(a.addr(), "PING").as_deref(), Some("+PONG\r\n"));
}

#[test]
fn a_mongodb_server_restarts_on_its_store() {
    let Some(mut server) = fixtures::require("secantusd-rs", MongoServer::start()) else {
        return;
    };
    assert!(TcpStream::connect(server.addr()).is_ok());
    server.pause();
    server.resume();
    let pid = server.pid().unwrap();
    server.restart(Data::Keep).unwrap();
    assert!(!alive(pid));
    assert!(TcpStream::connect(server.addr()).is_ok());
    assert!(server.uri().starts_with("mongodb://127.0.0.1:"));
}

/// The child half of the next test: starts a server, prints its PID, and exits without
/// running any destructor.
#[test]
fn leaves_a_server_behind_when_run_as_a_child() {
    if std::env::var_os("LEADER_TEST_FIXTURE_CHILD").is_none() {
        return;
    }
    let server = RedisServer::start().unwrap();
    println!("server-pid={}", server.pid().unwrap());
    std::process::exit(0);
}

#[test]
fn no_server_outlives_the_process_that_started_it() {
    if fixtures::require("redis-server", RedisServer::start()).is_none() {
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "leaves_a_server_behind_when_run_as_a_child",
            "--nocapture",
        ])
        .env("LEADER_TEST_FIXTURE_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let pid: u32 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("server-pid="))
        .unwrap_or_else(|| panic!("the child printed no PID: {stdout}"))
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "redis-server {pid} outlived its test process"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
