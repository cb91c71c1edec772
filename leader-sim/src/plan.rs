//! What one run plays: the nodes, the store's semantics, the lease, the faults and the
//! seed of everything else (message delays, losses, the nodes' work). [`Plan::random`]
//! draws a plan from a seed; a shrunk plan prints as a test ([`Plan::as_test`]).

use std::fmt::Write as _;

use leader_core::__private::Defect;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod ranked;

/// Whose semantics the model store has (see [`crate::store`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Redis: a lock expires on the server's clock; a new owner's token is
    /// `max(counter + 1, server clock in µs)`; a restart without persistence loses every
    /// record and counter, a failover to an asynchronous replica the last writes.
    Redis,
    /// PostgreSQL, SQLite, MongoDB: a counter stored beside the record, kept by every
    /// fault (the store is durable); rows deleted by hand lose the records only.
    Sql,
    /// etcd: the token is the store's revision, which every write raises and nothing
    /// loses.
    Etcd,
}

impl Profile {
    /// Whether the store tells waiters that a lock was released: Redis publishes it,
    /// etcd's watch sees it; the SQL stores are polled.
    pub fn notifies(self) -> bool {
        matches!(self, Profile::Redis | Profile::Etcd)
    }
}

/// One injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// When it begins, in ms of simulated time.
    pub at_ms: u64,
    /// What it does.
    pub kind: FaultKind,
}

/// What a [`Fault`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The node stops (SIGSTOP, a GC pause, a VM freeze) for `ms`; its clock runs on.
    Pause {
        /// The node.
        node: u32,
        /// How long.
        ms: u64,
    },
    /// The node is killed (its leases and background releases die with it) and starts
    /// again after `down_ms`.
    Crash {
        /// The node.
        node: u32,
        /// How long it stays down.
        down_ms: u64,
    },
    /// Every message to and from the node is lost for `ms` (a partition).
    Partition {
        /// The node.
        node: u32,
        /// How long.
        ms: u64,
    },
    /// Every message to and from the node takes `extra_ms` longer for `ms`.
    SlowLink {
        /// The node.
        node: u32,
        /// How long.
        ms: u64,
        /// The added delay, each way.
        extra_ms: u64,
    },
    /// The store loses every record (and, on Redis, every counter): a restart without
    /// persistence, or rows deleted by hand.
    LoseAll,
    /// The store goes back to what it held `ms` ago (a failover to an asynchronous
    /// replica that had not received the last writes). Redis only.
    RollBack {
        /// How far back.
        ms: u64,
    },
    /// The node's wall clock is stepped by `ms` (an NTP step, an operator's `date -s`);
    /// its monotonic clock, the one the engine reads, does not move.
    ClockStep {
        /// The node.
        node: u32,
        /// The step, forward or back.
        ms: i64,
    },
    /// The node's campaign resigns (`LeadershipHandle::resign`): a leader ends its term,
    /// withdraws its candidacy (releases its membership record) and releases the lock; a
    /// standby withdraws. It campaigns again, afresh, after a rest. Ranked plans only.
    Resign {
        /// The node.
        node: u32,
    },
}

impl FaultKind {
    /// The node it strikes, if it strikes one.
    pub fn node(&self) -> Option<u32> {
        match *self {
            FaultKind::Pause { node, .. }
            | FaultKind::Crash { node, .. }
            | FaultKind::Partition { node, .. }
            | FaultKind::SlowLink { node, .. }
            | FaultKind::ClockStep { node, .. }
            | FaultKind::Resign { node } => Some(node),
            FaultKind::LoseAll | FaultKind::RollBack { .. } => None,
        }
    }
}

/// The network between the nodes and the store: every message's delay is drawn from
/// these; a few are lost, duplicated or held back (reordered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    /// The shortest one-way delay, µs.
    pub min_us: u64,
    /// The usual one-way delay's upper bound, µs.
    pub max_us: u64,
    /// One message in this many is held back for up to a lease (0: none).
    pub held_back_one_in: u32,
    /// One message in this many is lost (0: none).
    pub lost_one_in: u32,
    /// One request in this many is delivered twice (0: none).
    pub duplicated_one_in: u32,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            min_us: 50,
            max_us: 2_000,
            held_back_one_in: 200,
            lost_one_in: 200,
            duplicated_one_in: 200,
        }
    }
}

