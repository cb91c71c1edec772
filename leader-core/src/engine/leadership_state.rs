//! The shared state of a continuous-leadership campaign: who leads, the current term,
//! events, and the stop request. The blocking and async campaign loops drive it; the
//! handles users hold read it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use event_listener::{Event, EventListener, Listener};
use parking_lot::Mutex;

use crate::engine::candidacy::TermCheck;
use crate::engine::defects::{Defect, planted};
use crate::engine::lease_tracker::LeaseTracker;
use crate::error::Error;
use crate::leadership::context::LeaseContext;
use crate::leadership::event::{EventCallback, LeadershipEvent, RevokeReason};
use crate::leadership::events::{EventSender, LeadershipEvents};
use crate::spi::outcome::{ExtendOutcome, SlotOutcome};

/// The shared state of one campaign.
///
/// Users reach it through the electors' leadership handles; campaign loops update it.
#[derive(Default)]
pub struct LeadershipState {
    node_id: String,
    term: Mutex<Option<Arc<LeaseTracker>>>,
    term_started: Event,
    current_leader: Mutex<Option<String>>,
    callbacks: Mutex<Vec<EventCallback>>,
    subscribers: Mutex<Vec<EventSender>>,
    stop: AtomicBool,
    abandon: AtomicBool,
    stop_event: Event,
    finished: AtomicBool,
    finished_event: Event,
}

impl fmt::Debug for LeadershipState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeadershipState")
            .field("node_id", &self.node_id)
            .field("is_leader", &self.is_leader())
            .field("current_leader", &self.current_leader())
            .finish_non_exhaustive()
    }
}

impl LeadershipState {
    /// The state of a campaign by `node_id`, with `callbacks` registered from the start.
    pub fn new(node_id: impl Into<String>, callbacks: Vec<EventCallback>) -> Self {
        LeadershipState {
            node_id: node_id.into(),
            callbacks: Mutex::new(callbacks),
            ..LeadershipState::default()
        }
    }

    /// This instance's node id.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// `true` while this instance leads: a term is on and its renew deadline has not passed.
    ///
    /// For users: it reads this node's clock; the campaign loops decide on the instant
    /// they read ([`check_deadline`](Self::check_deadline)).
    pub fn is_leader(&self) -> bool {
        self.term
            .lock()
            .as_ref()
            .is_some_and(|term| !term.context().is_lost())
    }

    /// The leader this instance last observed (itself while it leads).
    pub fn current_leader(&self) -> Option<String> {
        self.current_leader.lock().clone()
    }

    /// The current term's signal, while this instance leads: its `lost()` resolves (and
    /// `is_lost()` turns true) the moment the term ends. Select your work loop on it.
    pub fn term(&self) -> Option<LeaseContext> {
        self.term
            .lock()
            .as_ref()
            .filter(|term| !term.context().is_lost())
            .map(|term| term.context().clone())
    }

