//! Test support: the contract harness, a raw client for inspecting and corrupting lock
//! documents, and private servers that the fault tests may stop.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::{Future, ready};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use leader_mongodb::{MongoBackend, MongoConfig};
use leader_testkit::{Harness, server_from_env};
use mongodb::bson::{Document, doc};
use mongodb::{Client, Collection};
use tokio::runtime::Runtime;

/// The database every test uses; each test file picks its own collections.
pub const DATABASE: &str = "leader_test";

/// The shared test server's URI, or `None` (after a skip line) when it is not configured.
pub fn uri() -> Option<String> {
    server_from_env("LEADER_TEST_MONGODB_URI")
}

/// Short driver timeouts, so broken servers fail fast.
pub fn config(collection: &str) -> MongoConfig {
    MongoConfig::new()
        .with_database(DATABASE)
        .with_collection(collection)
        .with_server_selection_timeout(Duration::from_secs(2))
        .with_connect_timeout(Duration::from_secs(2))
        .with_operation_timeout(Duration::from_secs(10))
}

/// A raw driver client on its own runtime, usable from any thread (inside a runtime or not).
pub struct Raw {
    runtime: Option<Runtime>,
    client: Client,
}

impl Drop for Raw {
    fn drop(&mut self) {
        // May happen inside a test's runtime, where a plain drop would panic.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Raw {
    pub fn connect(uri: &str) -> Raw {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let uri = uri.to_owned();
        let client = runtime
            .block_on(async move { Client::with_uri_str(uri).await })
            .unwrap();
        Raw {
            runtime: Some(runtime),
            client,
        }
    }

    /// Runs `f` on the raw client's runtime and waits for its result on a channel.
    pub fn run<T, F, Fut>(&self, f: F) -> T
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (sender, receiver) = mpsc::sync_channel(1);
        let future = f(self.client.clone());
        self.runtime.as_ref().unwrap().spawn(async move {
            let _ = sender.send(future.await);
        });
        receiver.recv().unwrap()
    }

    pub fn collection(client: &Client, name: &str) -> Collection<Document> {
        client.database(DATABASE).collection(name)
    }

    /// The server's clock, from `hello`'s `localTime`.
    pub fn server_now(&self) -> SystemTime {
        self.run(|client| async move {
            let hello = client
                .database("admin")
                .run_command(doc! { "hello": 1 })
                .await
                .unwrap();
            hello.get_datetime("localTime").unwrap().to_system_time()
        })
    }

    pub fn find(&self, collection: &str, id: &str) -> Option<Document> {
        let (collection, id) = (collection.to_owned(), id.to_owned());
        self.run(move |client| async move {
            Raw::collection(&client, &collection)
                .find_one(doc! { "_id": id })
                .await
                .unwrap()
        })
    }

    pub fn replace(&self, collection: &str, doc: Document) {
        let collection = collection.to_owned();
        self.run(move |client| async move {
            let id = doc.get("_id").cloned().unwrap();
            Raw::collection(&client, &collection)
                .replace_one(doc! { "_id": id }, doc)
                .upsert(true)
                .await
                .unwrap();
        })
    }
}

/// The contract harness: a fresh backend per call on the shared server, waiting with
/// sleeps (one-second short leases), the server's clock from `hello`.
pub struct MongoHarness {
    uri: String,
    raw: Raw,
}

impl MongoHarness {
    pub fn from_env() -> Option<MongoHarness> {
        let uri = uri()?;
        let raw = Raw::connect(&uri);
        Some(MongoHarness { uri, raw })
    }
}

impl Harness for MongoHarness {
    type Backend = MongoBackend;

    fn backend(&self) -> impl Future<Output = MongoBackend> {
        ready(MongoBackend::connect_with(&self.uri, config("contract")).unwrap())
    }

    fn advance(&self, by: Duration) {
        std::thread::sleep(by);
    }

    fn backend_now(&self) -> SystemTime {
        self.raw.server_now()
    }

    /// Waited out with real sleeps next to real round trips: long enough that a loaded
    /// machine's scheduling delays (tens of milliseconds) cannot expire a lease early.
    fn short_lease(&self) -> Duration {
        Duration::from_secs(1)
    }

    /// A round trip or two between the timestamp and the reading it is compared with.
    fn clock_tolerance(&self) -> Duration {
        Duration::from_millis(500)
    }
}

/// A secantusd-rs of the test's own, on a free loopback port and a temporary directory,
/// that the test may stop (by PID) and start again. Stopped and removed on drop.
pub struct PrivateServer {
    bin: String,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl PrivateServer {
    /// Starts a server, or `None` when `LEADER_TEST_MONGODB_SERVER_BIN` is not set.
    pub fn start() -> Option<PrivateServer> {
        let bin = server_from_env("LEADER_TEST_MONGODB_SERVER_BIN")?;
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let suffix: u64 = rand::random();
        let dir = std::env::temp_dir().join(format!("leader-mongodb-{port}-{suffix:016x}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("secantusd.toml"), "").unwrap();
        let mut server = PrivateServer {
            bin,
            dir,
            port,
            child: None,
        };
        server.restart();
        Some(server)
    }

    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port)
    }

    /// Starts the server process (again) and waits until it accepts connections.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::File::create(self.dir.join("server.log")).unwrap();
        let child = Command::new(&self.bin)
            .current_dir(&self.dir)
            .arg("--config")
            .arg(self.dir.join("secantusd.toml"))
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .arg("--storage-path")
            .arg(self.dir.join("data"))
            .args(["--cache-size", "256M", "--log-file-max", "16MB"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "secantusd-rs did not start");
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                panic!("secantusd-rs exited with {status}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the server process (by its PID) and reaps it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
