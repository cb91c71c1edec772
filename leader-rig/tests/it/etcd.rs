//! The etcd fixtures: a one-member server that pauses and restarts with and without its
//! data, a three-member cluster that survives the loss of its leader, restarts whole,
//! goes back to a snapshot, and leaves no process or directory behind when dropped.
//! Keys are written and read through etcd's JSON gateway (`/v3/kv/put`, `/v3/kv/range`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leader_rig::fixtures::{self, Data, EtcdCluster, EtcdServer};

/// One JSON request to the gateway; the answer's body, or `None` when there is no
/// `200 OK` answer within `timeout`.
fn call_within(addr: SocketAddr, path: &str, body: &str, timeout: Duration) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?;
    (code == "200").then(|| body.to_owned())
}

/// A request that should succeed. The bound is generous: etcd fsyncs each write, and a
/// member that has just rejoined may first catch up.
fn call(addr: SocketAddr, path: &str, body: &str) -> String {
    call_within(addr, path, body, Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no answer from {addr} to {path} {body}"))
}

/// The value of the string field `name` in `json` (etcd's answers are flat enough).
fn field<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\":\"");
    let start = json.find(&key)? + key.len();
    Some(&json[start..start + json[start..].find('"')?])
}

/// Writes `key = value`; the revision of the write.
fn put(addr: SocketAddr, key: &str, value: &str) -> u64 {
    let body = format!(
        r#"{{"key":"{}","value":"{}"}}"#,
        base64(key.as_bytes()),
        base64(value.as_bytes())
    );
    let answer = call(addr, "/v3/kv/put", &body);
    field(&answer, "revision").unwrap().parse().unwrap()
}

/// The value of `key` (`None`: no such key) and the store's current revision.
fn get(addr: SocketAddr, key: &str) -> (Option<String>, u64) {
    let body = format!(r#"{{"key":"{}"}}"#, base64(key.as_bytes()));
    let answer = call(addr, "/v3/kv/range", &body);
    let revision = field(&answer, "revision").unwrap().parse().unwrap();
    let value = field(&answer, "value").map(|value| String::from_utf8(unbase64(value)).unwrap());
    (value, revision)
}

/// Whether the member at `addr` leaves a read unanswered for 500 ms (paused or gone).
/// Whether the server at `addr` has gone silent: a read it leaves unanswered for 500 ms,
/// asked up to ten times over about five seconds. A server that answers every time is not
/// silent; one whose stop or kill has only just been signalled gets time to take it,
/// where a single read could find it still answering on a loaded machine (seen once in
/// CI, a member paused with SIGSTOP answering the read sent right after).
fn silent(addr: SocketAddr) -> bool {
    (0..10).any(|attempt| {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500));
        }
        call_within(
            addr,
            "/v3/kv/range",
            r#"{"key":"AA=="}"#,
            Duration::from_millis(500),
        )
        .is_none()
    })
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unbase64(text: &str) -> Vec<u8> {
    let sextets: Vec<u32> = text
        .bytes()
        .filter(|&c| c != b'=')
        .map(|c| ALPHABET.iter().position(|&a| a == c).unwrap() as u32)
        .collect();
    let mut out = Vec::new();
    for chunk in sextets.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |n, (i, &s)| n | s << (18 - 6 * i));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

/// The directory `pid` runs in: its fixture's own.
fn cwd(pid: u32) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap()
}

/// Waits up to 10 s until none of `pids` is alive and none of `dirs` exists.
fn assert_gone(pids: &[u32], dirs: &[PathBuf]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&pid| alive(pid)) || dirs.iter().any(|dir| dir.exists()) {
        assert!(
            Instant::now() < deadline,
            "etcd {pids:?} or its directories {dirs:?} outlived the fixture"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_codec_of_these_tests_round_trips() {
    for text in ["", "a", "ab", "abc", "abcd", "leader/lock"] {
        assert_eq!(unbase64(&base64(text.as_bytes())), text.as_bytes());
    }
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"ab"), "YWI=");
}

#[test]
fn an_etcd_server_pauses_resumes_and_restarts_with_and_without_its_data() {
    let Some(mut server) = fixtures::require("etcd", EtcdServer::start()) else {
        return;
    };
    let addr = server.addr();
    assert_eq!(server.endpoint(), format!("127.0.0.1:{}", addr.port()));
    assert_eq!(server.url(), format!("etcd://127.0.0.1:{}", addr.port()));
    let written = put(addr, "k", "v");
    assert_eq!(get(addr, "k"), (Some("v".to_owned()), written));

    server.pause();
    assert!(silent(addr), "a paused server answers nothing");
    server.resume();
    assert_eq!(get(addr, "k").0.as_deref(), Some("v"));

    let pid = server.pid().unwrap();
    server.restart(Data::Keep).unwrap();
    assert!(!alive(pid), "killed and reaped");
    assert_eq!(
        get(addr, "k"),
        (Some("v".to_owned()), written),
        "the acknowledged write and its revision survive kill -9"
    );

    server.kill();
    assert!(server.pid().is_none());
    assert!(silent(addr), "a killed server answers nothing");
    server.restart(Data::Lose).unwrap();
    assert_eq!(get(addr, "k"), (None, 1), "a new, empty store");
}

