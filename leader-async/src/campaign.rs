//! Continuous leadership in a background task: one leader renews, standbys wait to take over.

use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_listener::EventListener;
use futures_lite::FutureExt;
use leader_core::__private::{
    CampaignRun, CampaignStep, LeadershipState, LeaseTracker, Orphan, Raced, TermLoop, TermStep,
};
use leader_core::{
    AsyncLockBackend, CampaignConfig, Error, EventCallback, GroupSlots, LeadershipWatcher,
    NoopBackend, ReleaseListener, RevokeReason,
};
use tracing::Instrument;

use crate::elector::AsyncLeaderElector;
use crate::on_drop::OnDrop;
use crate::orphan::release_orphan;
use crate::release::{release, release_in_background_then};
use crate::rt;
use crate::survey::{self, survey, withdraw};

/// A running campaign for continuous leadership, driven by a task on the runtime.
///
/// It dereferences to its [`LeadershipWatcher`]: ask `is_leader()` / `current_leader()`,
/// watch `events()` (a `Stream`), and scope your work loop to the current term:
/// `let term = leadership.wait_for_term().await;` then select your work against
/// `term.lost()`. [`resign`](Self::resign) releases the lease and waits for the task to
/// end; dropping the handle asks the task to resign and release in the background.
///
/// See [`CampaignConfig`] for the failover bounds and the fail-stop rule.
#[derive(Debug)]
pub struct AsyncLeadershipHandle {
    state: Arc<LeadershipState>,
    watcher: LeadershipWatcher,
}

impl Deref for AsyncLeadershipHandle {
    type Target = LeadershipWatcher;

    fn deref(&self) -> &LeadershipWatcher {
        &self.watcher
    }
}

impl AsyncLeadershipHandle {
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

    /// Steps down (releasing the lease if leading), stops campaigning, and waits for the
    /// background task to finish.
    pub async fn resign(self) {
        self.request_stop();
        self.state.finished().await;
    }

    /// Stops campaigning *without* releasing the lease, as if this process had crashed:
    /// standbys take over only when the lease runs out. For failover drills and tests.
    pub async fn abandon(self) {
        self.state.request_abandon();
        self.request_stop();
        self.state.finished().await;
    }

    // The task's waits all select on the stop listener, so this wakes it at once.
    fn request_stop(&self) {
        self.state.request_stop();
    }
}

impl Drop for AsyncLeadershipHandle {
    fn drop(&mut self) {
        self.request_stop();
    }
}

impl<B: AsyncLockBackend + 'static> AsyncLeaderElector<B> {
    /// Starts campaigning for `name` in a task spawned on the runtime.
    ///
    /// # Errors
    ///
    /// An invalid name or config.
    /// Trouble while campaigning is no error here: a failed attempt is retried at the next
    /// poll, and an attempt answered after the term's deadline (a paused process, a stalled
    /// server) starts no term: its lease is released and the campaign goes on (see
    /// [`CampaignConfig`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_async::AsyncLeaderElector;
    /// use leader_core::{CampaignConfig, InMemoryBackend, LeaderElectionOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), leader_core::Error> {
    /// let elector = AsyncLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
    /// let leadership = elector.campaign("orders-stream", CampaignConfig::default())?;
    /// let term = leadership.wait_for_term().await;
    /// // consume until the term ends:
    /// // tokio::select! { _ = term.lost() => {}, _ = consume(term.fencing_token()) => {} }
    /// assert!(!term.is_lost());
    /// leadership.resign().await;
    /// assert!(term.is_lost());
    /// # Ok(())
    /// # }
    /// ```
    pub fn campaign(
        &self,
        name: &str,
        config: CampaignConfig,
    ) -> Result<AsyncLeadershipHandle, Error> {
        self.campaign_with_callbacks(name, config, Vec::new())
    }

    /// Like [`campaign`](Self::campaign), with callbacks registered before the first event.
    ///
    /// # Errors
    ///
    /// An invalid name or config.
    pub fn campaign_with_callbacks(
        &self,
        name: &str,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
    ) -> Result<AsyncLeadershipHandle, Error> {
        let campaign = self
            .scope()
            .campaign(GroupSlots::ONE, name, config, callbacks)?;
        Ok(self.start_campaign(campaign))
    }

    /// Starts the loop of `campaign` in a task of its own.
    pub(crate) fn start_campaign(&self, campaign: CampaignRun) -> AsyncLeadershipHandle {
        let state = Arc::clone(&campaign.state);
        if campaign.contends() {
            spawn_campaign(Arc::clone(self.backend()), campaign);
        } else {
            spawn_campaign(Arc::new(NoopBackend::new()), campaign);
        }
        AsyncLeadershipHandle {
            watcher: state.watcher(),
            state,
        }
    }
}

