//! Continuous leadership on a thread: one leader renews, standbys wait to take over.

use std::ops::Deref;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use event_listener::{EventListener, Listener};
use leader_core::__private::{
    CampaignRun, CampaignStep, LeadershipState, LeaseTracker, Orphan, TermLoop, TermStep,
};
use leader_core::{
    CampaignConfig, Error, EventCallback, GroupSlots, LeadershipWatcher, LockBackend, NoopBackend,
    ReleaseEvents, ReleaseListener, ReleaseRequest,
};

use crate::elector::LeaderElector;
use crate::orphan::{after_release, release_orphan};
use crate::renew::extend_before;
use crate::survey::{self, survey, withdraw};

/// A running campaign for continuous leadership, driven by a background thread.
///
/// It dereferences to its [`LeadershipWatcher`]: ask `is_leader()` / `current_leader()`,
/// watch `events()`, and scope your work loop to the current term with `term()` /
/// `wait_for_term_timeout(..)`: the term's context turns lost the moment leadership ends.
/// [`resign`](Self::resign) (or dropping the handle) releases the lease so a standby takes
/// over at once; both wait for the thread to end.
///
/// See [`CampaignConfig`] for the failover bounds and the fail-stop rule.
#[derive(Debug)]
pub struct LeadershipHandle {
    state: Arc<LeadershipState>,
    watcher: LeadershipWatcher,
    wake: Option<(ReleaseEvents, String)>,
    thread: Option<JoinHandle<()>>,
}

impl Deref for LeadershipHandle {
    type Target = LeadershipWatcher;

    fn deref(&self) -> &LeadershipWatcher {
        &self.watcher
    }
}

impl LeadershipHandle {
    /// A read-only, cloneable view of this campaign for the code doing the leader's work;
    /// dropping it does not stop the campaign (dropping the handle does).
    pub fn watcher(&self) -> LeadershipWatcher {
        self.watcher.clone()
    }

    /// Calls `callback` on every event from now on, on the campaign's loop (keep it short).
    pub fn on_event(&self, callback: EventCallback) {
        self.state.on_event(callback);
    }

    /// The shared state. Not public API: for the project's own test kit.
    #[doc(hidden)]
    pub fn state(&self) -> &Arc<LeadershipState> {
        &self.state
    }

    /// Steps down (releasing the lease if leading) and stops campaigning.
    pub fn resign(mut self) {
        self.stop();
    }

    /// Stops campaigning *without* releasing the lease, as if this process had crashed:
    /// standbys take over only when the lease runs out. For failover drills and tests.
    pub fn abandon(mut self) {
        self.state.request_abandon();
        self.stop();
    }

