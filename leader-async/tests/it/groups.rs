//! Group and ranked leadership on the async elector, on every runtime.

use std::sync::Arc;
use std::time::Duration;

use leader_async::AsyncLeaderElector;
use leader_core::{
    CampaignConfig, InMemoryBackend, LeaderElectionOptions, LeadershipEvent, RevokeReason,
};
use leader_rig::LeaderSampler;
use leader_testkit::{Runner, eventually, within};

leader_testkit::on_every_runtime!(
    group_runs_take_distinct_slots_and_a_full_group_skips,
    group_campaigns_fill_every_slot_and_fail_over,
    a_higher_rank_preempts_and_the_lower_takes_back_over,
);

fn elector(backend: &InMemoryBackend, node: &str) -> AsyncLeaderElector<InMemoryBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO);
    AsyncLeaderElector::new(backend.clone(), options).unwrap()
}

fn config() -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(Duration::from_millis(1500))
        .with_heartbeat(Duration::from_millis(250))
        .with_poll_interval(Duration::from_millis(50))
}

fn group_runs_take_distinct_slots_and_a_full_group_skips<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let (a, b, c) = (
        elector(&backend, "a").group(2).unwrap(),
        elector(&backend, "b").group(2).unwrap(),
        elector(&backend, "c").group(2).unwrap(),
    );
    runner.block_on(async {
        // `a` holds a slot while `b` runs: both lead at once, in different slots, and `c`
        // finds the group full.
        let outer = a
            .run_if_leader_with("consumers", |held| async move {
                let inner = b
                    .run_if_leader_with("consumers", |lease| async move {
                        let full = c.run_if_leader("consumers", || async {}).await.unwrap();
                        Ok::<_, String>((lease.slot(), full.is_none()))
                    })
                    .await
                    .unwrap();
                let (slot, c_skipped) = inner.into_value().expect("b took the free slot");
                assert_ne!(slot, held.slot());
                assert!(c_skipped, "a full group skips");
                Ok::<_, String>(held.slot())
            })
            .await
            .unwrap();
        assert!(outer.is_elected(), "{outer:?}");
        let state = elector(&backend, "d")
            .group(2)
            .unwrap()
            .state("consumers")
            .await
            .unwrap();
        assert_eq!(state.free_slots(), 2, "{state:?}");
    });
}

fn group_campaigns_fill_every_slot_and_fail_over<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let sampler = LeaderSampler::start_with_limit(2);
    runner.block_on(async {
        let start = |node: &str| {
            let handle = elector(&backend, node)
                .group(2)
                .unwrap()
                .campaign("consumers", config())
                .unwrap();
            sampler.watch(Arc::clone(handle.state()));
            handle
        };
        let a = start("a");
        let b = start("b");
        let term_a = within(Duration::from_secs(8), a.wait_for_term())
            .await
            .unwrap();
        let term_b = within(Duration::from_secs(8), b.wait_for_term())
            .await
            .unwrap();
        assert_ne!(term_a.slot(), term_b.slot(), "two leaders, two slots");
        let c = start("c");
        assert!(!c.is_leader());
        a.abandon().await;
        eventually("c takes a's slot", Duration::from_secs(10), || {
            c.is_leader()
        })
        .await;
        assert_eq!(c.term().unwrap().slot(), term_a.slot());
        b.resign().await;
        c.resign().await;
    });
    sampler.finish().expect("never more leaders than slots");
}

fn a_higher_rank_preempts_and_the_lower_takes_back_over<R: Runner>(runner: &R) {
    let backend = InMemoryBackend::new();
    let sampler = LeaderSampler::start();
    runner.block_on(async {
        let start = |node: &str, rank: u32| {
            let handle = elector(&backend, node)
                .campaign("primary", config().with_rank(rank))
                .unwrap();
            sampler.watch(Arc::clone(handle.state()));
            handle
        };
        let low = start("low", 1);
        let first = within(Duration::from_secs(8), low.wait_for_term())
            .await
            .unwrap();
        let events = low.events();
        let high = start("high", 5);
        eventually("high preempts low", Duration::from_secs(8), || {
            high.is_leader()
        })
        .await;
        assert!(first.is_lost());
        assert!(high.term().unwrap().fencing_token() > first.fencing_token());
        // Wait for the preemption's own event: on a loaded machine an earlier term of
        // `low` may also have ended for another reason.
        let preempted = within(Duration::from_secs(2), async {
            loop {
                if let LeadershipEvent::Revoked {
                    reason: RevokeReason::Preempted { by_rank },
                } = events.recv().await.unwrap()
                {
                    return by_rank;
                }
            }
        })
        .await;
        assert_eq!(preempted, Some(5), "low is told it was preempted by rank 5");
        high.resign().await;
        eventually("low leads again", Duration::from_secs(8), || {
            low.is_leader()
        })
        .await;
        low.resign().await;
    });
    sampler.finish().expect("never two leaders at once");
}
