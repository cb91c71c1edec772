//! The probes the electors hold: [`AcquireProbe`] around one acquire call, [`HoldProbe`]
//! around one held lease or term; each opens its span and records its metrics.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures_util::FutureExt;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::error::Error;
use crate::name::LockName;
use crate::spi::lease::Lease;
use crate::spi::outcome::{ExtendOutcome, ReleaseOutcome};
use crate::spi::request::SlotRequest;

use super::record::{self, AcquireEnd, Stopwatch};

/// The span and metrics of one acquire call (its whole wait).
#[derive(Debug)]
pub struct AcquireProbe<'a> {
    span: Span,
    backend: &'static str,
    key: &'a LockName,
    started: Stopwatch,
}

impl<'a> AcquireProbe<'a> {
    /// Opens `leader.acquire` for `request` on `backend`, named by the lock (a group's
    /// own name, whichever slot an attempt starts from).
    pub fn start(backend: &'static str, request: &SlotRequest<'a>) -> Self {
        let key = request.group_name();
        let span = tracing::debug_span!(
            "leader.acquire",
            lock = %key,
            backend,
            node_id = request.request.leader_id,
            outcome = Empty,
            fencing_token = Empty,
        );
        AcquireProbe {
            span,
            backend,
            key,
            started: Stopwatch::start(),
        }
    }

    /// The span, to enter (blocking) or instrument with (async) around the attempts.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// One attempt sent at `sent_at` was answered now.
    pub fn answered(&self, sent_at: Instant) {
        record::acquire_answered(self.backend, self.key.as_str(), Stopwatch::since(sent_at));
    }

    /// The attempts ended as `end`, with `lease` when they won one. The engine's answers
    /// reach this through `finish` (for [`Step`](crate::__private::Step)) and
    /// `finish_batched` (for a batch's answers), written beside those types so this module
    /// needs nothing from the engine.
    pub(crate) fn end(&self, end: AcquireEnd, lease: Option<&Lease>) {
        if let Some(lease) = lease {
            self.span.record("fencing_token", lease.fencing_token);
        }
        self.span.record("outcome", end.as_str());
        record::acquire_finished(self.backend, self.key.as_str(), end, self.started);
    }
}

/// The spans and metrics of one held lease or term, kept by its
/// [`LeaseTracker`](crate::__private::LeaseTracker).
#[derive(Debug)]
pub(crate) struct HoldProbe {
    backend: &'static str,
    held_since: Stopwatch,
    lost_counted: AtomicBool,
}

/// Declares a span named `$name` at `$level` with the fields of a held lease.
macro_rules! lease_span {
    ($level:expr, $name:literal, $backend:expr, $lease:expr) => {
        tracing::span!(
            $level,
            $name,
            lock = %$lease.key,
            backend = $backend,
            node_id = %$lease.leader_id,
            fencing_token = $lease.fencing_token,
            outcome = Empty,
        )
    };
}

impl HoldProbe {
    /// A hold of `lease` on `backend` begins.
    pub(crate) fn start(backend: &'static str, lease: &Lease) -> Self {
        record::hold_started(backend, lease.key.as_str());
        HoldProbe {
            backend,
            held_since: Stopwatch::start(),
            lost_counted: AtomicBool::new(false),
        }
    }

    pub(crate) fn backend(&self) -> &'static str {
        self.backend
    }

    pub(crate) fn run_span(&self, lease: &Lease) -> Span {
        lease_span!(tracing::Level::INFO, "leader.run", self.backend, lease)
    }

    pub(crate) fn term_span(&self, lease: &Lease) -> Span {
        lease_span!(tracing::Level::INFO, "leader.term", self.backend, lease)
    }

    /// Runs a blocking `extend` inside `leader.extend` and records its outcome.
    pub(crate) fn extend(
        &self,
        lease: &Lease,
        call: impl FnOnce() -> Result<ExtendOutcome, Error>,
    ) -> Result<ExtendOutcome, Error> {
        let span = self.extend_span(lease);
        let answer = span.in_scope(call);
        record_extend(&span, &answer);
        answer
    }

    /// The `leader.extend` span of one renewal of `lease`.
    pub(crate) fn extend_span(&self, lease: &Lease) -> Span {
        lease_span!(tracing::Level::DEBUG, "leader.extend", self.backend, lease)
    }

    /// Awaits an async `extend` inside `leader.extend` and records its outcome.
    ///
    /// A combinator, not an `async fn`: an `async fn` keeps its argument and the future it
    /// awaits side by side, so each such layer would add a copy of `call` to the size of
    /// every future built on it.
    pub(crate) fn extend_async<F>(&self, lease: &Lease, call: F) -> impl Future<Output = F::Output>
    where
        F: Future<Output = Result<ExtendOutcome, Error>>,
    {
        let span = self.extend_span(lease);
        call.instrument(span.clone()).map(move |answer| {
            record_extend(&span, &answer);
            answer
        })
    }

    /// Runs a blocking `release` inside `leader.release` and records its outcome.
    pub(crate) fn release(
        &self,
        lease: &Lease,
        call: impl FnOnce() -> Result<ReleaseOutcome, Error>,
    ) -> Result<ReleaseOutcome, Error> {
        let span = lease_span!(tracing::Level::DEBUG, "leader.release", self.backend, lease);
        let answer = span.in_scope(call);
        self.released(&span, lease, &answer);
        answer
    }

    /// Awaits an async `release` inside `leader.release` and records its outcome (a
    /// combinator, as [`extend_async`](Self::extend_async)).
    pub(crate) fn release_async<'a, F>(
        &'a self,
        lease: &'a Lease,
        call: F,
    ) -> impl Future<Output = F::Output> + 'a
    where
        F: Future<Output = Result<ReleaseOutcome, Error>> + 'a,
    {
        let span = lease_span!(tracing::Level::DEBUG, "leader.release", self.backend, lease);
        call.instrument(span.clone()).map(move |answer| {
            self.released(&span, lease, &answer);
            answer
        })
    }

    fn released(&self, span: &Span, lease: &Lease, answer: &Result<ReleaseOutcome, Error>) {
        span.record(
            "outcome",
            answer.as_ref().map_or("error", ReleaseOutcome::as_str),
        );
        if let Ok(ReleaseOutcome::Released) = answer {
            record::released(self.backend, lease.key.as_str());
        }
    }

    /// The lease was lost before its release: counted once per hold.
    pub(crate) fn lost(&self, lease: &Lease) {
        if !self.lost_counted.swap(true, Ordering::AcqRel) {
            record::lease_lost(self.backend, lease.key.as_str());
        }
    }

    /// A campaign term began with this hold.
    pub(crate) fn leadership_gained(&self, lease: &Lease) {
        record::leadership_gained(self.backend, lease.key.as_str());
    }

    /// A campaign term ended for `reason`.
    pub(crate) fn leadership_lost(&self, lease: &Lease, reason: &'static str) {
        record::leadership_lost(self.backend, lease.key.as_str(), reason);
    }

    /// The hold is over (its tracker is dropped).
    pub(crate) fn end(&self, lease: &Lease) {
        record::hold_ended(self.backend, lease.key.as_str(), self.held_since);
    }
}

/// A lease of `key` on `backend` was lost before its action started (see `crate::late`).
pub(crate) fn record_lease_lost(backend: &'static str, key: &str) {
    record::lease_lost(backend, key);
}

/// Records a renewal's answer on its `leader.extend` span.
pub(crate) fn record_extend(span: &Span, answer: &Result<ExtendOutcome, Error>) {
    span.record(
        "outcome",
        answer.as_ref().map_or("error", ExtendOutcome::as_str),
    );
}
