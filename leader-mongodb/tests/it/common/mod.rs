//! Test support: the contract harness, a raw client for inspecting and corrupting lock
//! documents, and the servers (the process's shared one, private ones that the fault
//! tests may stop).
#![allow(dead_code, unreachable_pub)]

use std::future::{Future, ready};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use leader_mongodb::{MongoBackend, MongoConfig};
use leader_rig::fixtures::{self, MongoServer};
use leader_testkit::Harness;
use mongodb::bson::{Document, doc};
use mongodb::{Client, Collection};
use tokio::runtime::Runtime;

/// The database every test uses; each test file picks its own collections.
pub const DATABASE: &str = "leader_test";

/// The test process's shared server's URI, or `None` (after a skip line) when
/// `secantusd-rs` is not installed and servers are not required.
pub fn uri() -> Option<String> {
    fixtures::shared_mongo().map(uri_of)
}

/// A server of the test's own, for a test that stops or restarts it.
pub fn private_server() -> Option<MongoServer> {
    fixtures::require("secantusd-rs", MongoServer::start())
}

/// `server`'s URI for the driver: `directConnection=true` keeps it on this one server,
/// without the topology discovery of the one-node replica set the server reports.
pub fn uri_of(server: &MongoServer) -> String {
    format!("{}?directConnection=true", server.uri())
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
