//! [`ByStanding`]: how the client's calls pick a member. Each call goes to the member in
//! the best standing: first how its last call went, then how many calls it has in flight;
//! members alike take turns.
//!
//! etcd-client's own balancer draws two members at random and weighs every member alike,
//! and that fails one fault badly: a member that stops answering without closing its
//! connection (its process paused, its host frozen or swapping). The kernel keeps a
//! stopped process's connection open, and even accepts new ones for it, so nothing below
//! the call notices: the member goes on taking a third of the calls, and each waits out
//! the whole operation timeout, for as long as the pause lasts.
//!
//! Here a member whose call went wrong is passed over for [`PASS_OVER`] whenever another
//! member is in good standing; its next answer puts it back in good standing. A call goes
//! wrong in one of two ways ([`Lapse`]): the member answered "unavailable" (it has no
//! leader, or its leader just changed), or it gave no answer at all (a broken connection,
//! or a call dropped unanswered: the operation timeout, or its caller giving up). No member
//! is ever refused: when every member is passed over, the call goes to one that answered
//! "unavailable" before one that did not answer, and between two alike, to the one whose
//! time ends first.
//!
//! The trade-off, in numbers: a paused member costs each client one call per
//! [`PASS_OVER`] that waits out its timeout, where the plain balancer cost one in three;
//! a member that comes back gets calls again only after its [`PASS_OVER`] has run out (the
//! others serve meanwhile).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use etcd_client::{BalancedChannelBuilder, Channel};
use futures_util::future::BoxFuture;
use http::{Request, Response, Uri};
use tokio::sync::mpsc;
use tonic::body::Body;
use tonic::transport::channel::Change;
use tonic::transport::{Channel as MemberChannel, Endpoint};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service};

/// How long a member whose call went wrong is passed over while another is in good
/// standing.
const PASS_OVER: Duration = Duration::from_secs(30);

/// Builds the client's channel: [`Members`], which sends each call to the member in the
/// best standing.
pub(crate) struct ByStanding;

impl BalancedChannelBuilder for ByStanding {
    type Error = etcd_client::Error;

    fn balanced_channel(
        self,
        buffer_size: usize,
    ) -> Result<(Channel, mpsc::Sender<Change<Uri, Endpoint>>), Self::Error> {
        let (named, changes) = mpsc::channel(buffer_size.max(1));
        let members = Members {
            shared: Arc::new(Shared {
                changes: Mutex::new(changes),
                members: Mutex::new(Vec::new()),
                turn: AtomicUsize::new(0),
            }),
            chosen: None,
        };
        Ok((Channel::Custom(BoxCloneSyncService::new(members)), named))
    }
}

/// The client's channel: each call goes to the member in the best [`Standing`], equals
/// taking turns. A handle holds the member it chose when it was polled ready, until its
/// call.
struct Members {
    shared: Arc<Shared>,
    chosen: Option<Member>,
}

impl Clone for Members {
    /// A handle of its own, which chooses when it is polled ready (the chosen member's
    /// readiness is this handle's).
    fn clone(&self) -> Self {
        Members {
            shared: Arc::clone(&self.shared),
            chosen: None,
        }
    }
}

/// What every handle shares: the members as the client names them, and whose turn it is
/// among equals.
struct Shared {
    changes: Mutex<mpsc::Receiver<Change<Uri, Endpoint>>>,
    members: Mutex<Vec<(Uri, Member)>>,
    turn: AtomicUsize,
}

impl Shared {
    /// The member in the best standing now, after taking in the members the client named
    /// since the last call (all of them before its first).
    fn choose(&self) -> Option<Member> {
        let mut members = lock(&self.members);
        while let Ok(change) = lock(&self.changes).try_recv() {
            match change {
                Change::Insert(uri, endpoint) => {
                    members.retain(|(named, _)| *named != uri);
                    members.push((uri, Member::new(endpoint.connect_lazy())));
                }
                Change::Remove(uri) => members.retain(|(named, _)| *named != uri),
            }
        }
        let now = Instant::now();
        let first = self.turn.fetch_add(1, Ordering::Relaxed);
        let count = members.len();
        (0..count)
            .filter_map(|i| members.get(first.wrapping_add(i) % count))
            .min_by_key(|(_, member)| member.record.standing(now))
            .map(|(_, member)| member.clone())
    }
}

