//! Ranked plans: each node's rank and preemption, and the moments campaigns resign,
//! drawn from a separate rng so that every other draw of a seed plays as before.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Fault, FaultKind, Plan};

/// Mixed into the seed of the ranked draws' own rng.
const RANKED_SEED: u64 = 0x0a4c_2a1e_d5ee_d0ff;

impl Plan {
    /// A ranked plan drawn from `seed`: [`Plan::random`]'s draws, then a single-leader
    /// campaign for every plan (not only the half that campaigns), with ranks drawn.
    pub fn random_ranked(seed: u64, max_drift_ppm: i32) -> Plan {
        let mut plan = Plan::random(seed, max_drift_ppm);
        plan.campaign = true;
        plan.slots = 1;
        plan.slots_apart = false;
        plan.faults
            .retain(|f| !matches!(f.kind, FaultKind::Resign { .. }));
        plan.ranks.clear();
        plan.draw_ranks(true);
        plan
    }

    /// Whether the nodes run a ranked campaign.
    pub fn ranked(&self) -> bool {
        self.campaign && self.slots <= 1 && !self.ranks.is_empty()
    }

    /// Draws ranks for half of the single-leader campaign plans (all of them when
    /// `always`): each node a rank of 0–3 (ties are common: the lock alone settles them)
    /// and preemption for two in three, and up to three resignations at random moments.
    pub(super) fn draw_ranks(&mut self, always: bool) {
        let mut rng = StdRng::seed_from_u64(self.seed ^ RANKED_SEED);
        let eligible = self.campaign && self.slots <= 1;
        if !eligible || !(always || rng.random_bool(0.5)) {
            return;
        }
        self.ranks = (0..self.nodes)
            .map(|_| (rng.random_range(0..=3), rng.random_ratio(2, 3)))
            .collect();
        for _ in 0..rng.random_range(0..=3) {
            let at_ms = rng.random_range(0..self.run_ms.max(1));
            let node = rng.random_range(0..self.nodes.max(1));
            self.faults.push(Fault {
                at_ms,
                kind: FaultKind::Resign { node },
            });
        }
        self.faults.sort_by_key(|f| f.at_ms);
    }
}
