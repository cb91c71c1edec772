//! A tenant poller: what `leader-blocking`'s `try_acquire_for_tenants`, its renewal
//! driver's batched renewals and `Finished::release_all` do, around the engine's
//! `AcquireBatch`, `TenantBatch`, `LeaseTracker` and `RenewalSchedule`, for a poller
//! cycle as `leader-tenant`'s `BlockingTenantPoller` runs it.
//!
//! Each cycle the node tries every tenant's lock in ONE batched acquire; the engine says
//! which answers are leases, which came too late or failed (orphans, released in the
//! background). Each tenant won runs its action (history `lock` = the tenant's index)
//! under its own `LeaseTracker`; the held tenants due for renewal are renewed together in
//! one batched extend, each answer recorded on its own (a transient error in a batch's
//! answer is first asked again alone, `LeaseTracker::renew_alone_after`); a tenant whose
//! renewal fails or comes late loses only that tenant. Once every action has ended, the
//! tenants are released in one batched release, the node rests, and the next cycle
//! begins.

use std::time::{Duration, Instant, SystemTime};

use leader_core::__private::{
    AcquireBatch, ElectorSettings, LeaseTracker, Orphan, RenewalSchedule, TenantBatch, TenantKeys,
};
use leader_core::{
    AcquireOutcome, BackendError, BackendErrorKind, Error, ExtendOutcome, LeaderLease, Lease,
    LockName, ReleaseOutcome, TenantId,
};
use leader_history::{Answer as HistoryAnswer, Phase, What};

use super::{BACKEND, Effect, InFlight, Node, Purpose, Setup, State, Timer};
use crate::store::{Answer, Call};

/// The lock every tenant's key is made from (`tenant:<id>:job`).
const NAME: &str = "job";

/// A poller's tenants, owned by its [`Setup`] so that a cycle's `AcquireBatch` can
/// borrow their keys.
#[derive(Debug)]
pub(crate) struct Tenants {
    ids: Vec<TenantId>,
    keys: TenantKeys,
    settings: ElectorSettings,
}

impl Setup {
    /// The setup of a tenant poller of `tenants` tenants (`t0`, `t1`, …), when 2 or more:
    /// its slots are the tenants' keys, so that a tenant's index is its lock in the
    /// history and its slot on the model store.
    pub(crate) fn with_tenants(mut self, tenants: u32) -> Setup {
        if tenants < 2 {
            return self;
        }
        let Ok(settings) = ElectorSettings::new(self.options.clone()) else {
            return self;
        };
        let ids: Vec<TenantId> = (0..tenants)
            .filter_map(|i| TenantId::new(format!("t{i}")).ok())
            .collect();
        let keys = TenantKeys::new(NAME, &ids);
        self.slot_keys = keys.valid().to_vec();
        self.tenants = Some(Tenants {
            ids,
            keys,
            settings,
        });
        self
    }
}

/// One cycle of a poller.
#[derive(Debug)]
pub(crate) struct Poll<'a> {
    /// The batched acquire on its way.
    acquiring: Option<AcquireBatch<'a>>,
    /// When it was sent, true time, for the history.
    requested: u64,
    /// The tenants won.
    held: Vec<Tenant>,
    /// Batched renewals on their way: the call, and its tenants in order.
    renewals: Vec<(u64, Vec<u32>)>,
    /// The batched release is on its way.
    releasing: bool,
}

/// A tenant won, its action running or ended.
#[derive(Debug)]
struct Tenant {
    index: u32,
    tracker: LeaseTracker,
    schedule: Option<RenewalSchedule>,
    work_until: Instant,
    /// The call whose answer renews it (a batch's, or its own after a transient error).
    renewing: Option<u64>,
    lost: bool,
    ended: bool,
}