impl Service<Request<Body>> for Members {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<Body>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if self.chosen.is_none() {
            self.chosen = self.shared.choose();
        }
        let Some(member) = &mut self.chosen else {
            return Poll::Ready(Err(Unrouted::NoMember.into()));
        };
        let ready = member.channel.poll_ready(cx);
        if let Poll::Ready(Err(_)) = ready {
            self.chosen = None;
        }
        ready.map_err(BoxError::from)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let Some(mut member) = self.chosen.take() else {
            return Box::pin(async { Err(Unrouted::NotReady.into()) });
        };
        let call = Call::start(Arc::clone(&member.record));
        let answer = member.channel.call(request);
        Box::pin(async move {
            let result = answer.await;
            call.end(match &result {
                Ok(response) if unavailable(response) => Some(Lapse::Unavailable),
                Ok(_) => None,
                Err(_) => Some(Lapse::NoAnswer),
            });
            result.map_err(BoxError::from)
        })
    }
}

/// A call the channel could not send anywhere.
#[derive(Debug, thiserror::Error)]
enum Unrouted {
    #[error("no etcd member to send the call to")]
    NoMember,
    #[error("a call sent before its channel was ready")]
    NotReady,
}

/// One member: its connection, and its record, shared with its calls in flight.
#[derive(Clone)]
struct Member {
    channel: MemberChannel,
    record: Arc<HolderRecord>,
}

