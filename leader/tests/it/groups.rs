//! Group leadership on every backend: never more than N holders, all N slots usable at
//! once, ownership per slot, a release frees exactly one slot, expiry, fencing per slot,
//! and group campaigns that fail over.

use crate::on_every_backend;
use std::collections::BTreeSet;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use leader::backend::{AcquireOutcome, AcquireRequest, LockBackend, OwnerToken, ReleaseRequest};
use leader::{
    AnyBackend, AsyncLeaderElector, CampaignConfig, LeaderElectionOptions, LeaderElector,
    LeaderRunResult, LockName,
};
use leader_rig::LeaderSampler;
use leader_testkit::{fresh_name, wait_until};

const SLOTS: u32 = 3;

on_every_backend!(
    all_slots_are_usable_at_once_and_never_more,
    slots_expire_and_their_tokens_never_go_back,
    a_group_campaign_fails_over_slot_by_slot,
    async_group_runs_share_the_slots,
);

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_secs(20))
}

/// A holder inside its action, until told to return.
struct Holder {
    release: mpsc::Sender<()>,
    thread: thread::JoinHandle<LeaderRunResult<(), String>>,
}

fn all_slots_are_usable_at_once_and_never_more(backend: AnyBackend) {
    let name = fresh_name("group").to_string();
    let inside = Arc::new(Barrier::new(SLOTS as usize + 1));
    let holders: Vec<Holder> = (0..SLOTS)
        .map(|n| {
            let group = LeaderElector::new(backend.clone(), options(&format!("node-{n}")))
                .unwrap()
                .group(SLOTS)
                .unwrap();
            let (release, released) = mpsc::channel::<()>();
            let (inside, name) = (Arc::clone(&inside), name.clone());
            let thread = thread::spawn(move || {
                let outcome = group
                    .run_if_leader_result(&name, || {
                        inside.wait();
                        released.recv().map_err(|e| e.to_string())
                    })
                    .unwrap();
                if outcome.is_skipped() {
                    inside.wait(); // so the test goes on, and fails on the state it finds
                }
                outcome
            });
            Holder { release, thread }
        })
        .collect();
    // All three holders are inside their actions at once: every slot is usable.
    inside.wait();

    let group = LeaderElector::new(backend.clone(), options("observer"))
        .unwrap()
        .group(SLOTS)
        .unwrap();
    let state = group.state(&name).unwrap();
    assert!(state.is_full(), "{state:?}");
    let held: Vec<(u32, String, u64)> = state
        .holders()
        .map(|(slot, lease)| (slot, lease.leader_id.clone(), lease.fencing_token))
        .collect();
    let nodes: BTreeSet<&str> = held.iter().map(|(_, node, _)| node.as_str()).collect();
    assert_eq!(nodes.len(), SLOTS as usize, "one slot per holder: {held:?}");

    // A full group: the next nodes skip, on every elector kind.
    for extra in ["extra-a", "extra-b"] {
        let late = LeaderElector::new(backend.clone(), options(extra))
            .unwrap()
            .group(SLOTS)
            .unwrap();
        assert!(
            late.run_if_leader(&name, || ()).unwrap().is_none(),
            "{extra} must skip"
        );
    }
    let pool = leader::ThreadPoolLeaderElector::new(backend.clone(), options("pool"), 1).unwrap();
    let task = pool
        .run_async_in_group_with(&name, SLOTS, |_| Ok::<_, String>(()))
        .unwrap();
    assert!(
        task.wait().unwrap().is_skipped(),
        "the pool's run must skip too"
    );

    // One holder returns: exactly its slot frees, and the next run takes that slot with a
    // larger token than the slot's last one.
    let mut holders = holders.into_iter();
    let first = holders.next().unwrap();
    first.release.send(()).unwrap();
    let finished = first.thread.join().unwrap();
    let LeaderRunResult::Elected {
        slot: freed,
        fencing_token: old_token,
        ..
    } = finished
    else {
        panic!("the first holder led: {finished:?}");
    };
    let state = group.state(&name).unwrap();
    assert_eq!(state.free_slots(), 1, "{state:?}");
    assert!(
        state.slot(freed).unwrap().leader().is_none(),
        "slot {freed} frees: {state:?}"
    );
    let next = LeaderElector::new(backend.clone(), options("next"))
        .unwrap()
        .group(SLOTS)
        .unwrap()
        .run_if_leader_with(&name, |lease| {
            Ok::<_, String>((lease.slot(), lease.fencing_token()))
        })
        .unwrap();
    let (slot, token) = next.into_value().expect("the freed slot is taken");
    assert_eq!(slot, freed, "the only free slot");
    assert!(
        token > old_token,
        "tokens grow per slot: {old_token} then {token}"
    );
    for holder in holders {
        holder.release.send(()).unwrap();
        assert!(holder.thread.join().unwrap().is_elected());
    }
    assert_eq!(group.state(&name).unwrap().free_slots(), SLOTS as usize);
}

