//! A ranked campaign's I/O about its candidacy: heartbeats of its membership record, the
//! survey of the other candidates (a leader's runs on a thread beside its renewals), and
//! the withdrawal of the record when it resigns. The decisions are leader-core's
//! (`Candidacy`, `TermCheck`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use event_listener::Listener;
use leader_core::__private::{CampaignRun, Candidacy, LeadershipState, Standing};
use leader_core::{LockBackend, ReleaseRequest};

use crate::orphan::release_orphan;

/// How often a leader waiting for its survey checks whether it was asked to stop.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// A leader's survey on its way: its thread sends the standing when it has it.
pub(crate) type Pending = Receiver<Standing>;

/// A ranked campaign's look at the candidates: renews its membership record when due,
/// then, when `list`, lists the live ones (see [`Standing`]).
pub(crate) fn survey<C: LockBackend>(candidacy: &Candidacy, backend: &C, list: bool) -> Standing {
    let sent_at = Instant::now();
    if let Some(request) = candidacy.begin_heartbeat(sent_at) {
        candidacy.after_heartbeat(backend.try_acquire(request), sent_at);
    }
    let mut survey = candidacy.survey();
    while let Some(request) = survey.next_request().filter(|_| list) {
        survey.read(backend.list(&request));
    }
    survey.standing()
}

/// Starts a ranked leader's survey on a thread of its own, so that neither a slow listing
/// nor a hanging heartbeat holds up the renewals that keep the term (see `TermCheck`). It
/// lists the others only when a higher rank could preempt the leader. `None` for an
/// unranked campaign, or when no thread could be started (the term goes on; the next
/// renewal tries again).
pub(crate) fn start<C: LockBackend + 'static>(
    campaign: &CampaignRun,
    backend: &Arc<C>,
) -> Option<Pending> {
    let candidacy = Arc::clone(campaign.candidacy()?);
    let backend = Arc::clone(backend);
    let (answer, answers) = crossbeam_channel::bounded(1);
    let span = tracing::Span::current();
    let spawned = std::thread::Builder::new()
        .name("leader-survey".into())
        .spawn(move || {
            let standing = span.in_scope(|| {
                let list = candidacy.preempts();
                survey(&candidacy, &*backend, list)
            });
            // The receiver is gone when the term ended meanwhile: the answer is moot.
            let _ = answer.send(standing);
        });
    match spawned {
        Ok(_) => Some(answers),
        Err(err) => {
            tracing::warn!(error = %err, "could not start a survey thread; the term goes on");
            None
        }
    }
}

/// Waits until `until` (the next renewal), a stop request, or the answer of the survey on
/// its way, whichever comes first; returns that answer if it came. A survey still on its
/// way at `until` stays pending, to be waited for after the renewal.
pub(crate) fn wait_for_renewal(
    state: &LeadershipState,
    until: Instant,
    pending: &mut Option<Pending>,
) -> Option<Standing> {
    loop {
        let stop = state.stop_listener();
        if state.stop_requested() {
            return None;
        }
        let left = until.saturating_duration_since(Instant::now());
        let Some(answers) = pending.as_ref() else {
            stop.wait_timeout(left);
            return None;
        };
        match answers.recv_timeout(left.min(STOP_CHECK)) {
            Ok(standing) => {
                *pending = None;
                return Some(standing);
            }
            // The thread ended without an answer (it panicked): no verdict.
            Err(RecvTimeoutError::Disconnected) => *pending = None,
            Err(RecvTimeoutError::Timeout) if left <= STOP_CHECK => return None,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Releases a ranked campaign's membership record when it resigns — before the lock, so
/// the standby that the lock's release wakes no longer sees it — and, when a heartbeat may
/// still land after that release, releases it again in the background while it could
/// (see `Candidacy::withdraw`). Abandoning leaves the record to run out, as a crash would.
pub(crate) fn withdraw<C: LockBackend + 'static>(campaign: &CampaignRun, backend: &Arc<C>) {
    let Some(mut withdrawal) = campaign.withdrawal() else {
        return;
    };
    if let Some(record) = &withdrawal.record {
        let answer = backend.release(ReleaseRequest::new(record, Duration::ZERO));
        if let Err(err) = &answer {
            tracing::debug!(record = %record.key, error = %err, "releasing the membership record failed");
        }
        withdrawal.after_record_release(&answer, Instant::now());
    }
    if let Some(late) = withdrawal.late {
        release_orphan(Arc::clone(backend), late);
    }
}
