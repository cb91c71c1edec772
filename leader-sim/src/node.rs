//! One simulated node: the elector's I/O glue (what `leader-blocking`'s acquire loop,
//! renewal driver, action runner and orphan releases do), driving the real engine
//! machines. Every decision is the engine's: whether an answer came too late, when to
//! retry, when to renew, whether a renewal counts, whether a lease is lost, how an orphan
//! is released. The node only sends calls, sets timers and writes down what happened.
//!
//! A node runs a job in a loop (`job.rs`) or campaigns (`campaign.rs`); what it gave up is
//! released in the background (`orphans.rs`). This file holds what they share: the
//! setup, timers, effects, calls in flight, and the dispatch of timers and answers.

use std::time::{Duration, Instant, SystemTime};

use leader_core::__private::{
    Attempts, CampaignRun, ElectorSettings, Keepalive, LeaseTracker, Orphan, RenewalSchedule,
};
use leader_core::GroupSlots;
use leader_core::{
    BackendError, BackendErrorKind, CampaignConfig, Error, LeaderElectionOptions, LeaderLease,
    Lease, LockName, OwnerToken, ReleaseOutcome, SlotOutcome,
};
use leader_history::{Answer as HistoryAnswer, Phase, What};

use crate::clock::SimClock;
use crate::store::{Answer, Call};

mod campaign;
mod job;
mod orphans;
mod ranked;
mod schedule;
mod tenants;

use orphans::PendingOrphan;

/// The backend name the engine's spans and errors carry.
pub(crate) const BACKEND: &str = "sim";

/// What a node is set up with, kept outside it so that its machines can borrow it: the
/// job's lock and options, and for a campaign one `CampaignRun` per life of the node (a
/// restarted node campaigns afresh).
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) key: LockName,
    pub(crate) options: LeaderElectionOptions,
    pub(crate) keepalive: Keepalive,
    pub(crate) campaigns: Vec<CampaignRun>,
    /// The key of each slot, by slot number (one for a lock).
    pub(crate) slot_keys: Vec<LockName>,
    /// The store client's operation timeout.
    pub(crate) op_timeout: Duration,
    /// A tenant poller's tenants, their keys and settings (`tenants.rs`).
    pub(crate) tenants: Option<tenants::Tenants>,
    /// A scheduled job the node runs instead of a job in a loop (`schedule.rs`).
    pub(crate) schedule: Option<schedule::Job>,
    /// A ranked campaign's membership records, every node's by node number: record `i`
    /// is the store's lock index `slot_keys.len() + i` (empty: unranked).
    pub(crate) records: Vec<LockName>,
}

