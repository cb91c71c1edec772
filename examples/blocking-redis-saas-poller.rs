//! A SaaS service runs "sync invoices" for each of its 20 tenants every 2 seconds, on three
//! instances (here: three pollers with their own thread pools in one process). Each cycle,
//! every tenant's job runs on exactly one instance; the others skip it. One tenant's job
//! always fails and one panics once, and neither disturbs the rest; a tenant signs up
//! half-way through. Each instance prints its report for every cycle.
//!
//! ```text
//! cargo run -p leader-examples --features redis,tenant --example blocking-redis-saas-poller   # in memory
//! cargo run -p leader-examples --features redis,tenant --example blocking-redis-saas-poller redis://127.0.0.1/
//! LEADER_URL=redis://127.0.0.1/ cargo run -p leader-examples --features redis,tenant --example blocking-redis-saas-poller
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::panic)] // one tenant's job panics on purpose, to show it is isolated

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leader::tenant::{BlockingTenantPoller, PollerConfig, Shutdown, TenantId};
use leader::{AnyBackend, LeaderElectionOptions, LeaseContext, ThreadPoolLeaderElector};

const INSTANCES: usize = 3;
const CYCLES: u32 = 4;
const INTERVAL: Duration = Duration::from_secs(2);

fn main() -> Result<(), Box<dyn Error>> {
    // A job's panic is caught and reported per tenant; print it on one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| eprintln!("a job panicked: {info}")));
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("LEADER_URL").ok());
    match url {
        Some(url) => {
            println!("backend: {url}");
            // One backend (one set of connections) per instance, as separate processes have.
            run(|| Ok(leader::connect(&url)?))
        }
        None => {
            println!("backend: in memory (pass a redis:// URL to use Redis)");
            // One store shared by the three instances: they are in one process here.
            let backend = leader::connect("memory://")?;
            run(|| Ok(backend.clone()))
        }
    }
}

fn run(backend: impl Fn() -> Result<AnyBackend, Box<dyn Error>>) -> Result<(), Box<dyn Error>> {
    // The tenant list, re-read every cycle: a tenant signs up while the service runs.
    let tenants: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(
        (1..=20).map(|i| format!("tenant-{i:02}")).collect(),
    ));
    // Per cycle, which instance ran each tenant's job (filled by the jobs themselves).
    let ran: Arc<Mutex<BTreeMap<u64, usize>>> = Arc::default();
    let panicked_once = Arc::new(AtomicBool::new(false));

    let mut pollers = Vec::new();
    for instance in 0..INSTANCES {
        let node = format!("instance-{instance}");
        let options = LeaderElectionOptions::default()
            .with_node_id(&node)
            .with_lease_time(Duration::from_secs(30));
        let pool = ThreadPoolLeaderElector::new(backend()?, options, 4)?;
        let config = PollerConfig::new("sync-invoices", INTERVAL).with_concurrency(4);
        let source = {
            let tenants = Arc::clone(&tenants);
            move || tenants.lock().unwrap().clone()
        };
        let job = {
            let (ran, panicked_once) = (Arc::clone(&ran), Arc::clone(&panicked_once));
            move |tenant: TenantId, lease: &LeaseContext| {
                sync_invoices(&tenant, lease, &ran, &panicked_once)
            }
        };
        pollers.push((node, BlockingTenantPoller::new(&pool, config, source, job)?));
    }

    let shutdown = Shutdown::new();
    let cycles_seen = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for (node, poller) in &pollers {
            let (shutdown, cycles_seen, tenants) = (&shutdown, &cycles_seen, &tenants);
            s.spawn(move || {
                poller.run(shutdown, |report| {
                    println!("[{node}] {report}");
                    if cycles_seen.fetch_add(1, Ordering::SeqCst) + 1 == INSTANCES * 2 {
                        tenants.lock().unwrap().push("tenant-21-new".into());
                    }
                });
            });
        }
        // Stop half-way through the last cycle, when every instance has reported it.
        std::thread::sleep(until_next_boundary() + INTERVAL * (CYCLES - 1) + INTERVAL / 2);
        shutdown.trigger();
    });

    println!("\njobs run per cycle (all instances together):");
    for (cycle, count) in ran.lock().unwrap().iter() {
        println!("  cycle {cycle}: {count}");
    }
    Ok(())
}

/// The per-tenant job: pretend to sync invoices for a few milliseconds.
///
/// A real job would send `lease.fencing_token()` with each write to the tenant's store,
/// so the store refuses an instance that was paused past its lease, and would call
/// `lease.check()` between batches.
fn sync_invoices(
    tenant: &TenantId,
    lease: &LeaseContext,
    ran: &Mutex<BTreeMap<u64, usize>>,
    panicked_once: &AtomicBool,
) -> Result<usize, String> {
    let cycle = since_epoch().as_nanos() / INTERVAL.as_nanos();
    *ran.lock().unwrap().entry(cycle as u64).or_default() += 1;
    std::thread::sleep(Duration::from_millis(5 + tenant.as_str().len() as u64));
    lease.check().map_err(|err| err.to_string())?; // the lease must still be ours to write
    match tenant.as_str() {
        "tenant-07" => Err("the billing API answered 503".into()),
        "tenant-13" if !panicked_once.swap(true, Ordering::SeqCst) => {
            panic!("tenant-13's data is corrupt (this panic is caught and reported)")
        }
        _ => Ok(tenant.as_str().len() * 3),
    }
}

fn since_epoch() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

fn until_next_boundary() -> Duration {
    let step = INTERVAL.as_nanos();
    Duration::from_nanos((step - since_epoch().as_nanos() % step) as u64)
}