/// A store's answer (or the call's failure) as one result per item of a batch of `n`:
/// a call that failed as a whole fails every item with its error's kind, as the backends'
/// batch calls do.
fn items(answer: Result<Answer, Error>, n: usize) -> Vec<Result<Answer, Error>> {
    match answer {
        Ok(Answer::Batch(answers)) => answers
            .into_iter()
            .map(|answer| match answer {
                Answer::Failed => Err(failure(
                    BackendErrorKind::Transient,
                    "the batch failed this item alone".to_owned(),
                )),
                answer => Ok(answer),
            })
            .collect(),
        Ok(Answer::Failed) => vec![Err(failure(
            BackendErrorKind::Transient,
            "the call failed".to_owned(),
        ))],
        Ok(single) => vec![Ok(single)],
        Err(error) => {
            let kind = if error.is_transient() {
                BackendErrorKind::Transient
            } else {
                BackendErrorKind::Permanent
            };
            (0..n)
                .map(|_| failure(kind, format!("the batch call failed: {error}")))
                .map(Err)
                .collect()
        }
    }
}

/// The slot (tenant) of `key` on the model store: the store's own lock, which is the
/// tenant's index when the engine names keys right.
fn slot_of(setup: &Setup, key: &LockName) -> u32 {
    setup
        .slot_keys
        .iter()
        .position(|k| k == key)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(0)
}

fn failure(kind: BackendErrorKind, message: String) -> Error {
    BackendError::new(BACKEND, "tenants", kind, message).into()
}

impl<'a> Node<'a> {
    /// A cycle begins: one batched acquire of every tenant's lock.
    pub(super) fn cycle(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let setup: &'a Setup = self.setup;
        let Some(tenants) = &setup.tenants else {
            return;
        };
        if !matches!(self.state, State::Idle) {
            return;
        }
        // What `TenantBatch::requests` makes, from the keys the setup owns.
        let batch = AcquireBatch::new(BACKEND, tenants.keys.valid(), tenants.settings.options());
        let tries = batch
            .requests()
            .iter()
            .map(|request| (request.owner, self.slot_of(request.key)))
            .collect::<Vec<_>>();
        for &(_, lock) in &tries {
            fx.push(Effect::Log(What::AcquireRequested { lock }));
        }
        let call = Call::AcquireBatch {
            node: self.id,
            lease_us: self.lease_us(),
            tries,
        };
        self.state = State::Polling(Poll {
            acquiring: Some(batch),
            requested: t,
            held: Vec::new(),
            renewals: Vec::new(),
            releasing: false,
        });
        self.send(Purpose::TenantAcquire, call, now, t, fx);
    }

    /// The held tenant `index` of the cycle under way.
    fn held_tenant(&mut self, index: u32) -> Option<&mut Tenant> {
        let State::Polling(poll) = &mut self.state else {
            return None;
        };
        poll.held.iter_mut().find(|h| h.index == index)
    }

    /// The answer to (or the failure of) one of the poller's calls.
    pub(super) fn tenants_answered(
        &mut self,
        call: InFlight,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        match call.purpose {
            Purpose::TenantAcquire => self.batch_acquired(call, answer, now, t, fx),
            Purpose::TenantRenew => self.batch_renewed(call, answer, now, t, fx),
            Purpose::TenantRenewAlone(index) => {
                let result = items(answer, 1)
                    .pop()
                    .unwrap_or_else(|| Ok(Answer::NotHeld))
                    .map(extend_outcome);
                self.tenant_renewed(index, call, result, now, t, fx);
            }
            Purpose::TenantRelease => self.batch_released(answer, now, t, fx),
            _ => {}
        }
    }