/// A defect planted for a run, to show the simulator catches it: one of the engine's
/// (see [`Defect`]), or one of the model store's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Planted {
    /// A defect in the engine's decisions.
    Engine(Defect),
    /// The store hands out the caller's clock reading (µs) as a new owner's token, as a
    /// backend that took the token from the client's clock would: under clock skew,
    /// tokens go back.
    TokenFromClientClock,
    /// The store's listing answers no record (a backend whose list of a prefix misses
    /// what it holds): ranked candidates never see a better rank, so nothing preempts.
    ListingMissesRecords,
}

impl Planted {
    /// Every defect the simulator can plant.
    pub fn all() -> Vec<Planted> {
        let mut all: Vec<Planted> = Defect::ALL.into_iter().map(Planted::Engine).collect();
        all.push(Planted::TokenFromClientClock);
        all.push(Planted::ListingMissesRecords);
        all
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Planted::Engine(defect) => defect.name(),
            Planted::TokenFromClientClock => "token-from-client-clock",
            Planted::ListingMissesRecords => "listing-misses-records",
        }
    }
}

/// What seeds the draw of [`Plan::tenants`], beside the plan's own seed.
const TENANTS_SEED: u64 = 0x7e4a_4e75_b47c_4e55;
/// A scheduled job the nodes run (`leader-schedule`'s plan and firing, under the job's
/// lock) instead of a job in a loop: a fixed rate and the job's policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// The job's fixed rate, ms (ticks are multiples of it on the nodes' wall clocks).
    pub every_ms: u64,
    /// The job's clock-skew bound, ms: its lock's wait, and (twice it) how late a tick
    /// may fire and still be on time.
    pub clock_skew_ms: u64,
    /// Missed ticks: caught up, the latest this many (0: skipped).
    pub catch_up: u32,
    /// At-least-once delivery (an unfinished tick is run again), else at most once.
    pub at_least_once: bool,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The seed of everything the plan does not list (delays, losses, work times).
    pub seed: u64,
    /// How many nodes contend for the lock.
    pub nodes: u32,
    /// The store's semantics.
    pub profile: Profile,
    /// The lease each node asks for, ms.
    pub lease_ms: u64,
    /// How long the run lasts, ms of simulated time.
    pub run_ms: u64,
    /// How far each node's clock rate is off the true one, in parts per million (one
    /// value per node; missing ones are 0). Positive: the clock runs fast.
    pub node_drift_ppm: Vec<i32>,
    /// How far each node's wall clock is off the true time, ms (one value per node;
    /// missing ones are 0). The engine never reads it; a client sends it with its calls.
    pub node_skew_ms: Vec<i64>,
    /// How far the store's clock rate is off, ppm.
    pub store_drift_ppm: i32,
    /// The network.
    pub network: Network,
    /// The faults, by time.
    pub faults: Vec<Fault>,
    /// Whether the nodes campaign (stand by, lead terms: `CampaignRun` and `TermLoop`)
    /// rather than run a job in a loop (`Attempts` and the lease tracker).
    pub campaign: bool,
    /// How many slots the campaign's group has (1: a single leader; jobs use 1).
    pub slots: u32,
    /// Whether the store tries a group's slots one call each, with no own-slot check
    /// across them (as a third-party backend may): a lost answer can leave an attempt's
    /// owner holding a slot besides its term's, which the engine releases as a stray.
    pub slots_apart: bool,
    /// How long a node's store client waits for an answer before it fails the call, ms
    /// (a renewal also races its lease's deadline, whichever is first).
    pub op_timeout_ms: u64,
    /// Defects planted for the run.
    pub defects: Vec<Planted>,
    /// With 2 or more (up to 8), the nodes are tenant pollers of that many tenants (one
    /// lock each, `lock` = tenant index in the history): each cycle tries every tenant's
    /// lock in one batched call, runs an action per tenant won, renews and releases them
    /// in batches (`TenantBatch`, `AcquireBatch`); 0 or 1: not a poller. Jobs only (not
    /// with a campaign or a schedule).
    pub tenants: u32,
    /// A scheduled job the nodes run instead of a job in a loop (not with a campaign).
    pub schedule: Option<Scheduled>,
    /// A ranked campaign (`CampaignConfig::with_rank`): each node's rank and whether it
    /// preempts (a higher live rank ends its term), one pair per node; empty: unranked.
    /// Only for a single-leader campaign (the engine refuses ranked groups).
    pub ranks: Vec<(u32, bool)>,
}