fn slots_expire_and_their_tokens_never_go_back(backend: AnyBackend) {
    let name = fresh_name("group-expiry");
    let slot_one = LockName::new(format!("{name}#1")).unwrap();
    // Slot 0 held for long; slot 1 by a node that crashed with a short lease.
    let long = AcquireRequest::new(
        &name,
        OwnerToken::random(),
        "steady",
        Duration::from_secs(30),
    );
    // Long enough that the group is still full when the waiter looks, on a loaded machine.
    let short = Duration::from_millis(1500);
    let crashed = AcquireRequest::new(&slot_one, OwnerToken::random(), "crashed", short);
    let (AcquireOutcome::Acquired(steady), AcquireOutcome::Acquired(lost)) = (
        LockBackend::try_acquire(&backend, long).unwrap(),
        LockBackend::try_acquire(&backend, crashed).unwrap(),
    ) else {
        panic!("fresh slots are free");
    };
    let started = Instant::now();
    let group = LeaderElector::new(
        backend.clone(),
        options("waiter").with_wait_time(Duration::from_secs(10)),
    )
    .unwrap()
    .group(2)
    .unwrap();
    let state = group.state(name.as_str()).unwrap();
    assert!(state.is_full(), "{state:?}");
    let outcome = group
        .run_if_leader_with(name.as_str(), |lease| Ok::<_, String>(lease.slot()))
        .unwrap();
    assert!(
        started.elapsed() >= short / 2,
        "won only after the lease ran out"
    );
    assert_eq!(outcome.slot(), Some(1), "{outcome:?}");
    assert_eq!(outcome.value(), Some(&1));
    assert!(outcome.fencing_token().unwrap() > lost.fencing_token);
    LockBackend::release(&backend, ReleaseRequest::new(&steady, Duration::ZERO)).unwrap();
}

fn a_group_campaign_fails_over_slot_by_slot(backend: AnyBackend) {
    let name = fresh_name("group-campaign").to_string();
    // A renew deadline of 2 s: a leader starved for a second on a loaded machine keeps
    // its term, so the checks below see the leaders they waited for.
    let config = CampaignConfig::default()
        .with_lease_time(Duration::from_secs(3))
        .with_heartbeat(Duration::from_millis(500))
        .with_poll_interval(Duration::from_millis(100));
    let sampler = LeaderSampler::start_with_limit(2);
    let campaign = |node: &str| {
        let handle = LeaderElector::new(backend.clone(), options(node))
            .unwrap()
            .group(2)
            .unwrap()
            .campaign(&name, config)
            .unwrap();
        sampler.watch(Arc::clone(handle.state()));
        handle
    };
    let mut handles: Vec<_> = ["a", "b", "c"].into_iter().map(campaign).collect();
    let leaders =
        |handles: &[leader::LeadershipHandle]| handles.iter().filter(|h| h.is_leader()).count();
    wait_until("two of three lead", Duration::from_secs(10), || {
        leaders(&handles) == 2
    });
    let standby = handles.iter().position(|h| !h.is_leader()).unwrap();
    let gone = (standby + 1) % 3;
    let gone_slot = handles[gone].term().unwrap().slot();
    let kept_slot = handles[3 - standby - gone].term().unwrap().slot();
    assert_ne!(gone_slot, kept_slot, "two leaders, two slots");

    // A leader crashes: the standby takes its slot once the lease runs out.
    handles.remove(gone).abandon();
    let standby = if gone < standby { standby - 1 } else { standby };
    let took = wait_until("the standby takes over", Duration::from_secs(10), || {
        handles[standby].is_leader()
    });
    assert_eq!(
        handles[standby].term().unwrap().slot(),
        gone_slot,
        "the crashed one's slot"
    );
    assert!(took <= config.lease_time() * 4, "failover took {took:?}");
    assert_eq!(leaders(&handles), 2);
    drop(handles);
    sampler.finish().expect("never more leaders than slots");
}

fn async_group_runs_share_the_slots(backend: AnyBackend) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let name = fresh_name("async-group").to_string();
    let group = |node: &str| {
        AsyncLeaderElector::new(backend.clone(), options(node))
            .unwrap()
            .group(2)
            .unwrap()
    };
    let (a, b, c) = (group("a"), group("b"), group("c"));
    runtime.block_on(async {
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let (inside_tx, mut inside_rx) = tokio::sync::mpsc::channel(2);
        let hold = |elector: leader::AsyncLeaderGroupElector<AnyBackend>| {
            let (release, inside, name) = (Arc::clone(&release), inside_tx.clone(), name.clone());
            tokio::spawn(async move {
                elector
                    .run_if_leader_with(&name, |lease| async move {
                        inside.send(lease.slot()).await.unwrap();
                        let _permit = release.acquire().await.unwrap();
                        Ok::<_, String>(lease.fencing_token())
                    })
                    .await
                    .unwrap()
            })
        };
        let (held_a, held_b) = (hold(a), hold(b));
        let mut slots = [0; 2];
        for slot in &mut slots {
            let entered = tokio::time::timeout(Duration::from_secs(10), inside_rx.recv()).await;
            *slot = entered.expect("a holder entered its action").unwrap();
        }
        assert_ne!(slots[0], slots[1], "two holders, two slots");
        assert!(c.run_if_leader(&name, || async {}).await.unwrap().is_none());
        let state = c.state(&name).await.unwrap();
        assert_eq!(state.holders().count(), 2, "{state:?}");
        release.add_permits(2);
        for held in [held_a, held_b] {
            assert!(held.await.unwrap().is_elected());
        }
        let state = c.state(&name).await.unwrap();
        assert_eq!(state.free_slots(), 2, "{state:?}");
    });
}
