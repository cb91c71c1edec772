//! Release notifications, shared by blocking and async waiters.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use event_listener::{Event, EventListener, Listener};
use parking_lot::Mutex;

/// A per-key broadcast of "this lock was released", for backends that can tell.
///
/// A waiter calls [`ReleaseEvents::listen`] *before* it tries to acquire, so a release
/// between a failed attempt and the wait is not missed; then it waits on the listener
/// (blocking with [`ReleaseListener::wait_timeout`], or by awaiting it). A notification
/// only means "try again now": the waiter still has to win the acquire.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::ReleaseEvents;
///
/// let events = ReleaseEvents::new();
/// let listener = events.listen("job");
/// events.notify("job");
/// assert!(listener.wait_timeout(Duration::from_secs(1)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReleaseEvents {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    by_key: Mutex<HashMap<String, Arc<Event>>>,
    listeners: AtomicUsize,
}

impl ReleaseEvents {
    /// An empty notifier.
    pub fn new() -> Self {
        ReleaseEvents::default()
    }

    /// Starts listening for the next release of `key`.
    pub fn listen(&self, key: &str) -> ReleaseListener {
        let mut by_key = self.shared.by_key.lock();
        let event = by_key
            .entry(key.to_owned())
            .or_insert_with(|| Arc::new(Event::new()))
            .clone();
        let listener = event.listen();
        self.shared.listeners.fetch_add(1, Ordering::AcqRel);
        ReleaseListener {
            key: key.to_owned(),
            event,
            listener: Some(listener),
            shared: Arc::clone(&self.shared),
        }
    }

    /// Wakes every listener of `key` and, when `key` is slot `i ≥ 1` of a leader group
    /// (`job#2`), the listeners of its group (`job`). Cheap when nobody listens.
    pub fn notify(&self, key: &str) {
        if self.shared.listeners.load(Ordering::Acquire) == 0 {
            return;
        }
        // A slot of a leader group (`job#2`) also wakes those waiting for any slot of the
        // group, who listen on the group's name (`job`).
        let group = crate::spi::group::group_of_slot(key);
        let (own, of_group) = {
            let by_key = self.shared.by_key.lock();
            (
                by_key.get(key).cloned(),
                group.and_then(|group| by_key.get(group).cloned()),
            )
        };
        for event in [own, of_group].into_iter().flatten() {
            event.notify(usize::MAX);
        }
    }

    /// Wakes every listener of every key (for example after a reconnect, when
    /// notifications may have been missed).
    pub fn notify_all(&self) {
        let events: Vec<Arc<Event>> = self.shared.by_key.lock().values().cloned().collect();
        for event in events {
            event.notify(usize::MAX);
        }
    }
}

/// One waiter's interest in the next release of a key.
///
/// Await it (it is a `Future` that resolves on the release) or block with
/// [`wait_timeout`](ReleaseListener::wait_timeout).
#[derive(Debug)]
pub struct ReleaseListener {
    key: String,
    event: Arc<Event>,
    listener: Option<EventListener>,
    shared: Arc<Shared>,
}

impl ReleaseListener {
    /// Blocks until the release is notified (`true`) or `timeout` passes (`false`).
    pub fn wait_timeout(mut self, timeout: Duration) -> bool {
        match self.listener.take() {
            Some(listener) => listener.wait_timeout(timeout).is_some(),
            None => true,
        }
    }
}

impl std::future::Future for ReleaseListener {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        match self.listener.as_mut() {
            Some(listener) => std::pin::Pin::new(listener).poll(cx),
            None => std::task::Poll::Ready(()),
        }
    }
}

impl Drop for ReleaseListener {
    fn drop(&mut self) {
        self.listener = None;
        self.shared.listeners.fetch_sub(1, Ordering::AcqRel);
        let mut by_key = self.shared.by_key.lock();
        // The map's reference and ours: nobody else listens, so forget the key.
        if Arc::strong_count(&self.event) == 2 {
            by_key.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifies_only_the_released_key_and_forgets_idle_keys() {
        let events = ReleaseEvents::new();
        let a = events.listen("a");
        let b = events.listen("b");
        events.notify("a");
        assert!(a.wait_timeout(Duration::from_secs(1)));
        assert!(!b.wait_timeout(Duration::from_millis(10)));
        assert!(events.shared.by_key.lock().is_empty());
        assert_eq!(events.shared.listeners.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_released_group_slot_wakes_the_waiters_of_its_group() {
        let events = ReleaseEvents::new();
        let group = events.listen("consumers");
        let other = events.listen("consumers#2");
        events.notify("consumers#1");
        assert!(group.wait_timeout(Duration::from_secs(1)));
        assert!(!other.wait_timeout(Duration::from_millis(10)));
    }

    #[test]
    fn a_listener_can_be_awaited() {
        let events = ReleaseEvents::new();
        let listener = events.listen("k");
        let notifier = events.clone();
        let thread = std::thread::spawn(move || notifier.notify("k"));
        futures::executor::block_on(listener);
        thread.join().unwrap();
    }
}
