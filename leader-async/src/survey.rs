//! A ranked campaign's I/O about its candidacy: heartbeats of its membership record, the
//! survey of the other candidates (a leader's runs beside its renewals), and the
//! withdrawal of the record when it resigns. The decisions are leader-core's
//! (`Candidacy`, `TermCheck`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use leader_core::__private::{CampaignRun, Candidacy, LeadershipState, Standing, Withdrawal};
use leader_core::{AsyncLockBackend, ReleaseRequest};

use crate::on_drop::OnDrop;
use crate::orphan::release_orphan;
use crate::rt;

/// A leader's survey on its way, polled by the leader's loop between its waits.
pub(crate) type Pending<'a> = Pin<Box<dyn Future<Output = Standing> + Send + 'a>>;

/// A ranked campaign's look at the candidates: renews its membership record when due,
/// then, when `list`, lists the live ones (see [`Standing`]).
pub(crate) async fn survey<C: AsyncLockBackend>(
    candidacy: &Candidacy,
    backend: &C,
    list: bool,
) -> Standing {
    let sent_at = Instant::now();
    if let Some(request) = candidacy.begin_heartbeat(sent_at) {
        let answer = backend.try_acquire(request).await;
        candidacy.after_heartbeat(answer, sent_at);
    }
    let mut survey = candidacy.survey();
    while let Some(request) = survey.next_request().filter(|_| list) {
        let answer = backend.list(&request).await;
        survey.read(answer);
    }
    survey.standing()
}

/// A ranked leader's survey, to run beside the renewals that keep the term (see
/// `TermCheck`): neither a slow listing nor a hanging heartbeat holds them up. It lists
/// the others only when a higher rank could preempt the leader. `None` when unranked.
pub(crate) fn start<'a, C: AsyncLockBackend>(
    campaign: &'a CampaignRun,
    backend: &'a C,
) -> Option<Pending<'a>> {
    let candidacy = campaign.candidacy()?;
    Some(Box::pin(survey(candidacy, backend, candidacy.preempts())))
}

/// Waits until `until` (the next renewal), a stop request, or the end of the survey on
/// its way, whichever comes first; returns the survey's standing if it ended. A survey
/// still on its way at `until` stays pending, to be waited for after the renewal.
pub(crate) async fn wait_for_renewal(
    state: &LeadershipState,
    until: Instant,
    pending: &mut Option<Pending<'_>>,
) -> Option<Standing> {
    let stop = state.stop_listener();
    if state.stop_requested() {
        return None;
    }
    let left = until.saturating_duration_since(Instant::now());
    let Some(survey) = pending.as_mut() else {
        rt::timeout(left, stop).await;
        return None;
    };
    let surveyed = async { Some(survey.as_mut().await) }.or(async {
        stop.await;
        None
    });
    let standing = rt::timeout(left, surveyed).await.flatten();
    if standing.is_some() {
        *pending = None;
    }
    standing
}

/// Releases a ranked campaign's membership record when it resigns — before the lock, so
/// the standby that the lock's release wakes no longer sees it — and, when a heartbeat may
/// still land after that release (a survey dropped on its way), releases it again in the
/// background while it could (see `Candidacy::withdraw`). Dropped half-way (the runtime
/// shut down), it finishes in the background. Abandoning leaves the record to run out,
/// as a crash would.
pub(crate) async fn withdraw<C: AsyncLockBackend + 'static>(
    campaign: &CampaignRun,
    backend: &Arc<C>,
) {
    let Some(mut withdrawal) = campaign.withdrawal() else {
        return;
    };
    let dropped = withdrawal.clone();
    let unfinished = OnDrop::new(|| in_background(backend, dropped));
    release_record(&**backend, &mut withdrawal).await;
    unfinished.disarm();
    if let Some(late) = withdrawal.late {
        release_orphan(Arc::clone(backend), late);
    }
}

/// [`withdraw`] from a campaign task being dropped (its runtime shutting down): the same
/// releases, in the background, finishing even if the runtime goes away first.
pub(crate) fn withdraw_in_background<C: AsyncLockBackend + 'static>(
    campaign: &CampaignRun,
    backend: &Arc<C>,
) {
    if let Some(withdrawal) = campaign.withdrawal() {
        in_background(backend, withdrawal);
    }
}

/// Releases the record of `withdrawal` and then, if any, the heartbeats that may land later
/// (its `late`), on a task that finishes even if the runtime shuts down (both may run
/// twice: a release by owner token that finds nothing changes nothing).
fn in_background<C: AsyncLockBackend + 'static>(backend: &Arc<C>, mut withdrawal: Withdrawal) {
    if withdrawal.record.is_none() && withdrawal.late.is_none() {
        return;
    }
    let backend = Arc::clone(backend);
    rt::spawn_to_completion(move || async move {
        release_record(&*backend, &mut withdrawal).await;
        if let Some(late) = withdrawal.late {
            release_orphan(backend, late);
        }
    });
}

/// Releases the record of `withdrawal`, if any; one that fails transiently is released
/// again in the background with its `late` heartbeats.
async fn release_record<C: AsyncLockBackend>(backend: &C, withdrawal: &mut Withdrawal) {
    let Some(record) = &withdrawal.record else {
        return;
    };
    let answer = backend
        .release(ReleaseRequest::new(record, Duration::ZERO))
        .await;
    if let Err(err) = &answer {
        tracing::debug!(record = %record.key, error = %err, "releasing the membership record failed");
    }
    withdrawal.after_record_release(&answer, Instant::now());
}