    /// Waits until this instance leads, then returns the term's signal.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_for_term(&self) -> LeaseContext {
        loop {
            let listener = self.term_started.listen();
            if let Some(term) = self.term() {
                return term;
            }
            listener.await;
        }
    }

    /// Blocks until this instance leads (`Some(term)`) or `timeout` passes (`None`).
    pub fn wait_for_term_timeout(&self, timeout: Duration) -> Option<LeaseContext> {
        let until = Instant::now() + timeout;
        loop {
            let listener = self.term_started.listen();
            if let Some(term) = self.term() {
                return Some(term);
            }
            let left = until.checked_duration_since(Instant::now())?;
            listener.wait_timeout(left);
        }
    }

    /// A stream of events from now on (also usable blocking: `recv_blocking`); bounded,
    /// see [`LeadershipEvents`] for what happens when its reader lags.
    ///
    /// Each event is sent just *after* the state it describes becomes visible, so a
    /// callback or subscriber that reads `is_leader()` on `Elected` sees `true`; the other
    /// way round, `is_leader()` may turn true a moment before the `Elected` event arrives.
    pub fn subscribe(&self) -> LeadershipEvents {
        let (sender, events) = LeadershipEvents::channel();
        let mut subscribers = self.subscribers.lock();
        // Checked under the lock `mark_finished` clears it with, so no sender outlives it.
        if !self.finished.load(Ordering::Acquire) {
            subscribers.push(sender);
        }
        events
    }

    /// Calls `callback` on every event from now on.
    pub fn on_event(&self, callback: EventCallback) {
        self.callbacks.lock().push(callback);
    }

    /// Campaign loops: a term began.
    pub fn elected(&self, term: Arc<LeaseTracker>) {
        let fencing_token = term.lease().fencing_token;
        term.leadership_gained();
        *self.term.lock() = Some(term);
        self.term_started.notify(usize::MAX);
        tracing::info!(node = %self.node_id, fencing_token, "elected leader");
        self.emit(LeadershipEvent::Elected { fencing_token });
        self.observe_leader(Some(&self.node_id));
    }

    /// Campaign loops: the term ended; returns it (to release) if there was one.
    pub fn revoke(&self, reason: RevokeReason) -> Option<Arc<LeaseTracker>> {
        let term = self.term.lock().take()?;
        if reason.is_loss() {
            term.count_lost();
        }
        term.leadership_lost(reason.as_label());
        term.mark_lost();
        tracing::warn!(node = %self.node_id, %reason, "leadership revoked");
        self.emit(LeadershipEvent::Revoked { reason });
        self.observe_leader(None);
        Some(term)
    }

    /// Campaign loops: the current term, even past its deadline (to renew or revoke it).
    pub fn term_tracker(&self) -> Option<Arc<LeaseTracker>> {
        self.term.lock().clone()
    }

    /// Campaign loops: records a standby's acquire attempt sent at `sent_at`. On
    /// `Acquired` a term begins on its slot (its deadline is `renew_deadline` from
    /// `sent_at`) and is returned; on `Held` the observed leader is updated; an error is
    /// logged (the standby just tries again at its next poll).
    pub fn after_attempt(
        &self,
        answer: Result<SlotOutcome, Error>,
        sent_at: Instant,
        lock_name: &str,
        renew_deadline: Duration,
        backend: &'static str,
    ) -> Option<Arc<LeaseTracker>> {
        match answer {
            Ok(SlotOutcome::Acquired { slot, lease }) => {
                let term = Arc::new(LeaseTracker::new_in_slot(
                    lease,
                    lock_name,
                    slot,
                    sent_at,
                    renew_deadline,
                    backend,
                ));
                self.elected(Arc::clone(&term));
                Some(term)
            }
            Ok(SlotOutcome::Held(holder)) => {
                self.observe_leader(holder.as_ref().map(|h| h.leader_id.as_str()));
                None
            }
            Err(err) => {
                tracing::warn!(node = %self.node_id, lock = %lock_name, error = %err, "campaign attempt failed; retrying at the next poll");
                None
            }
        }
    }

    /// Campaign loops: records the leader's renewal sent at `sent_at` and answered at
    /// `now` (both read by the caller). Returns the ended term (to release) when the
    /// renewal failed, found the lease gone, or came back after the renew deadline; `None`
    /// while the term goes on.
    pub fn after_renewal(
        &self,
        term: &LeaseTracker,
        answer: Result<ExtendOutcome, Error>,
        sent_at: Instant,
        renew_deadline: Duration,
        now: Instant,
    ) -> Option<Arc<LeaseTracker>> {
        // The term runs from the renewal's request: the store granted it then at the latest.
        let from = if planted(Defect::TermRenewedFromAnswer) {
            now
        } else {
            sent_at
        };
        let reason = match answer {
            // A renewal answered after the renew deadline does not revive the term.
            Ok(ExtendOutcome::Extended { .. }) if term.renewed(from, renew_deadline, now) => {
                return None;
            }
            Ok(ExtendOutcome::Extended { .. }) => RevokeReason::RenewDeadlinePassed,
            Ok(ExtendOutcome::NotHeld) => RevokeReason::LeaseLost,
            Err(err) => RevokeReason::RenewalFailed(Arc::new(err)),
        };
        self.revoke(reason)
    }

    /// Campaign loops: what a ranked leader's survey found, when it arrives (see
    /// [`TermCheck`]); returns the ended term (to release), if it ended.
    pub fn after_survey(&self, check: TermCheck) -> Option<Arc<LeaseTracker>> {
        match check {
            TermCheck::Keep => None,
            TermCheck::Preempted { by_rank } => self.revoke(RevokeReason::Preempted { by_rank }),
        }
    }

    /// Campaign loops: before renewing at `now` (read by the caller), ends the term if its
    /// deadline already passed (the loop was paused); returns the ended term.
    pub fn check_deadline(&self, term: &LeaseTracker, now: Instant) -> Option<Arc<LeaseTracker>> {
        if term.context().is_lost_at(now) {
            return self.revoke(RevokeReason::RenewDeadlinePassed);
        }
        None
    }

    /// Campaign loops: the leader seen in the backend (from a `Held` answer).
    pub fn observe_leader(&self, leader_id: Option<&str>) {
        let changed = {
            let mut current = self.current_leader.lock();
            if current.as_deref() == leader_id {
                false
            } else {
                *current = leader_id.map(str::to_owned);
                true
            }
        };
        if changed {
            self.emit(LeadershipEvent::LeaderChanged {
                leader_id: leader_id.map(str::to_owned),
            });
        }
    }

    fn emit(&self, event: LeadershipEvent) {
        let callbacks = self.callbacks.lock().clone();
        for callback in callbacks {
            callback(&event);
        }
        self.subscribers
            .lock()
            .retain(|sender| sender.send(event.clone()));
    }

    /// Asks the campaign loop to resign and stop.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.stop_event.notify(usize::MAX);
    }

    /// Asks the campaign loop to stop *without* releasing the lease, as if the process had
    /// crashed: the lock frees only when the lease runs out. For failover drills and tests.
    pub fn request_abandon(&self) {
        self.abandon.store(true, Ordering::Release);
        self.request_stop();
    }

    /// Whether [`request_abandon`](Self::request_abandon) was called: the campaign must
    /// leave everything it holds to run out, as if it crashed.
    pub fn abandon_requested(&self) -> bool {
        self.abandon.load(Ordering::Acquire)
    }

    /// Campaign loops: ends the term because a stop was requested; returns it when it
    /// must be released (a resignation), `None` when abandoned or not leading.
    pub fn end_on_stop(&self) -> Option<Arc<LeaseTracker>> {
        if self.abandon.load(Ordering::Acquire) {
            self.revoke(RevokeReason::Abandoned);
            return None;
        }
        self.revoke(RevokeReason::Resigned)
    }

    /// Whether a stop was requested.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Listens for a stop request (check [`stop_requested`](Self::stop_requested) after
    /// listening, so a request in between is not missed).
    pub fn stop_listener(&self) -> EventListener {
        self.stop_event.listen()
    }

    /// Campaign loops: the loop has ended (after releasing).
    pub fn mark_finished(&self) {
        {
            // Dropping the senders ends every stream once its buffer is read.
            let mut subscribers = self.subscribers.lock();
            self.finished.store(true, Ordering::Release);
            subscribers.clear();
        }
        self.finished_event.notify(usize::MAX);
    }

    /// Waits until the campaign loop has ended.
    pub async fn finished(&self) {
        loop {
            let listener = self.finished_event.listen();
            if self.finished.load(Ordering::Acquire) {
                return;
            }
            listener.await;
        }
    }
}
