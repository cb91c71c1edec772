//! Release notifications, shared by blocking and async waiters.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use event_listener::{Event, EventListener, IntoNotification, Listener};
use parking_lot::Mutex;

/// What one release notification says: which lock was freed and, where the backend's
/// notification carries it, the fencing token of the lease that ended.
///
/// A waiter only needs the wake-up; an observer uses the token to report the release
/// without reading the lock again, when the token is the one of the holder it last saw.
/// Both parts are missing when a backend wakes everyone because it may have missed
/// notifications (after a reconnect, say): then nothing is known but "look again".
///
/// Backends that announce releases in a text message (Redis pub/sub, PostgreSQL
/// `NOTIFY`) share one form, built by [`ReleaseNotice::message`] and read by
/// [`ReleaseNotice::from_message`]: the lock's key, a newline, the token in decimal. Lock
/// names hold no control characters, so the newline cannot be part of the key; a message
/// without one (from an older version of this library) names the key alone.
///
/// # Examples
///
/// ```
/// use leader_core::ReleaseNotice;
///
/// let message = ReleaseNotice::message("nightly", 42);
/// assert_eq!(message, "nightly\n42");
/// let notice = ReleaseNotice::from_message(&message);
/// assert_eq!((notice.key(), notice.fencing_token()), (Some("nightly"), Some(42)));
/// assert_eq!(ReleaseNotice::from_message("nightly").fencing_token(), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReleaseNotice {
    key: Option<Arc<str>>,
    fencing_token: Option<u64>,
}

/// `n` in decimal ASCII digits, written from the last into the end of `digits` (a `u64`
/// has at most 20): the token of a release message, without the formatter.
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &digits[start..];
        }
    }
}

impl ReleaseNotice {
    /// The message announcing that the lease of `key` with `fencing_token` was freed.
    pub fn message(key: &str, fencing_token: u64) -> String {
        // Built at its size, without the formatting machinery `format!` runs for the
        // whole message: a release builds one on every call.
        let mut digits = [0; 20];
        let mut message = String::with_capacity(key.len() + 21);
        message.push_str(key);
        message.push('\n');
        message.extend(
            decimal(fencing_token, &mut digits)
                .iter()
                .map(|&d| char::from(d)),
        );
        message
    }

    /// Writes [`message`](Self::message)'s text into `out`: for a backend that writes the
    /// message straight into the request it sends, with no `String` of its own.
    ///
    /// # Errors
    ///
    /// The error of `out`, if it fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::ReleaseNotice;
    ///
    /// let mut buffer = Vec::new();
    /// ReleaseNotice::write_message(&mut buffer, "nightly", 42)?;
    /// assert_eq!(buffer, ReleaseNotice::message("nightly", 42).as_bytes());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_message(
        out: &mut impl std::io::Write,
        key: &str,
        fencing_token: u64,
    ) -> std::io::Result<()> {
        let mut digits = [0; 20];
        out.write_all(key.as_bytes())?;
        out.write_all(b"\n")?;
        out.write_all(decimal(fencing_token, &mut digits))
    }

    /// Reads a message of [`message`](Self::message)'s form; a message without a token (or
    /// with one that is not a decimal `u64`) names only its key.
    pub fn from_message(message: &str) -> Self {
        match message.split_once('\n') {
            Some((key, token)) => ReleaseNotice {
                key: Some(key.into()),
                fencing_token: token.parse().ok(),
            },
            None => ReleaseNotice {
                key: Some(message.into()),
                fencing_token: None,
            },
        }
    }

    /// The key of the lock released; `None` when the notification wakes every waiter.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The fencing token of the lease that ended, when the backend said.
    pub fn fencing_token(&self) -> Option<u64> {
        self.fencing_token
    }
}

