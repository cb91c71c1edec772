//! Every backend by URL, for the election tests that must hold on all of them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub(crate) mod notified;

use std::path::{Path, PathBuf};

use leader::AnyBackend;
use leader_rig::fixtures;

/// A directory of the test's own, removed with everything in it when the guard drops (at
/// the end of the test, on success or panic).
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty directory under the system's temporary directory.
    pub(crate) fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "leader-election-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh backend of `kind` (`memory`, `sqlite`, `redis`, `redis_cluster`, `mongodb`,
/// `postgres`, `etcd`), and the SQLite database's directory, which goes away when the returned
/// guard drops: keep it until the test ends. `None` when its server is not installed and
/// servers are not required.
pub(crate) fn backend(kind: &str) -> Option<(AnyBackend, Option<TempDir>)> {
    let mut dir = None;
    let url = match kind {
        "memory" => "memory://".to_owned(),
        "sqlite" => {
            let path = dir.insert(TempDir::new()).path().join("locks.db");
            format!("sqlite://{}", path.display())
        }
        "redis" => fixtures::shared_redis()?.url(),
        "redis_cluster" => {
            let hosts: Vec<String> = fixtures::shared_redis_cluster()?
                .urls()
                .iter()
                .map(|url| {
                    url.trim_start_matches("redis://")
                        .trim_end_matches('/')
                        .to_owned()
                })
                .collect();
            format!("redis+cluster://{}", hosts.join(","))
        }
        "mongodb" => fixtures::shared_mongo()?.uri(),
        "postgres" => fixtures::shared_postgres()?.url(),
        "etcd" => fixtures::shared_etcd()?.url(),
        other => panic!("no backend {other}"),
    };
    let backend = leader::connect(&url).unwrap_or_else(|err| panic!("connect {url}: {err}"));
    Some((backend, dir))
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// One `#[test]` per backend for each named check `fn check(backend: AnyBackend)`.
#[macro_export]
macro_rules! on_every_backend {
    ($($check:ident),* $(,)?) => {
        $(
            mod $check {
                fn run(kind: &str) {
                    if let Some((backend, _dir)) = $crate::common::backend(kind) {
                        super::$check(backend);
                    }
                }
                #[test]
                fn memory() { run("memory") }
                #[test]
                fn sqlite() { run("sqlite") }
                #[test]
                fn redis() { run("redis") }
                #[test]
                fn redis_cluster() { run("redis_cluster") }
                #[test]
                fn mongodb() { run("mongodb") }
                #[test]
                fn postgres() { run("postgres") }
                #[test]
                fn etcd() { run("etcd") }
            }
        )*
    };
}