fn spawn_campaign<C: AsyncLockBackend + 'static>(backend: Arc<C>, campaign: CampaignRun) {
    rt::spawn_detached(async move {
        // However the task ends, what a failed attempt may have taken is released and
        // the handle learns the campaign is over.
        let finish = OnDrop::new(|| {
            release_all(&backend, campaign.unsettled_attempts());
            campaign.state.mark_finished();
        });
        // Dropped half-way, the runtime shut down under the campaign: the term ends and
        // its lease is released from a thread, so standbys take over at once; what an
        // unsettled attempt of its token may still take is released after it, as at the
        // end of any other term.
        let shut_down = OnDrop::new(|| {
            survey::withdraw_in_background(&campaign, &backend);
            if let Some(term) = campaign.state.revoke(RevokeReason::ShutDown) {
                release_in_background_then(&backend, &term, Duration::ZERO, campaign.term_ended());
            }
        });
        run(&campaign, &backend).await;
        shut_down.disarm();
        drop(finish);
    });
}

/// Standby until elected, lead until the term ends; again until stopped: the steps of
/// [`CampaignStep`], done in this task.
async fn run<C: AsyncLockBackend + 'static>(campaign: &CampaignRun, backend: &Arc<C>) {
    loop {
        let release = backend
            .release_events()
            .map(|e| e.listen(campaign.key.as_str()));
        let stop = campaign.state.stop_listener();
        let mut step = campaign.next_round();
        loop {
            step = match step {
                CampaignStep::Survey(candidacy) => {
                    campaign.after_standby_survey(survey(candidacy, &**backend, true).await)
                }
                CampaignStep::Attempt => attempt(campaign, backend).await,
                CampaignStep::StandBy { orphan, wait } => {
                    release_all(backend, orphan);
                    stand_by(wait, release, stop).await;
                    break;
                }
                CampaignStep::Lead { term, strays } => {
                    release_all(backend, strays);
                    lead(campaign, backend).instrument(term.term_span()).await;
                    release_all(backend, campaign.term_ended());
                    break;
                }
                CampaignStep::Stop => {
                    withdraw(campaign, backend).await;
                    return;
                }
            };
        }
    }
}

/// Sends a standby's attempt and hands its answer to the campaign.
async fn attempt<'a, C: AsyncLockBackend + 'static>(
    campaign: &'a CampaignRun,
    backend: &Arc<C>,
) -> CampaignStep<'a> {
    let request = campaign.request();
    let sent_at = Instant::now();
    // Unless answered, the attempt may take a slot anyway: if this future is dropped
    // while it is on its way (a runtime shutting down), its owner token is released in
    // the background, as an elector's cancelled acquire is.
    let in_flight = OnDrop::new(|| {
        tracing::debug!(lock = %request.group_name(), "a campaign's attempt was dropped in flight: releasing its owner token");
        release_orphan(Arc::clone(backend), Orphan::of_request(&request, sent_at));
    });
    let answer = backend.try_acquire_slot(request).await;
    in_flight.disarm();
    campaign.after_standby_attempt(answer, sent_at, Instant::now())
}

/// Releases `orphan`, if there is one, in the background.
fn release_all<C: AsyncLockBackend + 'static>(backend: &Arc<C>, orphan: Option<Orphan>) {
    if let Some(orphan) = orphan {
        release_orphan(Arc::clone(backend), orphan);
    }
}

/// Waits for a release of the lock, a stop request, or `wait`.
async fn stand_by(wait: Duration, release: Option<ReleaseListener>, stop: EventListener) {
    let woken = async {
        match release {
            Some(release) => {
                release.await;
            }
            None => std::future::pending().await,
        }
    };
    rt::timeout(wait, woken.or(stop)).await;
}

/// Leads one term: the steps of [`TermLoop`], done in this task (a ranked leader's
/// survey polled beside the renewals).
async fn lead<C: AsyncLockBackend + 'static>(campaign: &CampaignRun, backend: &Arc<C>) {
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
                    pending = survey::start(campaign, &**backend);
                }
                let surveyed = survey::wait_for_renewal(state, until, &mut pending).await;
                term_loop.after_wait(surveyed, Instant::now())
            }
            TermStep::Renew { term, sent_at } => {
                let renewal = term.traced_extend_async(
                    backend.extend(campaign.keepalive().renewal(term.lease())),
                );
                let renewal = match rt::timeout(term.renewal_budget(Instant::now()), renewal).await
                {
                    Some(answer) => Raced::Answered(answer),
                    None => Raced::DeadlinePassed,
                };
                term_loop.after_renewal(&term, renewal, sent_at, Instant::now())
            }
            TermStep::End {
                term,
                withdraw: first,
            } => {
                // A survey on its way is dropped here; the withdrawal covers its heartbeat.
                drop(pending);
                if first {
                    withdraw(campaign, backend).await;
                }
                release_term(backend, &term).await;
                return;
            }
            TermStep::Over => return,
        };
    }
}

/// Best-effort release of an ended term (it may already be gone).
async fn release_term<C: AsyncLockBackend + 'static>(backend: &Arc<C>, term: &Arc<LeaseTracker>) {
    if let Err(err) = release(backend, term, Duration::ZERO).await {
        tracing::debug!(lock = %term.lease().key, error = %err, "release after the term ended failed; the lease will run out");
    }
}