    fn stop(&mut self) {
        self.state.request_stop();
        if let Some((events, key)) = &self.wake {
            events.notify(key);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LeadershipHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<B: LockBackend + 'static> LeaderElector<B> {
    /// Starts campaigning for `name` on a background thread.
    ///
    /// # Errors
    ///
    /// An invalid name or config, or [`Error::ShutDown`] if no thread could be started.
    /// Trouble while campaigning is no error here: a failed attempt is retried at the next
    /// poll, and an attempt answered after the term's deadline (a paused process, a stalled
    /// server) starts no term: its lease is released and the campaign goes on (see
    /// [`CampaignConfig`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_blocking::LeaderElector;
    /// use leader_core::{CampaignConfig, InMemoryBackend, LeaderElectionOptions};
    ///
    /// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let leadership = elector.campaign("orders-stream", CampaignConfig::default())?;
    /// let term = leadership.wait_for_term_timeout(Duration::from_secs(5)).expect("alone, so elected");
    /// while !term.is_lost() {
    ///     // consume a batch, passing term.fencing_token() along with writes ...
    ///     break;
    /// }
    /// leadership.resign();
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn campaign(&self, name: &str, config: CampaignConfig) -> Result<LeadershipHandle, Error> {
        self.campaign_with_callbacks(name, config, Vec::new())
    }

    /// Like [`campaign`](Self::campaign), with callbacks registered before the first event.
    ///
    /// # Errors
    ///
    /// An invalid name or config, or [`Error::ShutDown`] if no thread could be started.
    pub fn campaign_with_callbacks(
        &self,
        name: &str,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
    ) -> Result<LeadershipHandle, Error> {
        self.start_campaign(
            self.scope()
                .campaign(GroupSlots::ONE, name, config, callbacks)?,
        )
    }

    /// Starts the loop of `campaign` on a thread of its own.
    pub(crate) fn start_campaign(&self, campaign: CampaignRun) -> Result<LeadershipHandle, Error> {
        let state = Arc::clone(&campaign.state);
        let (wake, spawned) = if campaign.contends() {
            (
                self.backend()
                    .release_events()
                    .map(|events| (events.clone(), campaign.key.as_str().to_owned())),
                spawn_campaign(Arc::clone(self.backend()), campaign),
            )
        } else {
            (None, spawn_campaign(Arc::new(NoopBackend::new()), campaign))
        };
        let thread = spawned.map_err(|err| {
            tracing::warn!(error = %err, "could not start the campaign thread");
            Error::ShutDown
        })?;
        Ok(LeadershipHandle {
            watcher: state.watcher(),
            state,
            wake,
            thread: Some(thread),
        })
    }
}

fn spawn_campaign<C: LockBackend + 'static>(
    backend: Arc<C>,
    campaign: CampaignRun,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("leader-campaign".into())
        .spawn(move || {
            run(&campaign, &backend);
            release_all(&backend, campaign.unsettled_attempts());
            campaign.state.mark_finished();
        })
}

/// Standby until elected, lead until the term ends; again until stopped: the steps of
/// [`CampaignStep`], done on this thread.
fn run<C: LockBackend + 'static>(campaign: &CampaignRun, backend: &Arc<C>) {
    loop {
        let release = backend
            .release_events()
            .map(|e| e.listen(campaign.key.as_str()));
        let stop = campaign.state.stop_listener();
        let mut step = campaign.next_round();
        loop {
            step = match step {
                CampaignStep::Survey(candidacy) => {
                    campaign.after_standby_survey(survey(candidacy, &**backend, true))
                }
                CampaignStep::Attempt => {
                    let sent_at = Instant::now();
                    let answer = backend.try_acquire_slot(campaign.request());
                    campaign.after_standby_attempt(answer, sent_at, Instant::now())
                }
                CampaignStep::StandBy { orphan, wait } => {
                    release_all(backend, orphan);
                    stand_by(wait, release, stop);
                    break;
                }
                CampaignStep::Lead { term, strays } => {
                    release_all(backend, strays);
                    term.term_span().in_scope(|| lead(campaign, backend));
                    release_all(backend, campaign.term_ended());
                    break;
                }
                CampaignStep::Stop => {
                    withdraw(campaign, backend);
                    return;
                }
            };
        }
    }
}

/// Releases `orphan`, if there is one, in the background.
fn release_all<C: LockBackend + 'static>(backend: &Arc<C>, orphan: Option<Orphan>) {
    if let Some(orphan) = orphan {
        release_orphan(Arc::clone(backend), orphan);
    }
}

/// Waits for a release of the lock, or the next poll. A stop request also wakes the
/// release listener (the handle pokes it).
fn stand_by(wait: Duration, release: Option<ReleaseListener>, stop: EventListener) {
    match release {
        Some(release) => {
            release.wait_timeout(wait);
        }
        None => {
            stop.wait_timeout(wait);
        }
    }
}

/// Leads one term: the steps of [`TermLoop`], done on this thread (a ranked leader's
/// survey on a thread of its own).
fn lead<C: LockBackend + 'static>(campaign: &CampaignRun, backend: &Arc<C>) {
    let state = &campaign.state;
    let (mut term_loop, mut step) = TermLoop::new(campaign, Instant::now());
    let mut pending = None;
    loop {
        step = match step {
            TermStep::Wait {
                until,
                start_survey,
            } => {
                if start_survey && pending.is_none() {
                    pending = survey::start(campaign, backend);
                }
                let surveyed = survey::wait_for_renewal(state, until, &mut pending);
                term_loop.after_wait(surveyed, Instant::now())
            }
            TermStep::Renew { term, sent_at } => {
                let renewal = extend_before(
                    backend,
                    &term,
                    campaign.keepalive(),
                    term.context().deadline(),
                    || state.stop_requested(),
                );
                term_loop.after_renewal(&term, renewal, sent_at, Instant::now())
            }
            TermStep::End {
                term,
                withdraw: first,
            } => {
                drop(pending);
                if first {
                    withdraw(campaign, backend);
                }
                release(backend, &term);
                return;
            }
            TermStep::Over => return,
        };
    }
}

/// Releases an ended term (it may already be gone); a transient failure is released again
/// in the background, so that a standby does not wait out the lease.
fn release<C: LockBackend + 'static>(backend: &Arc<C>, term: &LeaseTracker) {
    let answer =
        term.traced_release(|| backend.release(ReleaseRequest::new(term.lease(), Duration::ZERO)));
    if let Err(err) = after_release(backend, term, Duration::ZERO, answer) {
        tracing::debug!(lock = %term.lease().key, error = %err, "release after the term ended failed");
    }
}