    /// The engine's view of one item's answer to a batched acquire.
    fn acquire_outcome(&self, answer: Answer) -> AcquireOutcome {
        match answer {
            Answer::Acquired(record) => AcquireOutcome::Acquired(Lease::new(
                self.key_of(record.slot),
                record.owner,
                format!("n{}", record.node),
                record.token,
                SystemTime::UNIX_EPOCH,
                SystemTime::UNIX_EPOCH + Duration::from_micros(record.expires),
            )),
            Answer::Held(record) => AcquireOutcome::Held(Some(LeaderLease::new(
                format!("n{}", record.node),
                SystemTime::UNIX_EPOCH,
                SystemTime::UNIX_EPOCH + Duration::from_micros(record.expires),
                record.token,
            ))),
            _ => AcquireOutcome::Held(None),
        }
    }

    fn batch_acquired(
        &mut self,
        call: InFlight,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let setup: &'a Setup = self.setup;
        let Some(tenants) = &setup.tenants else {
            return;
        };
        let State::Polling(poll) = &mut self.state else {
            return;
        };
        let Some(batch) = poll.acquiring.take() else {
            return;
        };
        let requested = poll.requested;
        let answers: Vec<Result<AcquireOutcome, Error>> = items(answer, batch.requests().len())
            .into_iter()
            .map(|item| item.map(|answer| self.acquire_outcome(answer)))
            .collect();
        // The engine's decisions: which answers are leases; the rest's possible
        // acquisitions (failed, lost, or answered after the deadline) are orphans.
        let (answers, orphans) = batch.finish(answers, call.sent_at, now);
        for orphan in orphans {
            let owner = orphan.leases().first().map(|lease| lease.owner);
            self.adopt(orphan, owner, now, t, fx);
        }
        let won = match TenantBatch::new(&tenants.settings, BACKEND, NAME, &tenants.ids) {
            Ok(batch) => batch.answers(answers),
            Err(_) => Vec::new(),
        };
        let lease_time = self.lease_time();
        let requested_us = self.clock.true_us(call.sent_at);
        let mut held = Vec::new();
        for (tenant, answer) in (0u32..).zip(won) {
            let logged = match &answer {
                Ok(Some(won)) => HistoryAnswer::Lease {
                    token: won.lease.fencing_token,
                },
                Ok(None) => HistoryAnswer::Refused,
                Err(error) => HistoryAnswer::Indeterminate {
                    message: Some(error.to_string()),
                },
            };
            fx.push(Effect::Log(What::AcquireAnswered {
                lock: tenant,
                requested: requested_us,
                answer: logged,
            }));
            let Ok(Some(won)) = answer else {
                continue;
            };
            // The tenant the engine says the lease is for: its action runs under it (the
            // history's lock and the resource written), whatever key the lease names.
            let Some(index) = tenants
                .ids
                .iter()
                .position(|id| id == won.tenant)
                .and_then(|i| u32::try_from(i).ok())
            else {
                continue;
            };
            let tracker = LeaseTracker::new(won.lease, NAME, won.sent_at, lease_time, BACKEND);
            if tracker.check_start(now).is_err() {
                // Lost before its action could start: released at once, nothing ran.
                let lease = tracker.lease();
                let orphan = Orphan::new(lease.key.clone(), lease.owner, won.sent_at, lease_time);
                self.adopt(orphan, Some(lease.owner), now, t, fx);
                continue;
            }
            self.tenant_began(index, &tracker, requested, t, fx);
            let schedule = won.keepalive.schedule(won.sent_at);
            if let Some(schedule) = &schedule {
                fx.push(Effect::Wake {
                    at: schedule.due(),
                    timer: Timer::TenantRenewDue,
                });
            }
            fx.push(Effect::Wake {
                at: tracker.context().deadline(),
                timer: Timer::TenantDeadline(index),
            });
            let work_until = now + self.work();
            fx.push(Effect::Wake {
                at: work_until,
                timer: Timer::TenantWorkDone(index),
            });
            held.push(Tenant {
                index,
                tracker,
                schedule,
                work_until,
                renewing: None,
                lost: false,
                ended: false,
            });
        }
        if held.is_empty() {
            self.rest_then_start(now, fx);
            return;
        }
        if let State::Polling(poll) = &mut self.state {
            poll.held = held;
        }
    }

