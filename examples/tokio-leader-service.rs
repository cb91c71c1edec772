//! A service that knows who leads: every node campaigns for one name and serves, over
//! HTTP (axum):
//!
//! - `GET /leader`: the current holder as JSON, from the node's observer (no store round
//!   trip per request): `{"name":"billing-run","status":"held","leader":{"leader_id":…,
//!   "fencing_token":…,"acquired_at_ms":…,"expires_at_ms":…},"seen_at_ms":…}`;
//! - `GET /ready`: `200 leader` while this node holds the name, `503 follower` otherwise:
//!   a readiness probe that sends work (a load balancer, a Kubernetes Service) to the
//!   leader alone;
//! - `GET /metrics`: the electors' Prometheus metrics (`leader_*`).
//!
//! ```text
//! cargo run -p leader-examples --features service --example tokio-leader-service
//! ```
//!
//! Without arguments it runs three nodes in this process over one SQLite file, asks each
//! node's endpoints, has the leader step down, shows another node taking over as the
//! observers see it, and exits. To run the nodes as processes (three terminals, one
//! database; any backend URL works with its feature compiled in):
//!
//! ```text
//! export LEADER_URL=sqlite:///tmp/leader-service.db
//! cargo run -p leader-examples --features service --example tokio-leader-service -- --serve 8081
//! cargo run -p leader-examples --features service --example tokio-leader-service -- --serve 8082
//! curl -i 127.0.0.1:8081/ready; curl 127.0.0.1:8082/leader
//! ```
//!
//! Readiness comes from the node's own lease (lost the moment its renewal fails), not from
//! the observer: an observer's view is as old as its last read, so it answers "who leads"
//! for dashboards and routers, while "may I act" is the lease's to answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json};
use axum::routing::get;
use leader::{
    AnyBackend, AsyncLeaderElector, ChangeKind, Error, LeaderChange, LeaderElectionOptions,
    LeaseContext, LeaseMode, Shutdown,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The name every node campaigns for.
const NAME: &str = "billing-run";

/// What one node's endpoints read.
#[derive(Clone)]
struct Node {
    id: String,
    /// The last change this node's observer saw.
    seen: Arc<Mutex<Option<LeaderChange>>>,
    /// This node's lease while it leads.
    leading: Arc<Mutex<Option<LeaseContext>>>,
    metrics: PrometheusHandle,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let metrics = PrometheusBuilder::new().install_recorder()?;
    leader::metrics::describe();
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, port] = args.as_slice()
        && flag == "--serve"
    {
        let url = std::env::var("LEADER_URL")
            .unwrap_or_else(|_| "sqlite:///tmp/leader-service.db".into());
        let backend = leader::connect_async(&url).await?;
        let id = format!("node-{}", std::process::id());
        let shutdown = Shutdown::new();
        let node = start(&backend, &id, &shutdown, &metrics)?;
        let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
        println!("{id} serves http://127.0.0.1:{port}/leader, /ready, /metrics ({url})");
        axum::serve(listener, routes(node))
            .with_graceful_shutdown(async { drop(tokio::signal::ctrl_c().await) })
            .await?;
        shutdown.trigger(); // the campaign releases the lease if it holds it
        tokio::time::sleep(Duration::from_millis(200)).await;
        return Ok(());
    }
    demo(metrics).await
}