impl Plan {
    /// A plan drawn from `seed`: 2–5 nodes, a profile, a lease of 0.2–2 s, a run of 20
    /// leases, clocks within ±`max_drift_ppm` of true, and a fault every few leases.
    /// Half of the plans campaign; half of the single-leader campaigns are ranked, with
    /// resignations (see [`Plan::random_ranked`]).
    pub fn random(seed: u64, max_drift_ppm: i32) -> Plan {
        Plan::random_with_lease(seed, max_drift_ppm, None)
    }

    /// [`random`](Self::random) with the lease `lease_ms` when given (the faults scale
    /// with it).
    pub fn random_with_lease(seed: u64, max_drift_ppm: i32, lease_ms: Option<u64>) -> Plan {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_f00d_cafe_d00d);
        let nodes = rng.random_range(2..=5);
        let profile = match rng.random_range(0..3) {
            0 => Profile::Redis,
            1 => Profile::Sql,
            _ => Profile::Etcd,
        };
        let drawn = rng.random_range(200..=2_000);
        let lease_ms = lease_ms.unwrap_or(drawn).max(10);
        let run_ms = lease_ms * 20;
        let drift = |rng: &mut StdRng| {
            if max_drift_ppm == 0 {
                0
            } else {
                rng.random_range(-max_drift_ppm..=max_drift_ppm)
            }
        };
        let node_drift_ppm = (0..nodes).map(|_| drift(&mut rng)).collect();
        let skew = i64::try_from(lease_ms / 2).unwrap_or(i64::MAX);
        let node_skew_ms = (0..nodes).map(|_| rng.random_range(-skew..=skew)).collect();
        let store_drift_ppm = drift(&mut rng);
        let mut faults = Vec::new();
        let mut at_ms = rng.random_range(0..lease_ms * 3);
        while at_ms < run_ms {
            let node = rng.random_range(0..nodes);
            let kind = match rng.random_range(0..10) {
                0..=2 => FaultKind::Pause {
                    node,
                    ms: rng.random_range(lease_ms / 10..lease_ms * 3),
                },
                3 | 4 => FaultKind::Crash {
                    node,
                    down_ms: rng.random_range(0..lease_ms * 2),
                },
                5 | 6 => FaultKind::Partition {
                    node,
                    ms: rng.random_range(lease_ms / 10..lease_ms * 2),
                },
                7 => FaultKind::SlowLink {
                    node,
                    ms: rng.random_range(lease_ms / 2..lease_ms * 3),
                    extra_ms: rng.random_range(lease_ms / 10..lease_ms),
                },
                8 if profile == Profile::Redis && rng.random_bool(0.5) => FaultKind::RollBack {
                    ms: rng.random_range(1..lease_ms / 4 + 2),
                },
                8 if profile != Profile::Etcd => FaultKind::LoseAll,
                _ => FaultKind::Pause {
                    node,
                    ms: rng.random_range(1..lease_ms / 10 + 2),
                },
            };
            faults.push(Fault { at_ms, kind });
            at_ms += rng.random_range(lease_ms..lease_ms * 4);
        }
        let campaign = rng.random_bool(0.5);
        // Wall-clock steps, drawn last so that the draws above play as they did.
        for _ in 0..rng.random_range(0..3) {
            let lease = i64::try_from(lease_ms).unwrap_or(i64::MAX);
            faults.push(Fault {
                at_ms: rng.random_range(0..run_ms),
                kind: FaultKind::ClockStep {
                    node: rng.random_range(0..nodes),
                    ms: rng.random_range(-lease * 5..=lease * 5),
                },
            });
        }
        faults.sort_by_key(|f| f.at_ms);
        let slots = if campaign { rng.random_range(1..=3) } else { 1 };
        let slots_apart = slots > 1 && rng.random_bool(0.5);
        // Short (a third of a lease), a lease, or long (two): late answers need the long
        // ones, stray slots the short ones.
        let op_timeout_ms = match rng.random_range(0..3) {
            0 => lease_ms / 3,
            1 => lease_ms,
            _ => lease_ms * 2,
        }
        .max(1);
        // Tenant pollers: a share of the job plans, drawn from a generator of their own
        // so that every draw above plays as before.
        let mut mine = StdRng::seed_from_u64(seed ^ TENANTS_SEED);
        let tenants = if !campaign && mine.random_ratio(1, 2) {
            mine.random_range(2..=8)
        } else {
            0
        };
        // The scheduler's mode, from an rng of its own so that the draws above play as
        // they did: a third of the plans that do not campaign.
        let mut mode = StdRng::seed_from_u64(seed ^ 0x5c4e_d01e_71c4_0001);
        let schedule = (!campaign && mode.random_ratio(1, 3)).then(|| Scheduled {
            every_ms: mode.random_range(lease_ms / 2..=lease_ms * 2).max(10),
            clock_skew_ms: mode.random_range(lease_ms / 10..=lease_ms / 2),
            catch_up: if mode.random_bool(0.5) {
                0
            } else {
                mode.random_range(1..=3)
            },
            at_least_once: mode.random_ratio(1, 4),
        });
        // One mode per plan: a scheduled job's nodes do not poll tenants.
        let tenants = if schedule.is_some() { 0 } else { tenants };
        let mut plan = Plan {
            seed,
            nodes,
            profile,
            lease_ms,
            run_ms,
            node_drift_ppm,
            node_skew_ms,
            store_drift_ppm,
            network: Network::default(),
            faults,
            campaign,
            slots,
            slots_apart,
            op_timeout_ms,
            defects: Vec::new(),
            tenants,
            schedule,
            ranks: Vec::new(),
        };
        // Drawn from a separate rng, after everything else: the draws above play as
        // they did before ranked campaigns were simulated.
        plan.draw_ranks(false);
        plan
    }

    /// Whether the nodes are tenant pollers ([`tenants`](Self::tenants) ≥ 2).
    pub fn polls_tenants(&self) -> bool {
        self.tenants >= 2 && !self.campaign && self.schedule.is_none()
    }

    /// How many locks the store keeps: a group's slots, or a poller's tenants.
    pub fn locks(&self) -> u32 {
        if self.polls_tenants() {
            self.tenants
        } else {
            self.slots.max(1)
        }
    }

    /// The plan as a test to paste into `leader-sim/tests/it/found.rs`: it plays the run
    /// and asserts that it passes (the checker's verdict and the world's own checks).
    pub fn as_test(&self, name: &str) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "#[test]\nfn {name}() {{");
        let _ = writeln!(text, "    let plan = Plan {{");
        let _ = writeln!(text, "        seed: {},", self.seed);
        let _ = writeln!(text, "        nodes: {},", self.nodes);
        let _ = writeln!(text, "        profile: Profile::{:?},", self.profile);
        let _ = writeln!(text, "        lease_ms: {},", self.lease_ms);
        let _ = writeln!(text, "        run_ms: {},", self.run_ms);
        let _ = writeln!(
            text,
            "        node_drift_ppm: vec!{:?},",
            self.node_drift_ppm
        );
        let _ = writeln!(text, "        node_skew_ms: vec!{:?},", self.node_skew_ms);
        let _ = writeln!(text, "        store_drift_ppm: {},", self.store_drift_ppm);
        let _ = writeln!(text, "        network: {:?},", self.network);
        let _ = writeln!(text, "        faults: vec![");
        for fault in &self.faults {
            let _ = writeln!(
                text,
                "            Fault {{ at_ms: {}, kind: FaultKind::{:?} }},",
                fault.at_ms, fault.kind
            );
        }
        let _ = writeln!(text, "        ],");
        let _ = writeln!(text, "        campaign: {},", self.campaign);
        let _ = writeln!(text, "        slots: {},", self.slots);
        let _ = writeln!(text, "        slots_apart: {},", self.slots_apart);
        let _ = writeln!(text, "        op_timeout_ms: {},", self.op_timeout_ms);
        let defects: Vec<String> = self
            .defects
            .iter()
            .map(|d| match d {
                Planted::Engine(defect) => format!("Planted::Engine(Defect::{defect:?})"),
                Planted::TokenFromClientClock => "Planted::TokenFromClientClock".to_owned(),
                Planted::ListingMissesRecords => "Planted::ListingMissesRecords".to_owned(),
            })
            .collect();
        let _ = writeln!(text, "        defects: vec![{}],", defects.join(", "));
        let _ = writeln!(text, "        tenants: {},", self.tenants);
        let _ = writeln!(text, "        schedule: {:?},", self.schedule);
        let _ = writeln!(text, "        ranks: vec!{:?},", self.ranks);
        let _ = writeln!(text, "    }};");
        let _ = writeln!(text, "    let outcome = run(&plan);");
        let _ = writeln!(
            text,
            "    assert!(outcome.passed(), \"{{}}\\n{{:#?}}\\n{{:?}}\\n{{:?}}\", outcome.report, outcome.report.violations, outcome.stuck, outcome.rank_ignored);"
        );
        let _ = writeln!(text, "}}");
        text
    }
}