    /// The history of tenant `index`'s action starting on `tracker`'s lease (the batch
    /// that won it was sent at `requested`, true time), and its fenced start write: as
    /// `begin_action`, with the tenant's index as the lock.
    fn tenant_began(
        &self,
        index: u32,
        tracker: &LeaseTracker,
        requested: u64,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let token = tracker.lease().fencing_token;
        let deadline = self.clock.true_us(tracker.context().deadline());
        fx.push(Effect::Log(What::ActionStarted {
            lock: index,
            token,
            requested: Some(requested),
            left_us: Some(deadline.saturating_sub(t)),
            deadline: Some(deadline),
            role: None,
        }));
        fx.push(Effect::Write {
            lock: index,
            token,
            phase: Phase::Start,
        });
    }

    /// The history of tenant `index`'s action ending (`lost`: found lost as it ended),
    /// after its fenced end write: as `end_action`, with the tenant's index as the lock.
    fn tenant_ended(&self, index: u32, tracker: &LeaseTracker, lost: bool, fx: &mut Vec<Effect>) {
        let token = tracker.lease().fencing_token;
        if lost {
            fx.push(Effect::Log(What::LeaseLost { lock: index, token }));
        }
        fx.push(Effect::Write {
            lock: index,
            token,
            phase: Phase::End,
        });
        fx.push(Effect::Log(What::ActionEnded { lock: index, token }));
    }

    /// The held tenants due for renewal, renewed in one batched extend, each racing its
    /// own deadline.
    pub(super) fn renew_tenants(&mut self, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let lease_us = self.lease_us();
        let setup: &'a Setup = self.setup;
        let State::Polling(poll) = &mut self.state else {
            return;
        };
        if poll.releasing {
            return;
        }
        let mut cohort = Vec::new();
        let mut unanswered = Vec::new();
        for tenant in &mut poll.held {
            let due = tenant
                .schedule
                .as_ref()
                .is_some_and(|schedule| now >= schedule.due());
            if tenant.ended || tenant.lost || tenant.renewing.is_some() || !due {
                continue;
            }
            let budget = tenant.tracker.renewal_budget(now);
            if budget.is_zero() {
                tenant.tracker.renewal_unanswered();
                unanswered.push(tenant.index);
                continue;
            }
            cohort.push((tenant.index, tenant.tracker.lease(), budget));
        }
        let leases = cohort
            .iter()
            .map(|&(_, lease, _)| (lease.owner, slot_of(setup, &lease.key)))
            .collect();
        let cohort: Vec<(u32, Duration)> = cohort
            .into_iter()
            .map(|(index, _, budget)| (index, budget))
            .collect();
        for index in unanswered {
            self.lose_tenant(index, now, t, fx);
        }
        if cohort.is_empty() {
            return;
        }
        let call = Call::ExtendBatch { lease_us, leases };
        let id = self.send(Purpose::TenantRenew, call, now, t, fx);
        let State::Polling(poll) = &mut self.state else {
            return;
        };
        for &(index, budget) in &cohort {
            if let Some(tenant) = poll.held.iter_mut().find(|h| h.index == index) {
                tenant.renewing = Some(id);
            }
            fx.push(Effect::Wake {
                at: now + budget,
                timer: Timer::TenantBudget(id, index),
            });
        }
        poll.renewals
            .push((id, cohort.iter().map(|&(index, _)| index).collect()));
    }

    fn batch_renewed(
        &mut self,
        call: InFlight,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Polling(poll) = &mut self.state else {
            return;
        };
        let Some(i) = poll.renewals.iter().position(|(id, _)| *id == call.id) else {
            return;
        };
        let (_, indices) = poll.renewals.swap_remove(i);
        let answers = items(answer, indices.len());
        for (index, answer) in indices.into_iter().zip(answers) {
            let result = answer.map(extend_outcome);
            if LeaseTracker::renew_alone_after(&result) {
                self.renew_alone(index, call.id, now, t, fx);
            } else {
                self.tenant_renewed(index, call, result, now, t, fx);
            }
        }
    }

