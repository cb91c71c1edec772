//! Ranked leadership on every backend: the highest live rank leads whatever the start
//! order; when it goes the next rank takes over within the failover bound; when it comes
//! back it leads again (preemption on) or waits its turn (off); never two leaders at a
//! sampled moment, and fencing tokens grow across every handover.

use crate::on_every_backend;
use std::sync::Arc;
use std::time::Duration;

use leader::{
    AnyBackend, AsyncLeaderElector, CampaignConfig, LeaderElectionOptions, LeaderElector,
    LeadershipEvent, LeadershipEvents, LeadershipHandle, RevokeReason,
};
use leader_rig::LeaderSampler;
use leader_testkit::{fresh_name, wait_until};

on_every_backend!(
    the_highest_rank_leads_whatever_the_start_order,
    a_higher_rank_takes_over_and_preempts_when_it_returns,
    without_preemption_a_returning_rank_waits_its_turn,
    async_ranked_campaigns_hand_over,
);

// A renew deadline of 2 s: a leader starved for a second on a loaded machine keeps its
// term, so the checks that nothing changes over a few heartbeats hold.
const LEASE: Duration = Duration::from_secs(3);
const HEARTBEAT: Duration = Duration::from_millis(500);

/// How long a takeover may take after the leader crashed: its lease and its membership
/// record run out, then a standby's next poll, with room for a loaded machine.
const FAILOVER_BOUND: Duration = Duration::from_secs(10);

fn config(rank: u32, preempt: bool) -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(LEASE)
        .with_heartbeat(HEARTBEAT)
        .with_poll_interval(Duration::from_millis(100))
        .with_rank(rank)
        .with_preemption(preempt)
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default().with_node_id(node)
}

struct Race {
    backend: AnyBackend,
    name: String,
    sampler: LeaderSampler,
}

impl Race {
    fn new(backend: AnyBackend) -> Self {
        Race {
            backend,
            name: fresh_name("ranked").to_string(),
            sampler: LeaderSampler::start(),
        }
    }

    fn start(&self, rank: u32, preempt: bool) -> LeadershipHandle {
        let elector = LeaderElector::new(self.backend.clone(), options(&format!("rank-{rank}")));
        let handle = elector
            .unwrap()
            .campaign(&self.name, config(rank, preempt))
            .unwrap();
        self.sampler.watch(Arc::clone(handle.state()));
        handle
    }

    fn finish(self) {
        self.sampler.finish().expect("never two leaders at once");
    }
}

fn token(handle: &LeadershipHandle) -> u64 {
    handle.term().expect("leading").fencing_token()
}

fn events(events: &LeadershipEvents) -> Vec<LeadershipEvent> {
    std::iter::from_fn(|| events.try_recv()).collect()
}

fn elected(events: &[LeadershipEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, LeadershipEvent::Elected { .. }))
}

fn the_highest_rank_leads_whatever_the_start_order(backend: AnyBackend) {
    let orders = [
        [1, 2, 3],
        [1, 3, 2],
        [2, 1, 3],
        [2, 3, 1],
        [3, 1, 2],
        [3, 2, 1],
    ];
    for order in orders {
        let race = Race::new(backend.clone());
        let handles: Vec<(u32, LeadershipHandle)> = order
            .iter()
            .map(|&rank| {
                let handle = race.start(rank, true);
                std::thread::sleep(Duration::from_millis(40));
                (rank, handle)
            })
            .collect();
        let top = &handles.iter().find(|(rank, _)| *rank == 3).unwrap().1;
        let top_events = top.events();
        wait_until(&format!("rank 3 leads ({order:?})"), FAILOVER_BOUND, || {
            top.is_leader()
        });
        // It stays the leader: nothing revokes it over a few heartbeats.
        std::thread::sleep(HEARTBEAT * 3);
        let seen = events(&top_events);
        assert!(
            !seen
                .iter()
                .any(|e| matches!(e, LeadershipEvent::Revoked { .. })),
            "{order:?}: {seen:?}"
        );
        for (rank, handle) in &handles {
            assert_eq!(handle.is_leader(), *rank == 3, "{order:?}: rank {rank}");
        }
        drop(handles);
        race.finish();
    }
}