impl Setup {
    /// A node that runs a job in a loop, or (`lives` > 0) campaigns `lives` times for a
    /// group of `slots` (1: a single leader).
    pub(crate) fn new(
        node: u32,
        lease: Duration,
        lives: usize,
        slots: u32,
        op_timeout: Duration,
    ) -> Setup {
        let options = LeaderElectionOptions::default()
            .with_node_id(format!("n{node}"))
            .with_lease_time(lease)
            .with_wait_time(lease / 2)
            .with_auto_extend(true);
        let keepalive = Keepalive::from_options(&options);
        let config = campaign_config(lease);
        let group = GroupSlots::new(slots).unwrap_or(GroupSlots::ONE);
        let campaigns: Vec<CampaignRun> = ElectorSettings::new(options.clone())
            .ok()
            .map(|settings| {
                (0..lives)
                    .filter_map(|_| {
                        CampaignRun::for_group(&settings, "job", group, config, Vec::new(), BACKEND)
                            .ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let key = LockName::new("job").unwrap_or_else(|_| unreachable_name());
        let mut slot_keys: Vec<(u32, LockName)> = match campaigns.first() {
            Some(run) => run.request().slots().map(|(s, k)| (s, k.clone())).collect(),
            None => vec![(0, key.clone())],
        };
        slot_keys.sort_by_key(|(s, _)| *s);
        Setup {
            key,
            options,
            keepalive,
            campaigns,
            slot_keys: slot_keys.into_iter().map(|(_, k)| k).collect(),
            op_timeout,
            tenants: None,
            schedule: None,
            records: Vec::new(),
        }
    }
}

/// A campaign's settings for `lease`: a heartbeat of a fifth of it, a renew deadline of
/// two thirds, a poll of a quarter.
fn campaign_config(lease: Duration) -> CampaignConfig {
    CampaignConfig::default()
        .with_lease_time(lease)
        .with_heartbeat(lease / 5)
        .with_renew_deadline(lease * 2 / 3)
        .with_poll_interval(lease / 4)
}

/// `job` is a valid name; this is never called.
fn unreachable_name() -> LockName {
    LockName::new("j").unwrap_or_else(|_| std::process::abort())
}

/// A timer a node sets, at one of its own instants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Begin the next job.
    Start,
    /// Try to acquire again (the engine's backoff), unless a release notification came
    /// first (the wait's number: a later wait cancels it).
    Retry(u64),
    /// A call's operation timeout.
    CallTimeout(u64),
    /// The next renewal is due.
    RenewDue,
    /// The time left for the renewal in flight (its id) ran out.
    RenewalBudget(u64),
    /// The lease's deadline, as it stood when the timer was set.
    Deadline,
    /// The action's work is done.
    WorkDone,
    /// An orphan's next release is due.
    OrphanDue(u64),
    /// A campaign's next round (a standby's attempt), unless a release notification came
    /// first (the wait's number).
    Round(u64),
    /// A leader's wait is over (its next renewal is due).
    TermWait,
    /// The term's deadline passed while its renewal (the id) was on its way.
    TermBudget(u64),
    /// A tenant poller's next renewal of its held tenants is due.
    TenantRenewDue,
    /// A tenant's lease deadline (the tenant), as it stood when the timer was set.
    TenantDeadline(u32),
    /// A tenant's action's work is done (the tenant).
    TenantWorkDone(u32),
    /// The time left for a tenant's renewal (the call's id, the tenant) ran out.
    TenantBudget(u64, u32),
    /// The scheduler's timetable looks at the wall clock (the wait's number).
    Fire(u64),
    /// A scheduled run (its number) is over.
    RunDone(u64),
    /// A ranked leader's wait is over (its next renewal is due), unless the term it was
    /// set for ended (the wait's generation).
    LeaderWait(u64),
    /// A campaign that resigned, after its rest: campaign again, afresh.
    Rejoin,
}

/// What a node asks the world to do.
#[derive(Debug)]
pub(crate) enum Effect {
    /// Send `call` (with this node's clock reading) to the store; its answer comes back
    /// as [`Node::answered`] with `id`, unless it is lost.
    Send { id: u64, call: Call, client_us: u64 },
    /// Wake the node with `timer` once its clock reads `at`.
    Wake { at: Instant, timer: Timer },
    /// Write down an event of this node's history at the current time.
    Log(What),
    /// A fenced write to the resource (one per lock or slot) with `token`.
    Write { lock: u32, token: u64, phase: Phase },
    /// The node began a term on `slot` as `owner`: it must hold no other slot for long.
    Leading { owner: OwnerToken, slot: u32 },
    /// The node gave up `owner` (an orphan): nothing may hold the lock for it for long.
    Abandoned { owner: OwnerToken },
    /// The node waits for the lock's release: notify it, where the store notifies.
    Listen,
}

/// What a call in flight was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    Acquire,
    Renew,
    Release,
    Orphan(u64),
    /// A standby's attempt.
    Campaign,
    /// A leader's renewal of its term.
    TermRenew,
    /// The release of an ended term.
    TermRelease,
    /// A tenant poller's batched acquire.
    TenantAcquire,
    /// A tenant poller's batched renewal.
    TenantRenew,
    /// One tenant's own renewal, after its batch answered a transient error.
    TenantRenewAlone(u32),
    /// A tenant poller's batched release.
    TenantRelease,
    /// The scheduler's read of the job's record as it fires, before the lock.
    Peek,
    /// A read or write of the job's record by a firing, under the lock.
    Record,
    /// A ranked campaign's heartbeat of its membership record (the survey's id).
    Heartbeat(u64),
    /// A ranked campaign's listing of the candidates (the survey's id).
    List(u64),
    /// A resigning campaign's release of its membership record.
    RecordRelease,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct InFlight {
    pub(super) id: u64,
    pub(super) purpose: Purpose,
    pub(super) sent_at: Instant,
}

/// A lease held while the action works.
#[derive(Debug)]
pub(super) struct Held {
    tracker: LeaseTracker,
    schedule: Option<RenewalSchedule>,
    work_until: Instant,
    lost: bool,
}

#[derive(Debug)]
pub(super) enum State<'a> {
    Idle,
    /// A campaign's standby, between rounds or with its attempt on its way.
    Standby,
    /// A campaign's leader.
    Leading(campaign::Leading<'a>),
    Acquiring {
        attempts: Attempts<'a>,
        /// The first attempt's true time, for the history.
        requested: u64,
    },
    Holding(Held),
    Releasing(Held),
    /// A tenant poller's cycle.
    Polling(tenants::Poll<'a>),
}

/// One node.
#[derive(Debug)]
pub(crate) struct Node<'a> {
    pub(crate) id: u32,
    setup: &'a Setup,
    /// The node's life (0 first, one more after each restart): which campaign run it uses.
    life: usize,
    pub(crate) clock: SimClock,
    pub(super) state: State<'a>,
    calls: Vec<InFlight>,
    orphans: Vec<PendingOrphan>,
    next_id: u64,
    /// The number of the node's current wait (a retry or a standby's round).
    waiting: u64,
    /// The simulator's random draws for this node's work and rest.
    draws: rand::rngs::StdRng,
    /// The scheduler's timetable and firing (`schedule.rs`).
    sched: schedule::Sched<'a>,
    /// A ranked campaign's surveys and withdrawal.
    ranked: ranked::Ranked<'a>,
}

impl<'a> Node<'a> {
    pub(crate) fn new(id: u32, setup: &'a Setup, clock: SimClock, seed: u64) -> Self {
        use rand::SeedableRng;
        Node {
            id,
            setup,
            life: 0,
            clock,
            state: State::Idle,
            calls: Vec::new(),
            orphans: Vec::new(),
            next_id: 0,
            waiting: 0,
            draws: rand::rngs::StdRng::seed_from_u64(seed),
            sched: schedule::Sched::default(),
            ranked: ranked::Ranked::default(),
        }
    }

    /// Killed: every machine and call in flight is gone; the history says so. It starts
    /// again as a new life.
    pub(crate) fn crash(&mut self) {
        self.life += 1;
        self.state = State::Idle;
        self.calls.clear();
        self.orphans.clear();
        self.sched = schedule::Sched::default();
        self.ranked = ranked::Ranked::default();
    }

    fn lease_time(&self) -> Duration {
        self.setup.options.lease_time()
    }

    pub(super) fn lease_us(&self) -> u64 {
        u64::try_from(self.lease_time().as_micros()).unwrap_or(u64::MAX)
    }

    fn send(
        &mut self,
        purpose: Purpose,
        call: Call,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.calls.push(InFlight {
            id,
            purpose,
            sent_at: now,
        });
        fx.push(Effect::Send {
            id,
            call,
            client_us: self.clock.wall_us(t),
        });
        // The store client's operation timeout (a renewal also races its budget).
        fx.push(Effect::Wake {
            at: now + self.setup.op_timeout,
            timer: Timer::CallTimeout(id),
        });
        id
    }

    /// Begins: the first job (or the campaign's first round) starts after a rest.
    pub(crate) fn start(&mut self, t: u64, fx: &mut Vec<Effect>) {
        if self.setup.schedule.is_some() {
            return self.schedule_start(t, fx);
        }
        let rest = self.rest();
        let timer = if self.setup.campaigns.is_empty() {
            Timer::Start
        } else {
            self.state = State::Standby;
            Timer::Round(self.waiting)
        };
        fx.push(Effect::Wake {
            at: self.clock.instant(t) + rest,
            timer,
        });
    }

    pub(super) fn rest(&mut self) -> Duration {
        use rand::Rng;
        let lease = self.lease_us();
        Duration::from_micros(self.draws.random_range(0..=lease / 2))
    }

    fn work(&mut self) -> Duration {
        use rand::Rng;
        let lease = self.lease_us();
        let us = if self.draws.random_ratio(1, 5) {
            self.draws.random_range(lease..=lease * 3)
        } else {
            self.draws.random_range(lease / 50..=lease / 2)
        };
        Duration::from_micros(us)
    }

    /// A timer fired at true time `t`.
    pub(crate) fn woke(&mut self, timer: Timer, t: u64, fx: &mut Vec<Effect>) {
        let now = self.clock.instant(t);
        match timer {
            Timer::Start if self.setup.tenants.is_some() => self.cycle(now, t, fx),
            Timer::Start => {
                if matches!(self.state, State::Idle) {
                    self.begin_acquiring(now, t, fx);
                }
            }
            Timer::Retry(wait) => {
                if wait == self.waiting && self.may_attempt() {
                    self.attempt(now, t, fx);
                }
            }
            Timer::CallTimeout(id) => {
                if let Some(call) = self.take_call(id) {
                    let error = Error::Backend(BackendError::new(
                        BACKEND,
                        "job",
                        BackendErrorKind::Transient,
                        "no answer within the operation timeout",
                    ));
                    self.failed(call, error, now, t, fx);
                }
            }
            Timer::RenewDue => self.renew(now, t, fx),
            Timer::RenewalBudget(id) => {
                if self.take_call(id).is_some()
                    && let State::Holding(held) = &mut self.state
                {
                    held.tracker.renewal_unanswered();
                    self.lose(t, fx);
                }
            }
            Timer::Deadline => {
                if let State::Holding(held) = &self.state
                    && !held.lost
                    && held.tracker.is_lost_at(now)
                {
                    held.tracker.lose();
                    self.lose(t, fx);
                }
            }
            Timer::WorkDone => {
                if let State::Holding(held) = &self.state
                    && now >= held.work_until
                {
                    self.finish(now, t, fx);
                }
            }
            Timer::OrphanDue(id) => self.release_orphan(id, now, t, fx),
            Timer::Round(wait) => {
                if wait == self.waiting {
                    self.round(now, t, fx);
                }
            }
            Timer::TermWait => self.term_wait(now, t, fx),
            Timer::TermBudget(id) => {
                if let Some(call) = self.take_call(id) {
                    self.term_renewal_raced(call, None, now, t, fx);
                }
            }
            Timer::TenantRenewDue => self.renew_tenants(now, t, fx),
            Timer::TenantDeadline(tenant) => self.tenant_deadline(tenant, now, t, fx),
            Timer::TenantWorkDone(tenant) => self.tenant_work_done(tenant, now, t, fx),
            Timer::TenantBudget(id, tenant) => self.tenant_budget(id, tenant, t, fx),
            Timer::Fire(wait) => self.timetable(wait, now, t, fx),
            Timer::RunDone(run) => self.run_done(run, now, t, fx),
            Timer::LeaderWait(generation) => self.leader_waited(generation, now, t, fx),
            Timer::Rejoin => self.rejoin(now, t, fx),
        }
    }

    /// Waits until `at` (its own clock) for a retry, or a standby's next round
    /// (`round`), or until the store notifies a release of the lock, whichever comes
    /// first: the shells' `wait_timeout` on a release listener.
    pub(super) fn wait(&mut self, at: Instant, round: bool, fx: &mut Vec<Effect>) {
        self.waiting += 1;
        let timer = if round {
            Timer::Round(self.waiting)
        } else {
            Timer::Retry(self.waiting)
        };
        fx.push(Effect::Wake { at, timer });
        fx.push(Effect::Listen);
    }

    /// Whether a waiting job may send its next attempt (none is on its way).
    fn may_attempt(&self) -> bool {
        matches!(self.state, State::Acquiring { .. })
            && !self.calls.iter().any(|c| c.purpose == Purpose::Acquire)
    }

    /// The store notified a release of the lock: a waiting retry or standby round goes
    /// now, and its timer is cancelled.
    pub(crate) fn notified(&mut self, t: u64, fx: &mut Vec<Effect>) {
        let now = self.clock.instant(t);
        if self.may_attempt() {
            self.waiting += 1;
            self.attempt(now, t, fx);
        } else if matches!(self.state, State::Standby) && !self.round_in_progress() {
            self.waiting += 1;
            self.round(now, t, fx);
        }
    }

    pub(super) fn take_call(&mut self, id: u64) -> Option<InFlight> {
        let i = self.calls.iter().position(|c| c.id == id)?;
        Some(self.calls.swap_remove(i))
    }

    /// The store's answer to call `id` reached the node at true time `t`.
    pub(crate) fn answered(&mut self, id: u64, answer: Answer, t: u64, fx: &mut Vec<Effect>) {
        let now = self.clock.instant(t);
        let Some(call) = self.take_call(id) else {
            // Timed out already: the driver gave up on it.
            return;
        };
        match call.purpose {
            Purpose::Acquire => self.acquire_answered(call, answer, now, t, fx),
            Purpose::Renew => self.renewal_answered(call, answer, now, t, fx),
            Purpose::Release => self.release_answered(answer, t, fx),
            Purpose::Orphan(orphan) => {
                let answer = match answer {
                    Answer::Released => Ok(ReleaseOutcome::Released),
                    _ => Ok(ReleaseOutcome::NotHeld),
                };
                self.orphan_answered(orphan, answer, now, t, fx);
            }
            Purpose::Campaign => self.campaign_answered(call, Ok(answer), now, t, fx),
            Purpose::TermRenew => self.term_renewal_raced(call, Some(Ok(answer)), now, t, fx),
            Purpose::TermRelease => self.term_released(answer, t, fx),
            Purpose::TenantAcquire
            | Purpose::TenantRenew
            | Purpose::TenantRenewAlone(_)
            | Purpose::TenantRelease => self.tenants_answered(call, Ok(answer), now, t, fx),
            Purpose::Peek => self.peeked(Ok(answer), now, t, fx),
            Purpose::Record => self.record_answered(Ok(answer), now, t, fx),
            Purpose::Heartbeat(survey) => {
                self.heartbeat_answered(survey, call, Ok(answer), now, t, fx)
            }
            Purpose::List(survey) => self.list_answered(survey, Ok(answer), now, t, fx),
            Purpose::RecordRelease => {
                let answer = match answer {
                    Answer::Released => Ok(ReleaseOutcome::Released),
                    _ => Ok(ReleaseOutcome::NotHeld),
                };
                self.record_released(answer, now, t, fx);
            }
        }
    }

    /// The engine's view of a store's answer to an acquire by `owner`.
    pub(super) fn slot_outcome(&self, answer: &Answer, owner: OwnerToken) -> SlotOutcome {
        match answer {
            Answer::Acquired(record) => SlotOutcome::Acquired {
                slot: record.slot,
                lease: Lease::new(
                    self.key_of(record.slot),
                    owner,
                    format!("n{}", record.node),
                    record.token,
                    SystemTime::UNIX_EPOCH,
                    SystemTime::UNIX_EPOCH + Duration::from_micros(record.expires),
                ),
            },
            Answer::Held(record) => SlotOutcome::Held(Some(LeaderLease::new(
                format!("n{}", record.node),
                SystemTime::UNIX_EPOCH,
                SystemTime::UNIX_EPOCH + Duration::from_micros(record.expires),
                record.token,
            ))),
            // Not answers to an acquire.
            _ => SlotOutcome::Held(None),
        }
    }

    /// The key of `slot` (or of a membership record's index, after the slots).
    pub(super) fn key_of(&self, slot: u32) -> LockName {
        self.setup
            .slot_keys
            .iter()
            .chain(&self.setup.records)
            .nth(slot as usize)
            .cloned()
            .unwrap_or_else(|| self.setup.key.clone())
    }

    /// The slot of `key`, or a membership record's index (0 if it is none of them).
    pub(super) fn slot_of(&self, key: &LockName) -> u32 {
        self.setup
            .slot_keys
            .iter()
            .chain(&self.setup.records)
            .position(|k| k == key)
            .and_then(|i| u32::try_from(i).ok())
            .unwrap_or(0)
    }

    /// The history of an action's start on `tracker`'s lease (the acquire call that won
    /// it began at `requested`, true time), and its fenced start write.
    pub(super) fn begin_action(
        &self,
        tracker: &LeaseTracker,
        requested: u64,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let token = tracker.lease().fencing_token;
        let lock = self.slot_of(&tracker.lease().key);
        let deadline = self.clock.true_us(tracker.context().deadline());
        fx.push(Effect::Log(What::ActionStarted {
            lock,
            token,
            requested: Some(requested),
            left_us: Some(deadline.saturating_sub(t)),
            deadline: Some(deadline),
            role: None,
        }));
        fx.push(Effect::Write {
            lock,
            token,
            phase: Phase::Start,
        });
    }

    /// The history of an action's end on `tracker`'s lease (`lost`: the node found the
    /// lease lost as it ended), after its fenced end write.
    pub(super) fn end_action(&self, tracker: &LeaseTracker, lost: bool, fx: &mut Vec<Effect>) {
        let token = tracker.lease().fencing_token;
        let lock = self.slot_of(&tracker.lease().key);
        if lost {
            fx.push(Effect::Log(What::LeaseLost { lock, token }));
        }
        fx.push(Effect::Write {
            lock,
            token,
            phase: Phase::End,
        });
        fx.push(Effect::Log(What::ActionEnded { lock, token }));
    }

    fn failed(&mut self, call: InFlight, error: Error, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        match call.purpose {
            Purpose::Acquire => {
                let State::Acquiring { attempts, .. } = &self.state else {
                    return;
                };
                // The request may have been applied: release its owner token.
                let orphan = Orphan::of_request(&attempts.request(), call.sent_at);
                let owner = attempts.request().request.owner;
                fx.push(Effect::Log(What::AcquireAnswered {
                    lock: 0,
                    requested: self.clock.true_us(call.sent_at),
                    answer: HistoryAnswer::Indeterminate {
                        message: Some(error.to_string()),
                    },
                }));
                self.adopt(orphan, Some(owner), now, t, fx);
                self.rest_then_start(now, fx);
            }
            // A renewal that failed (before its budget ran out) loses the lease.
            Purpose::Renew => {
                let lease_time = self.lease_time();
                if let State::Holding(held) = &self.state
                    && !held.lost
                    && !held
                        .tracker
                        .record_renewal(Err(error), call.sent_at, lease_time, now)
                {
                    self.lose(t, fx);
                }
            }
            Purpose::Release => {
                let State::Releasing(held) = std::mem::replace(&mut self.state, State::Idle) else {
                    return;
                };
                let lease_time = self.lease_time();
                if let Some(orphan) = Orphan::after_release(
                    held.tracker.lease(),
                    lease_time,
                    Duration::ZERO,
                    &Err(error),
                    now,
                ) {
                    self.adopt(orphan, Some(held.tracker.lease().owner), now, t, fx);
                }
                self.rest_then_start(now, fx);
            }
            Purpose::Orphan(orphan) => self.orphan_answered(orphan, Err(error), now, t, fx),
            Purpose::Campaign => self.campaign_answered(call, Err(error), now, t, fx),
            // Raced against the term's deadline, which is shorter than the timeout.
            Purpose::TermRenew => self.term_renewal_raced(call, Some(Err(error)), now, t, fx),
            Purpose::TermRelease => self.term_release_failed(error, now, t, fx),
            Purpose::TenantAcquire
            | Purpose::TenantRenew
            | Purpose::TenantRenewAlone(_)
            | Purpose::TenantRelease => self.tenants_answered(call, Err(error), now, t, fx),
            Purpose::Peek => self.peeked(Err(error), now, t, fx),
            Purpose::Record => self.record_answered(Err(error), now, t, fx),
            Purpose::Heartbeat(survey) => {
                self.heartbeat_answered(survey, call, Err(error), now, t, fx)
            }
            Purpose::List(survey) => self.list_answered(survey, Err(error), now, t, fx),
            Purpose::RecordRelease => self.record_released(Err(error), now, t, fx),
        }
    }
}