    /// A tenant its batch answered with a transient error: renewed again with its own
    /// extend, still racing its deadline; only that answer counts.
    fn renew_alone(&mut self, index: u32, batch: u64, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let lease_us = self.lease_us();
        let setup: &'a Setup = self.setup;
        let Some(tenant) = self.held_tenant(index) else {
            return;
        };
        if tenant.renewing != Some(batch) || tenant.lost || tenant.ended {
            return;
        }
        let budget = tenant.tracker.renewal_budget(now);
        if budget.is_zero() {
            tenant.tracker.renewal_unanswered();
            self.lose_tenant(index, now, t, fx);
            return;
        }
        let lease = tenant.tracker.lease();
        let call = Call::Extend {
            owner: lease.owner,
            slot: slot_of(setup, &lease.key),
            lease_us,
        };
        let id = self.send(Purpose::TenantRenewAlone(index), call, now, t, fx);
        if let State::Polling(poll) = &mut self.state
            && let Some(tenant) = poll.held.iter_mut().find(|h| h.index == index)
        {
            tenant.renewing = Some(id);
        }
        fx.push(Effect::Wake {
            at: now + budget,
            timer: Timer::TenantBudget(id, index),
        });
    }

    /// Records a tenant's answer to its renewal `call`: renewed on schedule, or lost.
    fn tenant_renewed(
        &mut self,
        index: u32,
        call: InFlight,
        result: Result<ExtendOutcome, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let lease_time = self.lease_time();
        let sent_us = self.clock.true_us(call.sent_at);
        let Some(tenant) = self.held_tenant(index) else {
            return;
        };
        // An ended action's lease is no longer renewed; a renewal given up (its budget
        // ran out) takes no answer.
        if tenant.renewing != Some(call.id) || tenant.lost || tenant.ended {
            return;
        }
        tenant.renewing = None;
        if !tenant
            .tracker
            .record_renewal(result, call.sent_at, lease_time, now)
        {
            self.lose_tenant(index, now, t, fx);
            return;
        }
        if let Some(schedule) = &mut tenant.schedule {
            schedule.renewed(call.sent_at);
            fx.push(Effect::Wake {
                at: schedule.due(),
                timer: Timer::TenantRenewDue,
            });
        }
        let deadline = tenant.tracker.context().deadline();
        let token = tenant.tracker.lease().fencing_token;
        fx.push(Effect::Log(What::Renewed {
            lock: index,
            token,
            requested: Some(sent_us),
            deadline: Some(self.clock.true_us(deadline)),
        }));
        fx.push(Effect::Wake {
            at: deadline,
            timer: Timer::TenantDeadline(index),
        });
    }

    /// The time left for a tenant's renewal `id` ran out: that tenant is lost.
    pub(super) fn tenant_budget(&mut self, id: u64, index: u32, t: u64, fx: &mut Vec<Effect>) {
        let Some(tenant) = self.held_tenant(index) else {
            return;
        };
        if tenant.renewing != Some(id) || tenant.lost || tenant.ended {
            return;
        }
        tenant.renewing = None;
        tenant.tracker.renewal_unanswered();
        let now = self.clock.instant(t);
        self.lose_tenant(index, now, t, fx);
    }

    /// A tenant's deadline, as it stood when the timer was set: lost if it has passed.
    pub(super) fn tenant_deadline(
        &mut self,
        index: u32,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Polling(poll) = &self.state else {
            return;
        };
        let Some(tenant) = poll.held.iter().find(|h| h.index == index) else {
            return;
        };
        if tenant.lost || tenant.ended || !tenant.tracker.is_lost_at(now) {
            return;
        }
        tenant.tracker.lose();
        self.lose_tenant(index, now, t, fx);
    }

