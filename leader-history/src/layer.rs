//! [`TraceLayer`]: a `tracing` layer that writes the `leader` electors' spans as a
//! JSON-lines history this crate's checker reads (feature `tracing`).

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event as TracingEvent, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::event::{Answer, Clock, Event, What};

/// A [`tracing_subscriber`] layer that writes what the `leader` electors do as a history
/// ([the trace format](crate#the-trace-format)), one JSON line per event, to a writer of
/// yours: each acquire call and its answer, each action (`run_if_leader`'s `leader.run`
/// span, a campaign's `leader.term`) from its start to its end, renewals, releases and
/// the loss of a lease. Check the file with [`check_trace`](crate::check_trace).
///
/// It reads the electors' spans and `warn` events (their names and fields are listed in
/// `leader-core`'s crate docs, `# Tracing`), so the subscriber must let them through:
/// `debug` for `leader_core` (the acquire, renewal and release spans are at `debug`).
///
/// - **Nodes** are the spans' `node_id`s, numbered in the order met; each number's
///   first event is a `node-started` naming it. **Locks** are the spans' `lock` keys,
///   numbered the same way, each announced by a `lock-named` event.
/// - Times are this machine's wall clock (`"clock":"wall"`), in µs: traces of several
///   machines are comparable only as far as their clocks agree.
/// - A section ends at the lease's loss (`lease-lost`, when the elector learnt it and told
///   the action to stop), else at the action's return. An action that went on writing
///   after its loss is the fenced resource's to refuse: log its writes as
///   `write-accepted`/`write-rejected` events of your own to have them checked.
/// - A lock guard's hold is not an action the layer can see (your code holds the guard);
///   log `action-started`/`action-ended` yourself around such work if you want it checked.
/// - Deadlines are not in the spans, so the deadline rules judge nothing in such a
///   trace; every other rule does.
///
/// # Examples
///
/// ```
/// use leader_history::{Settings, TraceLayer, check_trace};
/// use tracing_subscriber::prelude::*;
///
/// let layer = TraceLayer::new(Vec::new());
/// let trace = layer.handle();
/// let subscriber = tracing_subscriber::registry().with(layer);
/// tracing::subscriber::with_default(subscriber, || {
///     // Run the electors here; this span is one a `run_if_leader` action opens.
///     let span = tracing::info_span!(
///         "leader.run",
///         lock = "nightly",
///         backend = "memory",
///         node_id = "web-1",
///         fencing_token = 7u64,
///     );
///     span.in_scope(|| {});
/// });
/// let lines = trace.take_output()?;
/// let report = check_trace(&lines[..], Settings::default())?;
/// assert_eq!(report.acquisitions, 1);
/// assert!(report.passed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TraceLayer<W> {
    shared: Arc<Mutex<State<W>>>,
}

/// A handle on a [`TraceLayer`]'s writer, kept by the caller after the layer moved into
/// its subscriber.
pub struct TraceHandle<W> {
    shared: Arc<Mutex<State<W>>>,
}

struct State<W> {
    writer: W,
    /// The first write error; nothing is written after it.
    failed: Option<io::Error>,
    nodes: HashMap<String, u32>,
    locks: HashMap<String, u32>,
    /// The sections open now: (node, lock, token).
    open: Vec<(u32, u32, u64)>,
}

impl<W> fmt::Debug for TraceLayer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceLayer").finish_non_exhaustive()
    }
}

impl<W> fmt::Debug for TraceHandle<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceHandle").finish_non_exhaustive()
    }
}

impl<W: Write> TraceLayer<W> {
    /// A layer writing to `writer` (wrap a file in a `BufWriter`, and
    /// [`flush`](TraceHandle::flush) it through the [`handle`](Self::handle) at the end).
    pub fn new(writer: W) -> Self {
        TraceLayer {
            shared: Arc::new(Mutex::new(State {
                writer,
                failed: None,
                nodes: HashMap::new(),
                locks: HashMap::new(),
                open: Vec::new(),
            })),
        }
    }

