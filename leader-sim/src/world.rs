//! The world of one run: the event queue in true time, the network between the nodes and
//! the store, the faults of the plan, the fenced resource, and the history the checker
//! judges.

mod checks;
mod faults;
mod judge;
mod ranked;

pub use ranked::RANKED_SETTLE_HEARTBEATS;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use crate::choices::{Choices, Message, Seeded};
use crate::clock::SimClock;
use crate::node::{Effect, Node, Setup, Timer};
use crate::plan::{FaultKind, Plan, Planted};
use crate::store::{Answer, Call, ModelStore};
use leader_core::__private::{Defect, SeededRandomness, plant};
use leader_core::OwnerToken;
use leader_history::{Clock, Event, FaultKind as HistoryFault, FaultSpan, Phase, Report, What};

/// What a run gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The checker's verdict on the history.
    pub report: Report,
    /// The history, in the order it was written (JSON lines of it are a trace
    /// `leader-history` reads).
    pub events: Vec<Event>,
    /// How many events the world processed.
    pub steps: u64,
    /// Locks the store kept for an owner its node had given up (an orphan), longer than
    /// [`ABANDONED_WITHIN_US`] with no fault to explain it: what orphan releases are for.
    pub stuck: Vec<String>,
    /// Every grant the store made (a record for a new owner): (lock, token, node). What
    /// a run's acquisitions are checked against, independently of the history.
    pub grants: Vec<(u32, u64, u32)>,
    /// A ranked campaign's leadership that ignored the ranks with no fault in the way for
    /// [`RANKED_SETTLE_HEARTBEATS`] heartbeats (see `world/ranked.rs`): the lock held by a
    /// preempting candidate below a live better rank, or by nobody.
    pub rank_ignored: Vec<String>,
    /// How many of the ranked checks found the run quiet enough to judge.
    pub ranked_checks: u64,
}

/// How soon the store must have let go of an owner its node gave up, when no fault is in
/// the way: a few round trips and the orphan releases' first backoff.
pub const ABANDONED_WITHIN_US: u64 = 100_000;

/// One item in this many of a tenant poller's batches fails alone (see
/// `ModelStore::with_partial_batches`).
const PARTIAL_ONE_IN: u32 = 30;

/// What seeds the draws of the items that fail alone, beside the plan's seed.
const PARTIAL_SEED: u64 = 0x9a27_1a1b_a7c4_e500;

impl Outcome {
    /// The checker's verdict passed, and no lock was stuck with a given-up owner.
    pub fn passed(&self) -> bool {
        self.report.passed() && self.stuck.is_empty() && self.rank_ignored.is_empty()
    }
}

#[derive(Debug)]
enum Ev {
    Wake {
        node: u32,
        life: u32,
        timer: Timer,
    },
    ToStore {
        node: u32,
        life: u32,
        id: u64,
        call: Call,
        client_us: u64,
    },
    ToNode {
        node: u32,
        life: u32,
        id: u64,
        answer: Answer,
    },
    Fault(usize),
    PauseOver,
    Restart {
        node: u32,
    },
    /// The store's notice to a waiting node that the lock was released.
    Notify {
        node: u32,
        life: u32,
    },
    CheckAbandoned {
        node: u32,
        owner: OwnerToken,
        since: u64,
    },
    CheckStrays {
        node: u32,
        owner: OwnerToken,
        slot: u32,
        since: u64,
    },
    /// A group's acquire on a store whose slots are separate calls: the next slot's try.
    SlotTry(SlotTry),
    End,
    /// A ranked campaign's leadership is checked against the ranks.
    CheckRanked,
}

/// A group's acquire on a store whose slots are separate calls, between two slots.
#[derive(Debug)]
struct SlotTry {
    node: u32,
    life: u32,
    id: u64,
    owner: OwnerToken,
    /// The node the record names.
    holder: u32,
    lease_us: u64,
    /// The slots still to try, the next first.
    slots: Vec<u32>,
    client_us: u64,
    /// The first held slot's record, for a `Held` answer.
    first_held: Option<crate::store::Record>,
}