/// A per-key broadcast of "this lock was released", for backends that can tell.
///
/// A waiter calls [`ReleaseEvents::listen`] *before* it tries to acquire, so a release
/// between a failed attempt and the wait is not missed; then it waits on the listener
/// (blocking with [`ReleaseListener::wait_timeout`], or by awaiting it). A notification
/// only means "try again now": the waiter still has to win the acquire. What the
/// notification said (a [`ReleaseNotice`]) comes with it, for observers.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::ReleaseEvents;
///
/// let events = ReleaseEvents::new();
/// let listener = events.listen("job");
/// events.notify_token("job", 7);
/// let notice = listener.wait_notice_timeout(Duration::from_secs(1)).expect("notified");
/// assert_eq!(notice.fencing_token(), Some(7));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReleaseEvents {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    by_key: Mutex<HashMap<String, Arc<Event<ReleaseNotice>>>>,
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
            .or_insert_with(|| Arc::new(Event::with_tag()))
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

    /// `true` while someone listens for a release of `key`: on `key` itself or, when `key`
    /// is slot `i ≥ 1` of a leader group (`job#2`), on its group (`job`) — those a
    /// release of `key` would wake. Cheap when nobody listens.
    ///
    /// A backend whose store can say "someone waits for this lease" tells it with the
    /// attempt or read a waiter makes after listening, so the holder's release announces
    /// itself only then: a release nobody waits for costs nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::ReleaseEvents;
    ///
    /// let events = ReleaseEvents::new();
    /// assert!(!events.is_listened("consumers#2"));
    /// let listener = events.listen("consumers");
    /// assert!(events.is_listened("consumers#2") && events.is_listened("consumers"));
    /// drop(listener);
    /// assert!(!events.is_listened("consumers"));
    /// ```
    pub fn is_listened(&self, key: &str) -> bool {
        if self.shared.listeners.load(Ordering::Acquire) == 0 {
            return false;
        }
        let group = crate::spi::group::group_of_slot(key);
        let by_key = self.shared.by_key.lock();
        by_key.contains_key(key) || group.is_some_and(|group| by_key.contains_key(group))
    }

    /// Wakes every listener of `key` and, when `key` is slot `i ≥ 1` of a leader group
    /// (`job#2`), the listeners of its group (`job`). Cheap when nobody listens. Use
    /// [`notify_token`](Self::notify_token) when the ended lease's token is known.
    pub fn notify(&self, key: &str) {
        self.notify_with(key, None);
    }

    /// As [`notify`](Self::notify), saying the lease that ended had `fencing_token`.
    pub fn notify_token(&self, key: &str, fencing_token: u64) {
        self.notify_with(key, Some(fencing_token));
    }

    /// As [`notify`](Self::notify) for a message of [`ReleaseNotice::message`]'s form.
    pub fn notify_message(&self, message: &str) {
        if self.shared.listeners.load(Ordering::Acquire) == 0 {
            return;
        }
        let notice = ReleaseNotice::from_message(message);
        if let Some(key) = notice.key.clone() {
            self.deliver(&key, notice);
        }
    }

    /// As [`notify_token`](Self::notify_token) when the ended lease's token is known, else
    /// as [`notify`](Self::notify): for a backend whose notification may or may not carry
    /// it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use leader_core::ReleaseEvents;
    ///
    /// let events = ReleaseEvents::new();
    /// let listener = events.listen("job");
    /// events.notify_with("job", None);
    /// let notice = listener.wait_notice_timeout(Duration::from_secs(1)).expect("notified");
    /// assert_eq!((notice.key(), notice.fencing_token()), (Some("job"), None));
    /// ```
    pub fn notify_with(&self, key: &str, fencing_token: Option<u64>) {
        if self.shared.listeners.load(Ordering::Acquire) == 0 {
            return;
        }
        let notice = ReleaseNotice {
            key: Some(key.into()),
            fencing_token,
        };
        self.deliver(key, notice);
    }

    fn deliver(&self, key: &str, notice: ReleaseNotice) {
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
            event.notify(usize::MAX.tag(notice.clone()));
        }
    }

    /// Wakes every listener of every key (for example after a reconnect, when
    /// notifications may have been missed).
    pub fn notify_all(&self) {
        let events: Vec<Arc<Event<ReleaseNotice>>> =
            self.shared.by_key.lock().values().cloned().collect();
        for event in events {
            event.notify(usize::MAX.tag(ReleaseNotice::default()));
        }
    }
}

/// One waiter's interest in the next release of a key.
///
/// Await it (it is a `Future` that resolves to the release's [`ReleaseNotice`]) or block
/// with [`wait_timeout`](ReleaseListener::wait_timeout) or
/// [`wait_notice_timeout`](ReleaseListener::wait_notice_timeout).
#[derive(Debug)]
pub struct ReleaseListener {
    key: String,
    event: Arc<Event<ReleaseNotice>>,
    listener: Option<EventListener<ReleaseNotice>>,
    shared: Arc<Shared>,
}

impl ReleaseListener {
    /// Blocks until the release is notified (`true`) or `timeout` passes (`false`).
    pub fn wait_timeout(self, timeout: Duration) -> bool {
        self.wait_notice_timeout(timeout).is_some()
    }

    /// Blocks until the release is notified (what the notification said) or `timeout`
    /// passes (`None`).
    pub fn wait_notice_timeout(mut self, timeout: Duration) -> Option<ReleaseNotice> {
        match self.listener.take() {
            Some(listener) => listener.wait_timeout(timeout),
            None => Some(ReleaseNotice::default()),
        }
    }
}

impl std::future::Future for ReleaseListener {
    type Output = ReleaseNotice;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<ReleaseNotice> {
        match self.listener.as_mut() {
            Some(listener) => std::pin::Pin::new(listener).poll(cx),
            None => std::task::Poll::Ready(ReleaseNotice::default()),
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
    fn a_message_is_the_key_a_newline_and_the_token_in_decimal() {
        assert_eq!(ReleaseNotice::message("nightly", 42), "nightly\n42");
        assert_eq!(ReleaseNotice::message("", 0), "\n0");
        assert_eq!(
            ReleaseNotice::message("g#1", u64::MAX),
            format!("g#1\n{}", u64::MAX)
        );
        for token in [1, 9, 10, 99, 100, 1_000_000_007, 1 << 53, u64::MAX - 1] {
            assert_eq!(
                ReleaseNotice::message("job", token),
                format!("job\n{token}")
            );
        }
    }

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
        let notice = futures::executor::block_on(listener);
        assert_eq!((notice.key(), notice.fencing_token()), (Some("k"), None));
        thread.join().unwrap();
    }

    #[test]
    fn a_notice_carries_the_key_and_token_a_message_names() {
        let events = ReleaseEvents::new();
        let slot = events.listen("consumers#1");
        let group = events.listen("consumers");
        events.notify_message(&ReleaseNotice::message("consumers#1", 9));
        let expected = ReleaseNotice::from_message("consumers#1\n9");
        assert_eq!(expected.fencing_token(), Some(9));
        assert_eq!(
            slot.wait_notice_timeout(Duration::ZERO),
            Some(expected.clone())
        );
        assert_eq!(group.wait_notice_timeout(Duration::ZERO), Some(expected));
    }

    #[test]
    fn a_wake_for_everyone_says_nothing_and_a_bad_token_is_dropped() {
        let events = ReleaseEvents::new();
        let listener = events.listen("k");
        events.notify_all();
        assert_eq!(
            listener.wait_notice_timeout(Duration::ZERO),
            Some(ReleaseNotice::default())
        );
        let odd = ReleaseNotice::from_message("k\nnot-a-number");
        assert_eq!((odd.key(), odd.fencing_token()), (Some("k"), None));
    }
}
