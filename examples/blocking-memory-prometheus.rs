//! Metrics on a Prometheus endpoint: three nodes share a lock per tenant job; the
//! electors' counters, histograms and gauge are served at `http://127.0.0.1:9184/metrics`.
//!
//! ```text
//! cargo run -p leader-examples --example blocking-memory-prometheus --features metrics
//! cargo run -p leader-examples --example blocking-memory-prometheus --features metrics -- --serve
//! ```
//!
//! Without `--serve` it runs a few rounds, scrapes its own endpoint once, prints what a
//! Prometheus server would read, and exits; with `--serve` it keeps running and serving.
//! The `lock` label is the job name without the tenant prefix (the default, see
//! `leader::metrics`), so three tenants make one series per job, not three.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use leader::{InMemoryBackend, LeaderElectionOptions, LeaderElector};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

const ADDRESS: &str = "127.0.0.1:9184";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let serve = std::env::args().any(|arg| arg == "--serve");
    let handle = PrometheusBuilder::new().install_recorder()?;
    leader::metrics::describe();
    let listener = TcpListener::bind(ADDRESS)?;
    std::thread::spawn(move || serve_metrics(&listener, &handle));
    println!("metrics at http://{ADDRESS}/metrics");

    let backend = InMemoryBackend::new();
    let nodes: Vec<_> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|node| {
            let options = LeaderElectionOptions::default()
                .with_node_id(*node)
                .with_wait_time(Duration::ZERO);
            LeaderElector::new(backend.clone(), options).unwrap()
        })
        .collect();
    let mut round = 0;
    while serve || round < 5 {
        for tenant in ["acme", "globex", "initech"] {
            std::thread::scope(|scope| {
                for node in &nodes {
                    let node = node.for_tenant(tenant).unwrap();
                    scope.spawn(move || {
                        node.run_if_leader("sync-invoices", || {
                            std::thread::sleep(Duration::from_millis(20))
                        })
                    });
                }
            });
        }
        round += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    print!("{}", scrape()?);
    Ok(())
}

/// A minimal HTTP server: every request gets the current metrics.
fn serve_metrics(listener: &TcpListener, handle: &PrometheusHandle) {
    for stream in listener.incoming().flatten() {
        let _ = answer(stream, handle);
    }
}

fn answer(mut stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
    let mut request_line = String::new();
    BufReader::new(&stream).read_line(&mut request_line)?;
    let body = handle.render();
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// What a Prometheus server would read.
fn scrape() -> std::io::Result<String> {
    let mut stream = TcpStream::connect(ADDRESS)?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {ADDRESS}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response
        .split_once("\r\n\r\n")
        .map_or(response.clone(), |(_, body)| body.to_owned()))
}