/// A queued event: ordered by time, then by the order it was queued.
#[derive(Debug)]
struct Queued {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct NodeFaults {
    life: u32,
    down: bool,
    paused_until: u64,
    partitioned_until: u64,
    slow_until: u64,
    slow_extra_us: u64,
}

struct World<'a> {
    plan: &'a Plan,
    t: u64,
    seq: u64,
    steps: u64,
    queue: BinaryHeap<Reverse<Queued>>,
    choices: &'a mut dyn Choices,
    store: ModelStore,
    store_clock: SimClock,
    nodes: Vec<Node<'a>>,
    faults_of: Vec<NodeFaults>,
    /// The fenced resource's highest accepted token, per lock (slot).
    highest_written: Vec<u64>,
    events: Vec<Event>,
    resource: Vec<Event>,
    spans: Vec<FaultSpan>,
    effects: Vec<Effect>,
    stuck: Vec<String>,
    /// The nodes (and lives) waiting for the lock's release, where the store notifies.
    waiters: Vec<(u32, u32)>,
    /// The ranked checks' alarms, and how many checks judged.
    rank_ignored: Vec<String>,
    ranked_checks: u64,
    /// When a campaign last resigned (true time).
    resigned_at: Option<u64>,
}

/// Plays `plan` and judges its history.
pub fn run(plan: &Plan) -> Outcome {
    run_with(plan, &mut Seeded::new(plan.seed))
}

/// Plays `plan` with `choices` making every choice beyond the plan's faults (each
/// message's fate; see [`Choices`]), and judges its history. [`run`] is this with the
/// choices drawn from the plan's seed ([`Seeded`]).
pub fn run_with(plan: &Plan, choices: &mut dyn Choices) -> Outcome {
    let engine: Vec<Defect> = plan
        .defects
        .iter()
        .filter_map(|d| match d {
            Planted::Engine(defect) => Some(*defect),
            Planted::TokenFromClientClock | Planted::ListingMissesRecords => None,
        })
        .collect();
    let _planted = plant(&engine);
    // Owner tokens, backoff jitter: from the seed, on this thread.
    let _seeded = SeededRandomness::new(plan.seed);
    let lease = Duration::from_millis(plan.lease_ms.max(1));
    let setups: Vec<Setup> = (0..plan.nodes)
        .map(|n| {
            // A campaign per life: the first, and one after each crash.
            let lives = if plan.campaign {
                1 + plan
                    .faults
                    .iter()
                    .filter(|f| matches!(f.kind, FaultKind::Crash { node, .. } | FaultKind::Resign { node } if node % plan.nodes.max(1) == n))
                    .count()
            } else {
                0
            };
            Setup::new(
                n,
                lease,
                lives,
                plan.slots,
                Duration::from_millis(plan.op_timeout_ms.max(1)),
            )
            .with_tenants(if plan.polls_tenants() { plan.tenants } else { 0 })
            .scheduling(plan.schedule.as_ref().filter(|_| !plan.campaign))
        })
        .collect();
    let mut setups = setups;
    let mut records = 0;
    if plan.ranked() {
        Setup::rank_all(&mut setups, &plan.ranks, lease);
        records = plan.nodes;
    }
    let base = Instant::now();
    // A ranked campaign's membership records are more locks, after the slots.
    let mut store = ModelStore::new(plan.profile, plan.locks() + records);
    if plan.polls_tenants() {
        store = store.with_partial_batches(plan.seed ^ PARTIAL_SEED, PARTIAL_ONE_IN);
    }
    if plan.defects.contains(&Planted::TokenFromClientClock) {
        store = store.with_token_from_client_clock();
    }
    if plan.defects.contains(&Planted::ListingMissesRecords) {
        store = store.with_listing_missing_records();
    }
    let mut world = World {
        plan,
        t: 0,
        seq: 0,
        steps: 0,
        queue: BinaryHeap::new(),
        choices,
        store,
        store_clock: SimClock::new(base, plan.store_drift_ppm, 0),
        nodes: setups
            .iter()
            .enumerate()
            .map(|(i, setup)| {
                let id = u32::try_from(i).unwrap_or(u32::MAX);
                let drift = plan.node_drift_ppm.get(i).copied().unwrap_or(0);
                let skew = plan.node_skew_ms.get(i).copied().unwrap_or(0) * 1_000;
                let seed = plan.seed.wrapping_mul(31).wrapping_add(u64::from(id));
                Node::new(id, setup, SimClock::new(base, drift, skew), seed)
            })
            .collect(),
        faults_of: vec![NodeFaults::default(); setups.len()],
        highest_written: vec![0; plan.locks() as usize],
        events: Vec::new(),
        resource: Vec::new(),
        spans: Vec::new(),
        effects: Vec::new(),
        stuck: Vec::new(),
        waiters: Vec::new(),
        rank_ignored: Vec::new(),
        ranked_checks: 0,
        resigned_at: None,
    };
    world.play();
    world.judge()
}

