//! [`LeadershipEvents`]: a campaign's event stream, bounded, for one reader.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::leadership::event::LeadershipEvent;

/// The events of one campaign from the moment of subscribing, for one reader: a
/// [`Stream`], also readable with [`recv`](Self::recv) or, from blocking code,
/// [`recv_blocking`](Self::recv_blocking).
///
/// # When the reader lags
///
/// The stream holds at most [`CAPACITY`](Self::CAPACITY) unread events. The campaign never
/// waits for a reader: when the buffer is full, the **oldest** unread event is dropped to
/// make room, and [`missed`](Self::missed) counts it. Events describe transitions, and the
/// newest ones matter most; a reader that finds `missed()` grown should read the current
/// state from the handle (`is_leader()`, `current_leader()`, `term()`) instead of replaying.
///
/// The stream ends (`None`) after the campaign has stopped and every buffered event was read.
///
/// # Examples
///
/// ```
/// use leader_core::{LeadershipEvent, LeadershipEvents};
/// # fn print_events(events: LeadershipEvents) {
/// while let Some(event) = events.recv_blocking() {
///     match event {
///         LeadershipEvent::Elected { fencing_token } => println!("leading, token {fencing_token}"),
///         LeadershipEvent::Revoked { reason } => println!("stepped down: {reason}"),
///         other => println!("{other:?}"),
///     }
/// }
/// if events.missed() > 0 {
///     println!("{} events dropped while this reader lagged", events.missed());
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct LeadershipEvents {
    // Pinned on the heap: the receiver's `Stream` impl needs a pinned receiver.
    receiver: Pin<Box<async_channel::Receiver<LeadershipEvent>>>,
    missed: Arc<AtomicU64>,
}

/// The campaign's side of one [`LeadershipEvents`] stream.
#[derive(Debug)]
pub(crate) struct EventSender {
    sender: async_channel::Sender<LeadershipEvent>,
    missed: Arc<AtomicU64>,
}

impl LeadershipEvents {
    /// How many unread events a stream holds before it drops the oldest.
    pub const CAPACITY: usize = 64;

    pub(crate) fn channel() -> (EventSender, LeadershipEvents) {
        let (sender, receiver) = async_channel::bounded(Self::CAPACITY);
        let missed = Arc::new(AtomicU64::new(0));
        let events = LeadershipEvents {
            receiver: Box::pin(receiver),
            missed: Arc::clone(&missed),
        };
        (EventSender { sender, missed }, events)
    }

    /// The next event; `None` once the campaign has stopped and the buffer is empty.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an event is taken from the buffer only when the future completes.
    pub async fn recv(&self) -> Option<LeadershipEvent> {
        self.receiver.recv().await.ok()
    }

    /// The next event, blocking the thread; `None` once the campaign has stopped and the
    /// buffer is empty. Do not call it on an async runtime's thread.
    pub fn recv_blocking(&self) -> Option<LeadershipEvent> {
        self.receiver.recv_blocking().ok()
    }

    /// The next buffered event, if there is one now.
    pub fn try_recv(&self) -> Option<LeadershipEvent> {
        self.receiver.try_recv().ok()
    }

    /// How many events were dropped because this reader lagged (see the type's docs).
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }
}

impl Stream for LeadershipEvents {
    type Item = LeadershipEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.as_mut().poll_next(cx)
    }
}

impl EventSender {
    /// Sends `event` without waiting, dropping the oldest unread one when the buffer is
    /// full. `false` once the reader is gone.
    pub(crate) fn send(&self, event: LeadershipEvent) -> bool {
        match self.sender.force_send(event) {
            Ok(None) => true,
            Ok(Some(_dropped)) => {
                self.missed.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(_closed) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(n: usize) -> LeadershipEvent {
        LeadershipEvent::LeaderChanged {
            leader_id: Some(n.to_string()),
        }
    }

    #[test]
    fn a_lagging_reader_keeps_the_newest_events_and_counts_the_dropped_ones() {
        let (sender, events) = LeadershipEvents::channel();
        for n in 0..LeadershipEvents::CAPACITY + 3 {
            assert!(sender.send(changed(n)));
        }
        assert_eq!(events.missed(), 3);
        let first = events.try_recv();
        assert!(
            matches!(&first, Some(LeadershipEvent::LeaderChanged { leader_id: Some(id) }) if id == "3"),
            "{first:?}"
        );
        let mut rest = 1;
        while events.try_recv().is_some() {
            rest += 1;
        }
        assert_eq!(rest, LeadershipEvents::CAPACITY);
    }

    #[test]
    fn the_stream_ends_after_the_campaign_side_is_gone_and_the_buffer_is_read() {
        let (sender, events) = LeadershipEvents::channel();
        assert!(sender.send(changed(1)));
        drop(sender);
        assert!(events.recv_blocking().is_some());
        assert!(events.recv_blocking().is_none());
    }

    #[test]
    fn sending_to_a_dropped_reader_reports_it_gone() {
        let (sender, events) = LeadershipEvents::channel();
        drop(events);
        assert!(!sender.send(changed(1)));
    }
}
