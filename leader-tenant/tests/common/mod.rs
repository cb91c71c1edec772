//! Shared by the poller tests: tenants, a run counter, instances on one backend.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use leader_core::{InMemoryBackend, LeaderElectionOptions, ManualClock};
use leader_tenant::{CycleReport, OutcomeKind, TenantId};
use parking_lot::Mutex;

pub const INTERVAL: Duration = Duration::from_secs(60);

pub fn tenants(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("tenant-{i:03}")).collect()
}

/// An in-memory backend on a manual clock, so tests move time instead of sleeping.
pub fn manual_backend() -> (InMemoryBackend, ManualClock) {
    let clock = ManualClock::new(SystemTime::now());
    (InMemoryBackend::with_clock(clock.clone()), clock)
}

pub fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_lease_time(Duration::from_secs(120))
}

/// Counts job runs per (round, tenant); the test sets the round.
#[derive(Debug, Clone, Default)]
pub struct Runs {
    round: Arc<AtomicU64>,
    counts: Arc<Mutex<HashMap<(u64, String), u32>>>,
}

impl Runs {
    pub fn set_round(&self, round: u64) {
        self.round.store(round, Ordering::SeqCst);
    }

    pub fn record(&self, tenant: &TenantId) {
        let round = self.round.load(Ordering::SeqCst);
        *self
            .counts
            .lock()
            .entry((round, tenant.to_string()))
            .or_default() += 1;
    }

    pub fn count(&self, round: u64, tenant: &str) -> u32 {
        self.counts
            .lock()
            .get(&(round, tenant.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Asserts every tenant ran exactly once in `round`.
    pub fn assert_exactly_once(&self, round: u64, tenants: &[String]) {
        for tenant in tenants {
            assert_eq!(
                self.count(round, tenant),
                1,
                "round {round}: {tenant} must run exactly once"
            );
        }
    }
}

/// Asserts that across the instances' reports of one cycle, each tenant was elected in
/// exactly one and skipped in all the others.
pub fn assert_one_winner_per_tenant<T, E>(reports: &[CycleReport<T, E>], tenants: &[String]) {
    for tenant in tenants {
        let kinds: Vec<_> = reports
            .iter()
            .map(|r| r.tenant(tenant).unwrap().outcome.kind())
            .collect();
        let elected = kinds.iter().filter(|k| **k == OutcomeKind::Elected).count();
        let skipped = kinds.iter().filter(|k| **k == OutcomeKind::Skipped).count();
        assert_eq!(
            (elected, skipped),
            (1, reports.len() - 1),
            "{tenant}: {kinds:?}"
        );
    }
}