impl<'a> World<'a> {
    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse(Queued {
            at,
            seq: self.seq,
            ev,
        }));
    }

    fn play(&mut self) {
        let end = self.plan.run_ms * 1_000;
        for (i, fault) in self.plan.faults.iter().enumerate() {
            if fault.at_ms * 1_000 < end {
                self.push(fault.at_ms * 1_000, Ev::Fault(i));
            }
        }
        self.push(end, Ev::End);
        if self.plan.ranked() {
            self.push(self.ranked_check_every(), Ev::CheckRanked);
        }
        for n in 0..self.nodes.len() {
            self.log(
                n,
                What::NodeStarted {
                    pid: None,
                    name: Some(format!("n{n}")),
                },
            );
            self.drive(n, |node, t, fx| node.start(t, fx));
        }
        while let Some(Reverse(q)) = self.queue.pop() {
            self.t = q.at;
            self.steps += 1;
            if matches!(q.ev, Ev::End) {
                break;
            }
            self.handle(q.ev);
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Wake { node, life, timer } => {
                let n = node as usize;
                if timer == Timer::TermWait && self.live(n, life) {
                    let lease_us = self.plan.lease_ms * 1_000;
                    if let Some(us) = self.choices.pause_before_renewal(node, self.t, lease_us) {
                        self.pause(n, self.t + us);
                    }
                }
                if !self.deliverable(n, life, || Ev::Wake { node, life, timer }) {
                    return;
                }
                self.drive(n, |node, t, fx| node.woke(timer, t, fx));
            }
            Ev::ToNode {
                node,
                life,
                id,
                answer,
            } => {
                let n = node as usize;
                let copy = answer.clone();
                if !self.deliverable(n, life, || Ev::ToNode {
                    node,
                    life,
                    id,
                    answer: copy,
                }) {
                    return;
                }
                self.drive(n, |node, t, fx| node.answered(id, answer, t, fx));
            }
            Ev::ToStore {
                node,
                life,
                id,
                call,
                client_us,
            } => {
                let now = self.store_clock.local_us(self.t);
                if self.plan.slots_apart
                    && let Call::Acquire {
                        owner,
                        node: holder,
                        lease_us,
                        slots,
                    } = &call
                    && slots.len() > 1
                {
                    let attempt = SlotTry {
                        node,
                        life,
                        id,
                        owner: *owner,
                        holder: *holder,
                        lease_us: *lease_us,
                        slots: slots.clone(),
                        client_us,
                        first_held: None,
                    };
                    self.slot_try(attempt);
                    return;
                }
                // A membership record's release wakes nobody: waiters listen on the lock.
                let lock =
                    !matches!(call, Call::Release { slot, .. } if slot >= self.plan.slots.max(1));
                let answer = self.store.answer(call, now, client_us);
                if answer == Answer::Released && lock {
                    self.notify_waiters();
                }
                self.reply(node, life, id, answer);
            }
            Ev::Fault(i) => self.fault(i),
            Ev::PauseOver => {}
            Ev::Restart { node } => {
                let n = node as usize;
                self.faults_of[n].down = false;
                self.faults_of[n].life += 1;
                self.log(
                    n,
                    What::NodeStarted {
                        pid: None,
                        name: Some(format!("n{n}")),
                    },
                );
                self.drive(n, |node, t, fx| node.start(t, fx));
            }
            Ev::Notify { node, life } => {
                let n = node as usize;
                if self.deliverable(n, life, || Ev::Notify { node, life }) {
                    self.drive(n, |node, t, fx| node.notified(t, fx));
                }
            }
            Ev::CheckStrays {
                node,
                owner,
                slot,
                since,
            } => self.check_strays(node, owner, slot, since),
            Ev::SlotTry(attempt) => self.slot_try(attempt),
            Ev::CheckAbandoned { node, owner, since } => self.check_abandoned(node, owner, since),
            Ev::End => {}
            Ev::CheckRanked => self.check_ranked(),
        }
    }

    /// Tells every waiting node that the lock was released (each notice crosses the
    /// network and may be late or lost: the node's own wait ends anyway).
    fn notify_waiters(&mut self) {
        for (node, life) in std::mem::take(&mut self.waiters) {
            self.transmit(node as usize, Ev::Notify { node, life });
        }
    }

    /// The next slot's try of a group's acquire on a store whose slots are separate calls:
    /// taken or renewed, the answer goes back; held, the next slot is tried a backend
    /// round trip later; none left, the first held slot's holder goes back.
    fn slot_try(&mut self, mut attempt: SlotTry) {
        let now = self.store_clock.local_us(self.t);
        let slot = attempt.slots.remove(0);
        let answer = self.store.try_slot(
            slot,
            attempt.owner,
            attempt.holder,
            attempt.lease_us,
            now,
            attempt.client_us,
        );
        let answer = match answer {
            Answer::Held(record) if !attempt.slots.is_empty() => {
                attempt.first_held.get_or_insert(record);
                let net = self.plan.network;
                let hop = self.choices.hop_us(&net);
                self.push(self.t + hop, Ev::SlotTry(attempt));
                return;
            }
            Answer::Held(record) => Answer::Held(attempt.first_held.take().unwrap_or(record)),
            other => other,
        };
        self.reply(attempt.node, attempt.life, attempt.id, answer);
    }

    /// Sends the store's `answer` to call `id` back to node `node` (of life `life`).
    fn reply(&mut self, node: u32, life: u32, id: u64, answer: Answer) {
        self.transmit(
            node as usize,
            Ev::ToNode {
                node,
                life,
                id,
                answer,
            },
        );
    }

    /// Lets node `n` act at the current time, then does what it asked.
    fn drive(&mut self, n: usize, act: impl FnOnce(&mut Node<'a>, u64, &mut Vec<Effect>)) {
        let mut fx = std::mem::take(&mut self.effects);
        act(&mut self.nodes[n], self.t, &mut fx);
        self.apply(n, &mut fx);
        self.effects = fx;
    }

    /// Whether node `n` is up, in life `life`, and not paused.
    fn live(&self, n: usize, life: u32) -> bool {
        let faults = self.faults_of[n];
        !faults.down && faults.life == life && faults.paused_until <= self.t
    }

    /// Node `n` stops until `until` (its clock runs on).
    fn pause(&mut self, n: usize, until: u64) {
        let f = &mut self.faults_of[n];
        f.paused_until = f.paused_until.max(until);
        self.spans.push(FaultSpan {
            kind: HistoryFault::Pause { worker: n as u32 },
            start: self.t,
            end: until,
        });
        self.push(until, Ev::PauseOver);
    }

    /// Whether an event of node `n`'s life `life` is for it now: not if that life is over
    /// (or it is down); while it is paused, the event waits until it continues.
    fn deliverable(&mut self, n: usize, life: u32, again: impl FnOnce() -> Ev) -> bool {
        let faults = self.faults_of[n];
        if faults.down || faults.life != life {
            return false;
        }
        if faults.paused_until > self.t {
            self.push(faults.paused_until, again());
            return false;
        }
        true
    }

    /// Sends a message between node `n` and the store, through the network and its faults.
    fn transmit(&mut self, n: usize, ev: Ev) {
        let net = self.plan.network;
        let faults = self.faults_of[n];
        let sent = self.t;
        if faults.partitioned_until > self.t {
            return;
        }
        let message = Message {
            node: u32::try_from(n).unwrap_or(u32::MAX),
            request: matches!(ev, Ev::ToStore { .. }),
            sent_us: sent,
        };
        let fate = self.choices.fate(message, &net, self.plan.lease_ms * 1_000);
        if fate.lost {
            self.spans.push(FaultSpan {
                kind: HistoryFault::Blackhole,
                start: sent,
                end: sent + self.plan.lease_ms * 1_000,
            });
            return;
        }
        let mut delay = fate.delay_us;
        if faults.slow_until > self.t {
            delay += faults.slow_extra_us;
        }
        if let Some(held) = fate.held_back_us {
            delay += held;
            self.spans.push(FaultSpan {
                kind: HistoryFault::Blackhole,
                start: sent,
                end: sent + delay,
            });
        }
        if let Some(later) = fate.duplicate_after_us
            && let Ev::ToStore {
                node,
                life,
                id,
                call,
                client_us,
            } = &ev
        {
            let again = Ev::ToStore {
                node: *node,
                life: *life,
                id: *id,
                call: call.clone(),
                client_us: *client_us,
            };
            // A request applied twice is a fault of the network: the second copy can land
            // after what the node did about the first (an orphan's release, say).
            self.spans.push(FaultSpan {
                kind: HistoryFault::Blackhole,
                start: sent,
                end: sent + delay + later,
            });
            self.push(sent + delay + later, again);
        }
        self.push(sent + delay, ev);
    }

    fn apply(&mut self, n: usize, fx: &mut Vec<Effect>) {
        let life = self.faults_of[n].life;
        let node = self.nodes[n].id;
        for effect in fx.drain(..) {
            match effect {
                Effect::Send {
                    id,
                    call,
                    client_us,
                } => self.transmit(
                    n,
                    Ev::ToStore {
                        node,
                        life,
                        id,
                        call,
                        client_us,
                    },
                ),
                Effect::Wake { at, timer } => {
                    let at = self.nodes[n].clock.true_us(at).max(self.t);
                    self.push(at, Ev::Wake { node, life, timer });
                }
                Effect::Log(what) => self.log(n, what),
                Effect::Write { lock, token, phase } => self.write(n, lock, token, phase),
                Effect::Leading { owner, slot } => self.push(
                    self.t + ABANDONED_WITHIN_US,
                    Ev::CheckStrays {
                        node,
                        owner,
                        slot,
                        since: self.t,
                    },
                ),
                Effect::Listen => {
                    if self.plan.profile.notifies() && !self.waiters.contains(&(node, life)) {
                        self.waiters.push((node, life));
                    }
                }
                Effect::Abandoned { owner } => self.push(
                    self.t + ABANDONED_WITHIN_US,
                    Ev::CheckAbandoned {
                        node,
                        owner,
                        since: self.t,
                    },
                ),
            }
        }
    }

    fn log(&mut self, n: usize, what: What) {
        self.events.push(Event {
            at: self.t,
            clock: Clock::Wall,
            node: Some(u32::try_from(n).unwrap_or(u32::MAX)),
            what,
        });
    }

    /// A fenced write: accepted unless a larger token was accepted before.
    fn write(&mut self, n: usize, lock: u32, token: u64, phase: Phase) {
        let Some(&highest) = self.highest_written.get(lock as usize) else {
            return;
        };
        if token >= highest {
            self.highest_written[lock as usize] = token;
            let accepted = What::WriteAccepted {
                lock,
                token,
                phase: Some(phase),
            };
            self.resource.push(Event {
                at: self.t,
                clock: Clock::Store,
                node: None,
                what: accepted.clone(),
            });
            self.log(n, accepted);
        } else {
            self.log(
                n,
                What::WriteRejected {
                    lock,
                    token,
                    phase: Some(phase),
                    highest_seen: Some(highest),
                },
            );
        }
    }
}
