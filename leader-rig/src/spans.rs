//! [`SpanLog`]: a `tracing` subscriber layer that keeps every span and event, for tests of
//! the electors' spans.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span as it was opened and recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedSpan {
    /// The span's name (`leader.acquire`, ...).
    pub name: &'static str,
    /// Every field recorded, by name, as its `Debug`/`Display` text.
    pub fields: BTreeMap<String, String>,
}

/// An event, with the spans it happened in (innermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedEvent {
    /// The event's `message` field.
    pub message: String,
    /// Its other fields, by name, as their `Debug`/`Display` text.
    pub fields: BTreeMap<String, String>,
    /// Indexes into [`SpanLog::spans`] of the spans the event was inside.
    pub scope: Vec<usize>,
}

/// Every span and event seen by the process-wide subscriber [`SpanLog::global`] installs.
#[derive(Debug, Clone, Default)]
pub struct SpanLog {
    inner: Arc<Mutex<Captured>>,
}

#[derive(Debug, Default)]
struct Captured {
    spans: Vec<CapturedSpan>,
    events: Vec<CapturedEvent>,
}

/// The index of a span in [`Captured::spans`], kept in the span's extensions.
struct SpanIndex(usize);

impl SpanLog {
    /// The log of the process-wide subscriber, installed on first use (so spans on every
    /// thread are seen). Tests sharing a process tell their spans apart by lock name.
    ///
    /// # Panics
    ///
    /// If another global subscriber was installed first.
    pub fn global() -> SpanLog {
        static GLOBAL: OnceLock<SpanLog> = OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                let log = SpanLog::default();
                let subscriber = tracing_subscriber::registry().with(log.clone());
                tracing::subscriber::set_global_default(subscriber)
                    .expect("no other global subscriber");
                log
            })
            .clone()
    }

    /// The spans named `name` whose `lock` field is `lock`.
    pub fn spans(&self, name: &str, lock: &str) -> Vec<CapturedSpan> {
        self.inner
            .lock()
            .spans
            .iter()
            .filter(|span| {
                span.name == name && span.fields.get("lock").map(String::as_str) == Some(lock)
            })
            .cloned()
            .collect()
    }

    /// The events whose message is `message`, each with the names and fields of the spans
    /// it happened in (innermost first).
    pub fn events(&self, message: &str) -> Vec<Vec<CapturedSpan>> {
        let captured = self.inner.lock();
        captured
            .events
            .iter()
            .filter(|event| event.message == message)
            .map(|event| {
                event
                    .scope
                    .iter()
                    .map(|&i| captured.spans[i].clone())
                    .collect()
            })
            .collect()
    }
}

impl SpanLog {
    /// Every span and event captured so far, one per line with all its fields: what a log
    /// would hold, for tests that check what never appears in one (a password).
    pub fn text(&self) -> String {
        let captured = self.inner.lock();
        let spans = captured
            .spans
            .iter()
            .map(|span| format!("span {} {:?}", span.name, span.fields));
        let events = captured
            .events
            .iter()
            .map(|event| format!("event {} {:?}", event.message, event.fields));
        spans.chain(events).collect::<Vec<_>>().join("\n")
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S> Layer<S> for SpanLog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let index = {
            let mut captured = self.inner.lock();
            captured.spans.push(CapturedSpan {
                name: attrs.metadata().name(),
                fields,
            });
            captured.spans.len() - 1
        };
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanIndex(index));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(&SpanIndex(index)) = span.extensions().get::<SpanIndex>() else {
            return;
        };
        values.record(&mut Fields(&mut self.inner.lock().spans[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let scope = ctx
            .event_scope(event)
            .into_iter()
            .flatten()
            .filter_map(|span| span.extensions().get::<SpanIndex>().map(|i| i.0))
            .collect();
        self.inner.lock().events.push(CapturedEvent {
            message: fields.remove("message").unwrap_or_default(),
            fields,
            scope,
        });
    }
}
