//! [`ByStanding`]: how the client's calls pick a member. Two members drawn at random, the
//! call goes to the one in better standing: first how its last call went, then how many
//! calls it has in flight.
//!
//! etcd-client's own balancer draws the same way but weighs every member alike, and that
//! fails one fault badly: a member that stops answering without closing its connection (its
//! process paused, its host frozen or swapping). The kernel keeps a stopped process's
//! connection open, and even accepts new ones for it, so nothing below the call notices:
//! the member goes on taking a third of the calls, and each waits out the whole operation
//! timeout, for as long as the pause lasts.
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
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use etcd_client::{BalancedChannelBuilder, Channel};
use futures_util::future::BoxFuture;
use http::{Request, Response, Uri};
use tokio::sync::mpsc;
use tonic::body::Body;
use tonic::transport::channel::Change;
use tonic::transport::{Channel as MemberChannel, Endpoint};
use tower::Service;
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::discover::Change as Discovered;
use tower::load::Load;
use tower::util::BoxCloneSyncService;

/// How long a member whose call got no answer is passed over while another is in good
/// standing.
pub(crate) const PASS_OVER: Duration = Duration::from_secs(30);

/// Builds the client's channel: the members, each weighed by its [`Standing`].
pub(crate) struct ByStanding;

impl BalancedChannelBuilder for ByStanding {
    type Error = etcd_client::Error;

    fn balanced_channel(
        self,
        buffer_size: usize,
    ) -> Result<(Channel, mpsc::Sender<Change<Uri, Endpoint>>), Self::Error> {
        let (members, changes) = mpsc::channel(buffer_size.max(1));
        let balance = Balance::new(Members { changes });
        let channel = Buffer::new(balance, buffer_size.max(1));
        Ok((Channel::Custom(BoxCloneSyncService::new(channel)), members))
    }
}

/// The members as the client names them, each made into a [`Member`] as it comes.
struct Members {
    changes: mpsc::Receiver<Change<Uri, Endpoint>>,
}

impl futures_util::Stream for Members {
    type Item = Result<Discovered<Uri, Member>, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Self::Item>> {
        match self.changes.poll_recv(cx) {
            Poll::Ready(Some(Change::Insert(uri, endpoint))) => Poll::Ready(Some(Ok(
                Discovered::Insert(uri, Member::new(endpoint.connect_lazy())),
            ))),
            Poll::Ready(Some(Change::Remove(uri))) => {
                Poll::Ready(Some(Ok(Discovered::Remove(uri))))
            }
            // The client has named every member; the members stay as they are.
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

/// One member: its connection, and its standing, shared with its calls in flight.
#[derive(Clone)]
struct Member {
    channel: MemberChannel,
    record: Arc<Record>,
}

impl Member {
    fn new(channel: MemberChannel) -> Self {
        Member {
            channel,
            record: Arc::new(Record::default()),
        }
    }
}

impl Load for Member {
    type Metric = Standing;

    fn load(&self) -> Standing {
        self.record.standing(Instant::now())
    }
}

impl Service<Request<Body>> for Member {
    type Response = Response<Body>;
    type Error = tonic::transport::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, tonic::transport::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.channel.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let call = Call::start(Arc::clone(&self.record));
        let answer = self.channel.call(request);
        Box::pin(async move {
            let result = answer.await;
            call.end(match &result {
                Ok(response) if unavailable(response) => Some(Lapse::Unavailable),
                Ok(_) => None,
                Err(_) => Some(Lapse::NoAnswer),
            });
            result
        })
    }
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
struct Record {
    in_flight: AtomicUsize,
    passed_over: Mutex<Option<(Lapse, Instant)>>,
}

impl Record {
    fn standing(&self, now: Instant) -> Standing {
        let passed_over = *self.passed_over();
        Standing {
            passed_over: passed_over.filter(|(_, until)| *until > now),
            in_flight: self.in_flight.load(Ordering::Relaxed),
        }
    }

    /// A call ended at `now`, answered (`None`) or with a lapse.
    fn ended(&self, lapse: Option<Lapse>, now: Instant) {
        *self.passed_over() = lapse.map(|lapse| (lapse, now + PASS_OVER));
    }

    fn passed_over(&self) -> std::sync::MutexGuard<'_, Option<(Lapse, Instant)>> {
        // Nothing can panic while the lock is held; a poisoned lock holds a plain value.
        self.passed_over
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One call in flight on a member: counted while it lasts; dropped without
/// [`end`](Call::end), it counts as [`Lapse::NoAnswer`].
struct Call {
    record: Arc<Record>,
    ended: bool,
}

impl Call {
    fn start(record: Arc<Record>) -> Self {
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
        let (good, dropped) = (Arc::new(Record::default()), Arc::new(Record::default()));
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
        let record = Record::default();
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