    /// A tenant's lease is lost: its action is told and stops at once (its end write);
    /// the other tenants go on.
    fn lose_tenant(&mut self, index: u32, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let Some(tenant) = self.held_tenant(index) else {
            return;
        };
        if tenant.lost || tenant.ended {
            return;
        }
        tenant.lost = true;
        fx.push(Effect::Log(What::LeaseLost {
            lock: index,
            token: tenant.tracker.lease().fencing_token,
        }));
        self.end_tenant(index, now, t, fx);
    }

    /// A tenant's action's work is done: it returns.
    pub(super) fn tenant_work_done(
        &mut self,
        index: u32,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        let State::Polling(poll) = &self.state else {
            return;
        };
        if poll
            .held
            .iter()
            .any(|h| h.index == index && !h.ended && now >= h.work_until)
        {
            self.end_tenant(index, now, t, fx);
        }
    }

    /// A tenant's action returns (its end write); when every action has, the tenants are
    /// released together.
    fn end_tenant(&mut self, index: u32, now: Instant, t: u64, fx: &mut Vec<Effect>) {
        let setup: &'a Setup = self.setup;
        let State::Polling(poll) = &self.state else {
            return;
        };
        let Some(tenant) = poll.held.iter().find(|h| h.index == index && !h.ended) else {
            return;
        };
        let found_lost = !tenant.lost && tenant.tracker.lost_before_return(now);
        self.tenant_ended(index, &tenant.tracker, found_lost, fx);
        let State::Polling(poll) = &mut self.state else {
            return;
        };
        if let Some(tenant) = poll.held.iter_mut().find(|h| h.index == index) {
            tenant.ended = true;
            tenant.lost |= found_lost;
        }
        if poll.releasing || poll.held.iter().any(|h| !h.ended) {
            return;
        }
        // Every action has run: one batched release (`Finished::release_all`).
        poll.releasing = true;
        let leases = poll
            .held
            .iter()
            .map(|h| {
                (
                    h.tracker.lease().owner,
                    slot_of(setup, &h.tracker.lease().key),
                )
            })
            .collect();
        self.send(
            Purpose::TenantRelease,
            Call::ReleaseBatch { leases },
            now,
            t,
            fx,
        );
    }

    fn batch_released(
        &mut self,
        answer: Result<Answer, Error>,
        now: Instant,
        t: u64,
        fx: &mut Vec<Effect>,
    ) {
        if !matches!(&self.state, State::Polling(poll) if poll.releasing) {
            return;
        }
        let State::Polling(poll) = std::mem::replace(&mut self.state, State::Idle) else {
            return;
        };
        let lease_time = self.lease_time();
        let answers = items(answer, poll.held.len());
        for (tenant, answer) in poll.held.iter().zip(answers) {
            let lease = tenant.tracker.lease();
            let answer = answer.map(|answer| match answer {
                Answer::Released => ReleaseOutcome::Released,
                _ => ReleaseOutcome::NotHeld,
            });
            if matches!(answer, Ok(ReleaseOutcome::Released)) {
                fx.push(Effect::Log(What::Released {
                    lock: tenant.index,
                    token: lease.fencing_token,
                }));
            }
            // A release that failed transiently is released again in the background.
            if let Some(orphan) =
                Orphan::after_release(lease, lease_time, Duration::ZERO, &answer, now)
            {
                self.adopt(orphan, Some(lease.owner), now, t, fx);
            }
        }
        self.rest_then_start(now, fx);
    }
}

/// The engine's view of one item's answer to an extend.
fn extend_outcome(answer: Answer) -> ExtendOutcome {
    match answer {
        Answer::Extended { expires } => ExtendOutcome::Extended {
            expires_at: SystemTime::UNIX_EPOCH + Duration::from_micros(expires),
        },
        _ => ExtendOutcome::NotHeld,
    }
}