fn a_higher_rank_takes_over_and_preempts_when_it_returns(backend: AnyBackend) {
    let race = Race::new(backend);
    let low = race.start(1, true);
    let mid = race.start(2, true);
    let top = race.start(3, true);
    wait_until("rank 3 leads", FAILOVER_BOUND, || top.is_leader());
    let first = token(&top);
    // From here on the others see rank 3 (rank 1, started first, may have led briefly).
    let (low_events, mid_events) = (low.events(), mid.events());

    // The leader crashes: rank 2, not rank 1, takes over once its lease runs out.
    top.abandon();
    let failover = wait_until("rank 2 takes over", FAILOVER_BOUND, || mid.is_leader());
    let second = token(&mid);
    assert!(second > first, "tokens grow: {first} then {second}");

    // It comes back: rank 2 ends its term for it, and says why.
    let back = race.start(3, true);
    let handover = wait_until("rank 3 leads again", FAILOVER_BOUND, || back.is_leader());
    // For the issue note: `cargo test -p leader --all-features --test it -- ranked:: --nocapture`.
    eprintln!(
        "ranked timings: crash failover {failover:?}, preemption handover {handover:?} (lease {LEASE:?}, heartbeat {HEARTBEAT:?})"
    );
    let third = token(&back);
    assert!(third > second, "tokens grow: {second} then {third}");
    let seen = events(&mid_events);
    assert!(
        seen.iter().any(|e| matches!(
            e,
            LeadershipEvent::Revoked {
                reason: RevokeReason::Preempted { by_rank: 3 }
            }
        )),
        "rank 2 was preempted by rank 3: {seen:?}"
    );
    assert!(!mid.is_leader());
    assert!(
        !elected(&events(&low_events)),
        "rank 1 never leads while others live"
    );
    drop((low, mid, back));
    race.finish();
}

fn without_preemption_a_returning_rank_waits_its_turn(backend: AnyBackend) {
    let race = Race::new(backend);
    let top = race.start(3, false);
    wait_until("rank 3 leads", FAILOVER_BOUND, || top.is_leader());
    let mid = race.start(2, false);
    let low = race.start(1, false);
    let low_events = low.events();

    top.abandon();
    wait_until("rank 2 takes over", FAILOVER_BOUND, || mid.is_leader());
    let second = token(&mid);

    // Rank 3 returns and stands by: rank decides only when the leader goes.
    let back = race.start(3, false);
    let back_events = back.events();
    std::thread::sleep(HEARTBEAT * 4);
    assert!(mid.is_leader() && !back.is_leader());
    assert!(!elected(&events(&back_events)));

    // Rank 2 resigns: rank 3, not rank 1, takes over.
    mid.resign();
    wait_until("rank 3 takes over", FAILOVER_BOUND, || back.is_leader());
    assert!(token(&back) > second);
    assert!(
        !elected(&events(&low_events)),
        "rank 1 never leads while others live"
    );
    drop((low, back));
    race.finish();
}

fn async_ranked_campaigns_hand_over(backend: AnyBackend) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let name = fresh_name("async-ranked").to_string();
    let sampler = LeaderSampler::start();
    runtime.block_on(async {
        let start = |rank: u32| {
            let elector =
                AsyncLeaderElector::new(backend.clone(), options(&format!("rank-{rank}"))).unwrap();
            let handle = elector.campaign(&name, config(rank, true)).unwrap();
            sampler.watch(Arc::clone(handle.state()));
            handle
        };
        let low = start(1);
        let low_events = low.events();
        wait_until("rank 1 leads alone", FAILOVER_BOUND, || low.is_leader());
        let first = low.term().unwrap().fencing_token();
        let top = start(3);
        // The campaigns run on the runtime's workers; this thread may block on waits.
        wait_until("rank 3 preempts rank 1", FAILOVER_BOUND, || top.is_leader());
        assert!(top.term().unwrap().fencing_token() > first);
        let seen = events(&low_events);
        assert!(
            seen.iter().any(|e| matches!(
                e,
                LeadershipEvent::Revoked {
                    reason: RevokeReason::Preempted { by_rank: 3 }
                }
            )),
            "{seen:?}"
        );
        top.resign().await;
        wait_until("rank 1 leads again", FAILOVER_BOUND, || low.is_leader());
        low.resign().await;
    });
    sampler.finish().expect("never two leaders at once");
}