impl Member {
    fn new(channel: MemberChannel) -> Self {
        Member {
            channel,
            record: Arc::new(HolderRecord::default()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing can panic while these locks are held; a poisoned lock holds a plain value.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `response` is gRPC's "unavailable" status, sent without a body (as a member
/// without a leader answers).
fn unavailable(response: &Response<Body>) -> bool {
    response
        .headers()
        .get("grpc-status")
        .is_some_and(|status| status.as_bytes() == b"14")
}

/// How a member's last call went wrong, the lesser first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lapse {
    /// It answered "unavailable": it runs, but could not serve the call.
    Unavailable,
    /// It gave no answer: it may not run at all.
    NoAnswer,
}

/// What the balancer compares, lower first: a member in good standing before one passed
/// over (of those, the lesser [`Lapse`], then the one whose time ends first), then fewer
/// calls in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Standing {
    passed_over: Option<(Lapse, Instant)>,
    in_flight: usize,
}

/// A member's record: its calls in flight, and why and until when it is passed over.
#[derive(Debug, Default)]
struct HolderRecord {
    in_flight: AtomicUsize,
    passed_over: Mutex<Option<(Lapse, Instant)>>,
}

impl HolderRecord {
    fn standing(&self, now: Instant) -> Standing {
        let passed_over = *lock(&self.passed_over);
        Standing {
            passed_over: passed_over.filter(|(_, until)| *until > now),
            in_flight: self.in_flight.load(Ordering::Relaxed),
        }
    }

    /// A call ended at `now`, answered (`None`) or with a lapse.
    fn ended(&self, lapse: Option<Lapse>, now: Instant) {
        *lock(&self.passed_over) = lapse.map(|lapse| (lapse, now + PASS_OVER));
    }
}

/// One call in flight on a member: counted while it lasts; dropped without
/// [`end`](Call::end), it counts as [`Lapse::NoAnswer`].
struct Call {
    record: Arc<HolderRecord>,
    ended: bool,
}

impl Call {
    fn start(record: Arc<HolderRecord>) -> Self {
        record.in_flight.fetch_add(1, Ordering::Relaxed);
        Call {
            record,
            ended: false,
        }
    }

    fn end(mut self, lapse: Option<Lapse>) {
        self.ended = true;
        self.record.ended(lapse, Instant::now());
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.record.in_flight.fetch_sub(1, Ordering::Relaxed);
        if !self.ended {
            self.record.ended(Some(Lapse::NoAnswer), Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn passed_over(lapse: Lapse, until: Instant) -> Standing {
        Standing {
            passed_over: Some((lapse, until)),
            in_flight: 0,
        }
    }

    #[test]
    fn a_call_dropped_unanswered_passes_its_member_over_until_it_answers() {
        let (good, dropped) = (
            Arc::new(HolderRecord::default()),
            Arc::new(HolderRecord::default()),
        );
        Call::start(Arc::clone(&good)).end(None);
        drop(Call::start(Arc::clone(&dropped)));
        let now = Instant::now();
        assert!(good.standing(now) < dropped.standing(now));
        assert!(matches!(
            dropped.standing(now).passed_over,
            Some((Lapse::NoAnswer, _))
        ));
        assert_eq!(dropped.in_flight.load(Ordering::Relaxed), 0);

        Call::start(Arc::clone(&dropped)).end(None);
        assert_eq!(good.standing(now), dropped.standing(now));
    }

    #[test]
    fn a_lapse_passes_over_until_its_time_runs_out() {
        let record = HolderRecord::default();
        let at = Instant::now();
        record.ended(Some(Lapse::Unavailable), at);
        assert_eq!(
            record.standing(at),
            passed_over(Lapse::Unavailable, at + PASS_OVER)
        );
        assert_eq!(record.standing(at + PASS_OVER), Standing::default());
    }

    #[test]
    fn good_standing_comes_first_then_the_lesser_lapse_then_the_earliest_end() {
        let at = Instant::now();
        let busy = Standing {
            passed_over: None,
            in_flight: 50,
        };
        assert!(Standing::default() < busy);
        assert!(busy < passed_over(Lapse::Unavailable, at));
        // A member that answered, even "unavailable", before one that may not run at all,
        // though its time ends later.
        assert!(passed_over(Lapse::Unavailable, at + PASS_OVER) < passed_over(Lapse::NoAnswer, at));
        assert!(passed_over(Lapse::NoAnswer, at) < passed_over(Lapse::NoAnswer, at + PASS_OVER));
    }

    /// Shared state naming `count` members (nothing listens on their ports; nothing
    /// connects until a call), and each member's address.
    fn named(count: u16) -> (Arc<Shared>, mpsc::Sender<Change<Uri, Endpoint>>, Vec<Uri>) {
        let (named, changes) = mpsc::channel(8);
        let uris: Vec<Uri> = (1..=count)
            .map(|port| format!("http://127.0.0.1:{port}").parse().unwrap())
            .collect();
        for uri in &uris {
            named
                .try_send(Change::Insert(uri.clone(), Endpoint::from(uri.clone())))
                .unwrap();
        }
        let shared = Arc::new(Shared {
            changes: Mutex::new(changes),
            members: Mutex::new(Vec::new()),
            turn: AtomicUsize::new(0),
        });
        (shared, named, uris)
    }

    /// The address of the member `shared` chooses now.
    fn chosen(shared: &Shared) -> Uri {
        let member = shared.choose().unwrap();
        let members = lock(&shared.members);
        let (uri, _) = members
            .iter()
            .find(|(_, named)| Arc::ptr_eq(&named.record, &member.record))
            .unwrap();
        uri.clone()
    }

    /// The record of the member at `uri`.
    fn record(shared: &Shared, uri: &Uri) -> Arc<HolderRecord> {
        let members = lock(&shared.members);
        let (_, member) = members.iter().find(|(named, _)| named == uri).unwrap();
        Arc::clone(&member.record)
    }

    #[tokio::test]
    async fn members_alike_take_turns() {
        let (shared, _named, uris) = named(3);
        let first: Vec<Uri> = (0..3).map(|_| chosen(&shared)).collect();
        for uri in &uris {
            assert!(first.contains(uri), "{uri} had no turn: {first:?}");
        }
        assert_eq!(chosen(&shared), first[0]);
    }

    #[tokio::test]
    async fn a_member_passed_over_is_left_alone_while_another_serves() {
        let (shared, _named, uris) = named(3);
        let _ = shared.choose();
        let now = Instant::now();
        record(&shared, &uris[0]).ended(Some(Lapse::NoAnswer), now);
        for _ in 0..6 {
            assert_ne!(chosen(&shared), uris[0]);
        }
        // All passed over: one that answered "unavailable" before one that did not answer.
        record(&shared, &uris[1]).ended(Some(Lapse::NoAnswer), now);
        record(&shared, &uris[2]).ended(Some(Lapse::Unavailable), now);
        assert_eq!(chosen(&shared), uris[2]);
        // The next answer puts a member back in good standing.
        record(&shared, &uris[0]).ended(None, now);
        assert_eq!(chosen(&shared), uris[0]);
    }

    #[tokio::test]
    async fn a_member_removed_gets_no_more_calls() {
        let (shared, named, uris) = named(2);
        let _ = shared.choose();
        named.try_send(Change::Remove(uris[0].clone())).unwrap();
        for _ in 0..4 {
            assert_eq!(chosen(&shared), uris[1]);
        }
    }

    #[tokio::test]
    async fn without_a_member_a_call_fails_instead_of_waiting() {
        let (shared, named, _) = named(0);
        drop(named);
        let mut members = Members {
            shared,
            chosen: None,
        };
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let ready = members.poll_ready(&mut cx);
        assert!(
            matches!(&ready, Poll::Ready(Err(err)) if err.to_string().contains("no etcd member")),
            "{ready:?}"
        );
        assert!(members.call(Request::new(Body::empty())).await.is_err());
    }

    #[test]
    fn only_an_unavailable_status_counts_as_unavailable() {
        let answer = |status: Option<&str>| {
            let mut response = Response::new(Body::empty());
            if let Some(status) = status {
                response
                    .headers_mut()
                    .insert("grpc-status", status.parse().unwrap());
            }
            response
        };
        assert!(unavailable(&answer(Some("14"))));
        for fine in [None, Some("0"), Some("9"), Some("140")] {
            assert!(!unavailable(&answer(fine)), "{fine:?}");
        }
    }
}
