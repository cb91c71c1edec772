//! The server fixtures: start, pause/resume, kill, restart with and without data, and no
//! server left behind when the test process ends without dropping its fixtures.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use leader_rig::fixtures::{self, Data, MongoServer, RedisCluster, RedisServer};

/// One inline command to a server that should answer; `None` when it does not within 10 s.
/// The bound is generous: a persistent server fsyncs each write before it answers, and a
/// loaded machine's disk can take longer than half a second for that.
fn redis(addr: SocketAddr, command: &str) -> Option<String> {
    redis_within(addr, command, Duration::from_secs(10))
}

/// Whether the server leaves `PING` unanswered for 500 ms (it is paused or gone).
fn silent(addr: SocketAddr) -> bool {
    redis_within(addr, "PING", Duration::from_millis(500)).is_none()
}

/// One inline command; `None` when the server does not answer within `timeout`.
fn redis_within(addr: SocketAddr, command: &str, timeout: Duration) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
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
    assert!(silent(addr), "a paused server answers nothing");
    server.resume();
    assert_eq!(redis(addr, "PING").as_deref(), Some("+PONG\r\n"));

    let pid = server.pid().unwrap();
    server.kill();
    assert!(!alive(pid), "killed and reaped");
    assert!(silent(addr), "a killed server answers nothing");
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

/// Sends `SET key v` to every node: the one that owns the key's slot answers `+OK`, the
/// others redirect to it.
fn set_on_its_node(cluster: &RedisCluster, key: &str) {
    let replies: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|node| redis(node.addr(), &format!("SET {key} v")).unwrap_or_default())
        .collect();
    assert_eq!(
        replies.iter().filter(|reply| *reply == "+OK\r\n").count(),
        1,
        "{replies:?}"
    );
    assert_eq!(
        replies
            .iter()
            .filter(|reply| reply.starts_with("-MOVED"))
            .count(),
        2,
        "{replies:?}"
    );
}

fn cluster_ok(node: &RedisServer) -> bool {
    redis(node.addr(), "CLUSTER INFO").is_some_and(|info| info.contains("cluster_state:ok"))
}

#[test]
fn a_redis_cluster_has_three_masters_that_share_the_slots_and_heal() {
    let Some(mut cluster) = fixtures::require("a Redis Cluster", RedisCluster::start()) else {
        return;
    };
    let urls = cluster.urls();
    assert_eq!(urls.len(), 3);
    assert!(urls.iter().all(|url| url.starts_with("redis://127.0.0.1:")));
    for node in cluster.nodes() {
        assert!(cluster_ok(node));
        let nodes = redis(node.addr(), "CLUSTER NODES").unwrap();
        assert_eq!(nodes.matches("master").count(), 3, "{nodes}");
    }
    set_on_its_node(&cluster, "a");
    set_on_its_node(&cluster, "b");

    cluster.nodes()[2].pause();
    assert!(
        silent(cluster.nodes()[2].addr()),
        "a paused node answers nothing"
    );
    cluster.nodes()[2].resume();
    // A node restarted without its data keeps its slots and its place in the cluster.
    cluster.nodes_mut()[0].restart(Data::Lose).unwrap();
    cluster.wait_until_ok().unwrap();
    assert!(cluster.nodes().iter().all(cluster_ok));
    set_on_its_node(&cluster, "a");
}

#[test]
fn the_shared_redis_cluster_is_one_per_process() {
    let Some(a) = fixtures::shared_redis_cluster() else {
        return;
    };
    assert_eq!(a.urls(), fixtures::shared_redis_cluster().unwrap().urls());
    assert!(a.nodes().iter().all(cluster_ok));
}

/// `PING` through `redis-cli --tls`, trusting `ca`. Without libfaketime, should this test
/// run under it (`scripts/at-phase.sh`): `redis-cli` hangs at start under it.
fn tls_ping(server: &RedisServer, ca: &std::path::Path) -> String {
    let output = Command::new("redis-cli")
        .env_remove("LD_PRELOAD")
        .args(["--tls", "--cacert"])
        .arg(ca)
        .args(["-h", "127.0.0.1", "-p", &server.addr().port().to_string()])
        .arg("PING")
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn a_tls_redis_server_speaks_only_tls_with_a_certificate_its_ca_signed() {
    let Some(mut server) = fixtures::require("redis-server with TLS", RedisServer::start_tls())
    else {
        return;
    };
    let url = server.url();
    assert_eq!(url, format!("rediss://127.0.0.1:{}/", server.addr().port()));
    let pem = server.ca_certificate_pem().unwrap();
    assert!(pem.starts_with(b"-----BEGIN CERTIFICATE-----"));
    let ca = server.ca_certificate_path().unwrap().to_owned();
    assert_eq!(std::fs::read(&ca).unwrap(), pem);
    assert_eq!(tls_ping(&server, &ca), "PONG");
    assert_ne!(
        redis(server.addr(), "PING").as_deref(),
        Some("+PONG\r\n"),
        "no plain-text answer"
    );
    // Another CA's certificate is refused: the check above is a real one.
    let stranger = fixtures::require("redis-server with TLS", RedisServer::start_tls()).unwrap();
    assert_ne!(
        tls_ping(&server, stranger.ca_certificate_path().unwrap()),
        "PONG"
    );

    server.restart(Data::Lose).unwrap();
    assert_eq!(
        tls_ping(&server, &ca),
        "PONG",
        "same certificate after a restart"
    );
    assert!(RedisServer::start().unwrap().ca_certificate_pem().is_none());
}

#[test]
fn the_shared_tls_redis_server_is_one_per_process() {
    let Some(a) = fixtures::shared_redis_tls() else {
        return;
    };
    assert_eq!(a.url(), fixtures::shared_redis_tls().unwrap().url());
    assert!(a.url().starts_with("rediss://"));
}

#[test]
fn faketime_sets_a_child_process_clock_off() {
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let output = Command::new("date")
        .arg("+%s")
        .env("LD_PRELOAD", &faketime)
        .env("FAKETIME", "-1d")
        .output()
        .unwrap();
    let child: i64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - child - 86_400).abs() < 60, "{now} vs {child}");
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

/// The child half of the next test: starts a server, prints its PID and working directory
/// (inside the fixture's), and exits without running any destructor.
#[test]
fn leaves_a_server_behind_when_run_as_a_child() {
    if std::env::var_os("LEADER_TEST_FIXTURE_CHILD").is_none() {
        return;
    }
    let server = RedisServer::start().unwrap();
    let pid = server.pid().unwrap();
    println!("server-pid={pid}");
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    println!("server-cwd={}", cwd.display());
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
            "fixtures::leaves_a_server_behind_when_run_as_a_child",
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
    let cwd = stdout
        .lines()
        .find_map(|line| line.strip_prefix("server-cwd="))
        .unwrap_or_else(|| panic!("the child printed no directory: {stdout}"));
    // The server runs in the fixture's data directory; the fixture's own is its parent.
    let fixture_dir = std::path::Path::new(cwd.trim())
        .parent()
        .unwrap()
        .to_owned();
    assert!(fixture_dir.starts_with(std::env::temp_dir()), "{cwd}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) || fixture_dir.exists() {
        assert!(
            Instant::now() < deadline,
            "redis-server {pid} or its directory {} outlived its test process",
            fixture_dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