    /// A handle to flush the writer and see whether a write failed.
    pub fn handle(&self) -> TraceHandle<W> {
        TraceHandle {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<W: Write> TraceHandle<W> {
    /// Flushes the writer.
    ///
    /// # Errors
    ///
    /// The first write error the layer met (after it, it wrote nothing more), else the
    /// flush's own.
    pub fn flush(&self) -> io::Result<()> {
        let mut state = lock(&self.shared);
        if let Some(err) = state.failed.take() {
            return Err(err);
        }
        state.writer.flush()
    }
}

impl TraceHandle<Vec<u8>> {
    /// The lines written so far, taken out of an in-memory writer.
    ///
    /// # Errors
    ///
    /// The first write error the layer met.
    pub fn take_output(&self) -> io::Result<Vec<u8>> {
        let mut state = lock(&self.shared);
        if let Some(err) = state.failed.take() {
            return Err(err);
        }
        Ok(std::mem::take(&mut state.writer))
    }
}

/// The state, even if a writer panicked while holding it (the lines are whole or absent).
fn lock<W>(shared: &Mutex<State<W>>) -> MutexGuard<'_, State<W>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which of the electors' spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Acquire,
    Action,
    Extend,
    Release,
}

impl Kind {
    fn of(name: &str) -> Option<Self> {
        match name {
            "leader.acquire" => Some(Kind::Acquire),
            "leader.run" | "leader.term" => Some(Kind::Action),
            "leader.extend" => Some(Kind::Extend),
            "leader.release" => Some(Kind::Release),
            _ => None,
        }
    }
}

/// What the layer keeps of one of the electors' spans.
#[derive(Debug, Default)]
struct Fields {
    lock: Option<String>,
    node: Option<String>,
    token: Option<u64>,
    outcome: Option<String>,
    message: Option<String>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "fencing_token" {
            self.token = Some(value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "lock" => &mut self.lock,
            "node_id" | "node" => &mut self.node,
            "outcome" => &mut self.outcome,
            "message" => &mut self.message,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields (`lock = %key`) and the message arrive here.
        if matches!(
            field.name(),
            "lock" | "node_id" | "node" | "outcome" | "message"
        ) {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

/// One of the electors' spans: its kind, its fields, when it opened.
#[derive(Debug)]
struct SpanFacts {
    kind: Kind,
    fields: Fields,
    opened: u64,
}

/// Now, on the wall clock, µs since the epoch.
fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl<W: Write> State<W> {
    fn emit(&mut self, at: u64, node: Option<u32>, what: What) {
        if self.failed.is_some() {
            return;
        }
        let event = Event {
            at,
            clock: Clock::Wall,
            node,
            what,
        };
        let written = serde_json::to_vec(&event)
            .map_err(io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                self.writer.write_all(&line)
            });
        if let Err(err) = written {
            self.failed = Some(err);
        }
    }

    /// The number of node `name`, announcing a new one.
    fn node(&mut self, at: u64, name: &str) -> u32 {
        if let Some(&n) = self.nodes.get(name) {
            return n;
        }
        let n = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes.insert(name.to_owned(), n);
        self.emit(
            at,
            Some(n),
            What::NodeStarted {
                pid: None,
                name: Some(name.to_owned()),
            },
        );
        n
    }

    /// The number of lock `name`, announcing a new one.
    fn lock(&mut self, at: u64, name: &str) -> u32 {
        if let Some(&n) = self.locks.get(name) {
            return n;
        }
        let n = u32::try_from(self.locks.len()).unwrap_or(u32::MAX);
        self.locks.insert(name.to_owned(), n);
        self.emit(
            at,
            None,
            What::LockNamed {
                lock: n,
                name: name.to_owned(),
            },
        );
        n
    }

    /// The node and lock numbers of a span's fields (announcing new ones), if it has both.
    fn ids(&mut self, at: u64, fields: &Fields) -> Option<(u32, u32)> {
        let (node, lock) = (fields.node.as_deref()?, fields.lock.as_deref()?);
        Some((self.node(at, node), self.lock(at, lock)))
    }

    fn opened(&mut self, at: u64, facts: &SpanFacts) {
        let Some((node, lock)) = self.ids(at, &facts.fields) else {
            return;
        };
        match facts.kind {
            Kind::Acquire => self.emit(at, Some(node), What::AcquireRequested { lock }),
            Kind::Action => {
                let Some(token) = facts.fields.token else {
                    return;
                };
                self.open.push((node, lock, token));
                self.emit(
                    at,
                    Some(node),
                    What::ActionStarted {
                        lock,
                        token,
                        requested: None,
                        left_us: None,
                        deadline: None,
                        role: None,
                    },
                );
            }
            Kind::Extend | Kind::Release => {}
        }
    }

    fn closed(&mut self, at: u64, facts: &SpanFacts) {
        let Some((node, lock)) = self.ids(at, &facts.fields) else {
            return;
        };
        let token = facts.fields.token;
        let outcome = facts.fields.outcome.as_deref();
        let what = match (facts.kind, outcome, token) {
            (Kind::Acquire, Some(outcome), _) => {
                let answer = match (outcome, token) {
                    ("acquired", Some(token)) => Answer::Lease { token },
                    ("skipped", _) => Answer::Refused,
                    _ => Answer::Indeterminate { message: None },
                };
                What::AcquireAnswered {
                    lock,
                    requested: facts.opened,
                    answer,
                }
            }
            (Kind::Action, _, Some(token)) => {
                let Some(i) = self.open.iter().position(|o| *o == (node, lock, token)) else {
                    // Its loss ended it already.
                    return;
                };
                self.open.swap_remove(i);
                What::ActionEnded { lock, token }
            }
            (Kind::Extend, Some("extended"), Some(token)) => What::Renewed {
                lock,
                token,
                requested: Some(facts.opened),
                deadline: None,
            },
            (Kind::Release, Some("released"), Some(token)) => What::Released { lock, token },
            _ => return,
        };
        self.emit(at, Some(node), what);
    }

    /// A warning that a lease was lost: the open sections it ends, of `lock` (and
    /// `token`) if it names them, of `node` if it came in one of that node's spans.
    fn lost(&mut self, at: u64, lock: Option<&str>, token: Option<u64>, node: Option<&str>) {
        let lock = match lock {
            Some(name) => match self.locks.get(name) {
                Some(&n) => Some(n),
                None => return,
            },
            None => None,
        };
        let node = match node {
            Some(name) => match self.nodes.get(name) {
                Some(&n) => Some(n),
                None => return,
            },
            None => None,
        };
        if lock.is_none() && node.is_none() {
            return;
        }
        let ends = |&(n, l, t): &(u32, u32, u64)| {
            lock.is_none_or(|x| x == l)
                && node.is_none_or(|x| x == n)
                && token.is_none_or(|x| x == t)
        };
        // A loss found as the action returns comes inside its run's span, before the
        // span closes: the section is still open.
        let ended: Vec<(u32, u32, u64)> = self.open.iter().copied().filter(ends).collect();
        self.open.retain(|o| !ends(o));
        for (node, lock, token) in ended {
            self.emit(at, Some(node), What::LeaseLost { lock, token });
        }
    }
}

impl<S, W> Layer<S> for TraceLayer<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: Write + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = Kind::of(attrs.metadata().name()) else {
            return;
        };
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let facts = SpanFacts {
            kind,
            fields,
            opened: now_us(),
        };
        lock(&self.shared).opened(facts.opened, &facts);
        span.extensions_mut().insert(facts);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(facts) = span.extensions_mut().get_mut::<SpanFacts>()
        {
            values.record(&mut facts.fields);
        }
    }

    fn on_event(&self, event: &TracingEvent<'_>, ctx: Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::WARN {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(message) = fields.message.as_deref() else {
            return;
        };
        // The node of the elector's span the warning came in, if any.
        let in_node = ctx.event_scope(event).and_then(|scope| {
            scope
                .into_iter()
                .find_map(|span| span.extensions().get::<SpanFacts>()?.fields.node.clone())
        });
        let at = now_us();
        let mut state = lock(&self.shared);
        if message.starts_with("lease lost:")
            || message.starts_with("the action returned after its lease was lost")
        {
            // The tracker's: a renewal found the lease gone, failed, came too late, or
            // the action returned past the deadline (the loss is stamped when it was
            // seen, which may be after it happened: the section is the longer for it).
            state.lost(at, fields.lock.as_deref(), fields.token, in_node.as_deref());
        } else if message.starts_with("leadership revoked") {
            let node = fields.node.or(in_node);
            state.lost(at, None, None, node.as_deref());
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(facts) = span.extensions_mut().remove::<SpanFacts>()
        {
            lock(&self.shared).closed(now_us(), &facts);
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::prelude::*;

    use super::*;
    use crate::event::What;

    /// The events `body` makes the layer write.
    fn traced(body: impl FnOnce()) -> Vec<What> {
        let layer = TraceLayer::new(Vec::new());
        let handle = layer.handle();
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), body);
        let lines = handle.take_output().unwrap();
        lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<Event>(l).unwrap().what)
            .collect()
    }

    fn term(node: &str, token: u64) -> tracing::Span {
        tracing::info_span!(
            "leader.term",
            lock = "stream",
            backend = "memory",
            node_id = node,
            fencing_token = token,
            outcome = tracing::field::Empty,
        )
    }

    #[test]
    fn a_revoked_term_ends_with_its_loss_and_only_its_nodes() {
        let whats = traced(|| {
            let a = term("a", 3);
            let b = term("b", 4);
            tracing::warn!(node = "a", reason = "lost", "leadership revoked");
            drop((a, b));
        });
        let ends: Vec<&What> = whats
            .iter()
            .filter(|w| matches!(w, What::LeaseLost { .. } | What::ActionEnded { .. }))
            .collect();
        assert_eq!(
            ends,
            [
                &What::LeaseLost { lock: 0, token: 3 },
                &What::ActionEnded { lock: 0, token: 4 }
            ]
        );
    }

    #[test]
    fn acquire_renew_and_release_spans_become_their_events() {
        let whats = traced(|| {
            let acquire = tracing::debug_span!(
                "leader.acquire",
                lock = "nightly",
                backend = "memory",
                node_id = "a",
                outcome = tracing::field::Empty,
                fencing_token = tracing::field::Empty,
            );
            acquire.record("fencing_token", 9u64);
            acquire.record("outcome", "acquired");
            drop(acquire);
            for (name, outcome) in [
                ("leader.extend", "extended"),
                ("leader.release", "released"),
            ] {
                let span = match name {
                    "leader.extend" => tracing::debug_span!(
                        "leader.extend",
                        lock = "nightly",
                        node_id = "a",
                        fencing_token = 9u64,
                        outcome = tracing::field::Empty,
                    ),
                    _ => tracing::debug_span!(
                        "leader.release",
                        lock = "nightly",
                        node_id = "a",
                        fencing_token = 9u64,
                        outcome = tracing::field::Empty,
                    ),
                };
                span.record("outcome", outcome);
            }
            // A lease lost before its action started ends nothing.
            tracing::warn!(
                lock = "nightly",
                fencing_token = 9u64,
                "lease lost before the action started: its deadline passed first; releasing it"
            );
        });
        let kinds: Vec<&str> = whats
            .iter()
            .map(|w| match w {
                What::NodeStarted { .. } => "node-started",
                What::LockNamed { .. } => "lock-named",
                What::AcquireRequested { .. } => "acquire-requested",
                What::AcquireAnswered { .. } => "acquire-answered",
                What::Renewed { .. } => "renewed",
                What::Released { .. } => "released",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "node-started",
                "lock-named",
                "acquire-requested",
                "acquire-answered",
                "renewed",
                "released"
            ]
        );
        assert!(matches!(
            whats[3],
            What::AcquireAnswered {
                answer: Answer::Lease { token: 9 },
                ..
            }
        ));
    }

    #[test]
    fn a_failed_writer_stops_the_trace_and_says_so() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let layer = TraceLayer::new(Broken);
        let handle = layer.handle();
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
            drop(term("a", 1));
        });
        let err = handle.flush().unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert!(handle.flush().is_ok(), "the error is reported once");
    }
}