/// Three nodes in this process: who leads, then a handover.
async fn demo(metrics: PrometheusHandle) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("leader-service-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let url = format!("sqlite://{}", dir.join("locks.db").display());
    let backend = leader::connect_async(&url).await?;
    let mut nodes = Vec::new();
    for n in 1..=3 {
        let shutdown = Shutdown::new();
        let node = start(&backend, &format!("node-{n}"), &shutdown, &metrics)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        tokio::spawn(axum::serve(listener, routes(node.clone())).into_future());
        nodes.push((node, address, shutdown));
    }

    let first = wait_for_leader(&nodes, None).await;
    println!("GET /leader  -> {}", fetch(&nodes[2].1, "/leader").await?);
    for (node, address, _) in &nodes {
        println!(
            "GET /ready on {}  -> {}",
            node.id,
            fetch(address, "/ready").await?
        );
    }

    println!("{first} steps down");
    let (_, _, stepping_down) = nodes.iter().find(|(node, ..)| node.id == first).unwrap();
    stepping_down.trigger();
    let second = wait_for_leader(&nodes, Some(&first)).await;
    println!("GET /leader  -> {}", fetch(&nodes[0].1, "/leader").await?);
    println!("{second} leads now");

    let scraped = fetch(&nodes[0].1, "/metrics").await?;
    let leader_lines: Vec<&str> = scraped
        .lines()
        .filter(|line| line.starts_with("leader_"))
        .take(5)
        .collect();
    println!(
        "GET /metrics -> {} lines, the first:",
        scraped.lines().count()
    );
    for line in leader_lines {
        println!("  {line}");
    }
    for (_, _, shutdown) in &nodes {
        shutdown.trigger();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(std::fs::remove_dir_all(&dir));
    Ok(())
}

/// Starts a node's campaign and its observer; answers what its endpoints read.
fn start(
    backend: &AnyBackend,
    id: &str,
    shutdown: &Shutdown,
    metrics: &PrometheusHandle,
) -> Result<Node, Error> {
    let options = LeaderElectionOptions::default()
        .with_node_id(id)
        .with_wait_time(Duration::from_millis(500));
    let elector = AsyncLeaderElector::new(backend.clone(), options)?;
    let node = Node {
        id: id.to_owned(),
        seen: Arc::default(),
        leading: Arc::default(),
        metrics: metrics.clone(),
    };
    let mut changes = elector
        .observe(NAME)?
        .with_poll_interval(Duration::from_millis(500));
    let seen = Arc::clone(&node.seen);
    tokio::spawn(async move {
        while let Some(change) = changes.next().await {
            match change {
                Ok(change) => *seen.lock().unwrap() = Some(change),
                Err(err) => eprintln!("observer: {err}"), // transient: it reads again
            }
        }
    });
    tokio::spawn(campaign(
        elector,
        shutdown.clone(),
        Arc::clone(&node.leading),
    ));
    Ok(node)
}

/// Holds `NAME` whenever it can, until `shutdown`: the watchdog renews the lease; a lost
/// lease (a renewal that failed past its deadline) ends the term and the node campaigns
/// again.
async fn campaign(
    elector: AsyncLeaderElector<AnyBackend>,
    shutdown: Shutdown,
    leading: Arc<Mutex<Option<LeaseContext>>>,
) {
    while !shutdown.is_triggered() {
        match elector.acquire(NAME, LeaseMode::watchdog()).await {
            Ok(guard) => {
                *leading.lock().unwrap() = Some(guard.context().clone());
                futures_or(guard.context().lost(), shutdown.triggered()).await;
                *leading.lock().unwrap() = None;
                guard.release().await;
            }
            // Held elsewhere for the whole wait: campaign again.
            Err(Error::NotAcquired { .. }) => {}
            Err(err) => {
                eprintln!("campaign: {err}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Whichever of two futures finishes first.
async fn futures_or(a: impl Future<Output = ()>, b: impl Future<Output = ()>) {
    tokio::select! {
        () = a => {}
        () = b => {}
    }
}

fn routes(node: Node) -> Router {
    Router::new()
        .route("/leader", get(leader_json))
        .route("/ready", get(ready))
        .route(
            "/metrics",
            get(|State(node): State<Node>| async move { node.metrics.render() }),
        )
        .with_state(node)
}

async fn leader_json(State(node): State<Node>) -> Json<Value> {
    let seen = node.seen.lock().unwrap().clone();
    let Some(change) = seen else {
        return Json(json!({ "name": NAME, "status": "unknown" }));
    };
    let holds = matches!(change.kind, ChangeKind::Initial | ChangeKind::Acquired);
    let leader = change.holder.as_ref().filter(|_| holds).map(|lease| {
        json!({
            "leader_id": lease.leader_id,
            "fencing_token": lease.fencing_token,
            "acquired_at_ms": millis(lease.acquired_at),
            "expires_at_ms": millis(lease.expires_at),
        })
    });
    Json(json!({
        "name": change.lock_name,
        "status": if leader.is_some() { "held" } else { "free" },
        "leader": leader,
        "seen_at_ms": millis(change.seen_at),
    }))
}

async fn ready(State(node): State<Node>) -> impl IntoResponse {
    let leads = node
        .leading
        .lock()
        .unwrap()
        .as_ref()
        .is_some_and(|lease| !lease.is_lost());
    if leads {
        (StatusCode::OK, "leader")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "follower")
    }
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

/// Waits until some node other than `not` leads and every observer has seen it.
async fn wait_for_leader(nodes: &[(Node, String, Shutdown)], not: Option<&str>) -> String {
    loop {
        let leaders: Vec<String> = nodes
            .iter()
            .filter(|(node, ..)| node.leading.lock().unwrap().is_some())
            .map(|(node, ..)| node.id.clone())
            .collect();
        if let [leader] = leaders.as_slice()
            && Some(leader.as_str()) != not
            && nodes.iter().all(|(node, ..)| {
                node.seen.lock().unwrap().as_ref().is_some_and(|change| {
                    change.holder.as_ref().map(|lease| lease.leader_id.as_str())
                        == Some(leader.as_str())
                        && matches!(change.kind, ChangeKind::Initial | ChangeKind::Acquired)
                })
            })
        {
            return leader.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A plain HTTP/1.1 GET: status line and body.
async fn fetch(address: &str, path: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok(format!("{status}  {}", body.trim()))
}