#[test]
fn the_shared_etcd_server_is_one_per_process() {
    let Some(a) = fixtures::shared_etcd() else {
        return;
    };
    assert_eq!(a.url(), fixtures::shared_etcd().unwrap().url());
    put(a.addr(), "shared", "yes");
    assert_eq!(get(a.addr(), "shared").0.as_deref(), Some("yes"));
}

#[test]
fn an_etcd_cluster_elects_a_new_leader_when_its_leader_is_killed() {
    let Some(mut cluster) = fixtures::require("an etcd cluster", EtcdCluster::start()) else {
        return;
    };
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    assert_eq!(cluster.url(), format!("etcd://{}", endpoints.join(",")));
    let names: Vec<&str> = cluster.members().iter().map(|m| m.name()).collect();
    assert_eq!(names, ["m0", "m1", "m2"]);
    let addrs: Vec<SocketAddr> = cluster.members().iter().map(|m| m.addr()).collect();
    put(addrs[0], "k", "v");
    for &addr in &addrs {
        assert_eq!(
            get(addr, "k").0.as_deref(),
            Some("v"),
            "read through {addr}"
        );
    }

    // A paused follower: the other two still make a quorum.
    let leader = cluster.leader().unwrap();
    let follower = (leader + 1) % 3;
    cluster.members()[follower].pause();
    assert!(silent(addrs[follower]), "a paused member answers nothing");
    put(addrs[leader], "while-paused", "v");
    cluster.wait_until_quorum().unwrap();
    cluster.members()[follower].resume();
    cluster.wait_until_healthy().unwrap();
    assert_eq!(
        get(addrs[follower], "while-paused").0.as_deref(),
        Some("v"),
        "caught up"
    );

    // The leader killed: the other two elect one of themselves.
    let old_pid = cluster.members()[leader].pid().unwrap();
    cluster.members_mut()[leader].kill();
    assert!(!alive(old_pid));
    cluster.wait_until_quorum().unwrap();
    let new_leader = cluster.leader().unwrap();
    assert_ne!(new_leader, leader);
    assert_eq!(get(addrs[new_leader], "k").0.as_deref(), Some("v"));
    put(addrs[new_leader], "after", "v");

    // Back with its data, it follows the new leader and catches up.
    cluster.members_mut()[leader].restart().unwrap();
    cluster.wait_until_healthy().unwrap();
    assert_eq!(get(addrs[leader], "after").0.as_deref(), Some("v"));
}

#[test]
fn an_etcd_cluster_restarts_whole_on_its_data() {
    let Some(mut cluster) = fixtures::require("an etcd cluster", EtcdCluster::start()) else {
        return;
    };
    let addrs: Vec<SocketAddr> = cluster.members().iter().map(|m| m.addr()).collect();
    let written = put(addrs[1], "k", "v");
    let pids: Vec<u32> = cluster.members().iter().map(|m| m.pid().unwrap()).collect();
    cluster.kill_all();
    assert!(pids.iter().all(|&pid| !alive(pid)));
    assert!(cluster.members().iter().all(|m| m.pid().is_none()));
    assert!(addrs.iter().all(|&addr| silent(addr)));
    cluster.start_all().unwrap();
    assert_eq!(get(addrs[2], "k"), (Some("v".to_owned()), written));
    cluster.restart_all().unwrap();
    assert_eq!(get(addrs[0], "k"), (Some("v".to_owned()), written));
}

/// A file path for a snapshot, removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn an_etcd_cluster_goes_back_to_a_snapshot_revisions_and_all() {
    let Some(mut cluster) = fixtures::require("an etcd cluster", EtcdCluster::start()) else {
        return;
    };
    let addrs: Vec<SocketAddr> = cluster.members().iter().map(|m| m.addr()).collect();
    let snapshot = TempFile(std::env::temp_dir().join(format!(
        "leader-etcd-snapshot-{}-{}.db",
        std::process::id(),
        addrs[0].port()
    )));
    let before = put(addrs[0], "k", "old");
    cluster.save_snapshot(&snapshot.0).unwrap();
    let later = put(addrs[1], "k", "new");
    put(addrs[1], "only-later", "v");
    assert!(later > before);

    cluster.restore_snapshot(&snapshot.0).unwrap();
    for &addr in &addrs {
        assert_eq!(
            get(addr, "k"),
            (Some("old".to_owned()), before),
            "via {addr}"
        );
        assert_eq!(get(addr, "only-later").0, None);
    }
    assert_eq!(
        put(addrs[2], "k", "again"),
        before + 1,
        "the lost write's revision is given out again"
    );
    assert!(
        cluster
            .restore_snapshot(Path::new("/nonexistent/snapshot.db"))
            .is_err()
    );
}

#[test]
fn no_etcd_process_or_directory_outlives_its_fixture() {
    let Some(server) = fixtures::require("etcd", EtcdServer::start()) else {
        return;
    };
    let Some(cluster) = fixtures::require("an etcd cluster", EtcdCluster::start()) else {
        return;
    };
    let mut pids = vec![server.pid().unwrap()];
    pids.extend(cluster.members().iter().map(|m| m.pid().unwrap()));
    let dirs: Vec<PathBuf> = pids.iter().map(|&pid| cwd(pid)).collect();
    assert!(
        dirs.iter().all(|dir| dir.starts_with(std::env::temp_dir())),
        "{dirs:?}"
    );
    drop(server);
    drop(cluster);
    assert_gone(&pids, &dirs);
}
