//! The one release subscription per backend: a background thread with a dedicated
//! pub/sub connection that turns each published release into
//! [`ReleaseEvents::notify`], so waiting electors retry at once.
//!
//! It reconnects with exponential backoff and jitter (trying the cluster's nodes in
//! turn; behind sentinels, the master they name at that moment — a replica receives every
//! `PUBLISH` of its master too, so a subscription that lands on one still hears releases)
//! and calls [`ReleaseEvents::notify_all`] after every (re)subscription, since
//! releases may have been missed meanwhile. While it is down, electors fall back to
//! polling. It stops shortly after the backend is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use leader_core::ReleaseEvents;
use rand::Rng;
use redis::{Client, RedisResult};

use crate::clients::Subscription;

/// How often the thread looks at its stop flag while no message arrives.
const POLL: Duration = Duration::from_millis(100);
/// A `PING` after this long without traffic detects a silently dead connection.
const KEEPALIVE: Duration = Duration::from_secs(5);
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Handle of the subscription thread; dropping it stops the thread.
#[derive(Debug)]
pub(crate) struct Listener {
    stop: Arc<AtomicBool>,
    subscribed: Arc<AtomicBool>,
}

/// What the thread needs.
struct Session {
    nodes: Subscription,
    channel: String,
    events: ReleaseEvents,
    connect_timeout: Duration,
    response_timeout: Duration,
    stop: Arc<AtomicBool>,
    subscribed: Arc<AtomicBool>,
}

impl Listener {
    /// Starts the subscription thread.
    pub(crate) fn spawn(
        nodes: Subscription,
        channel: String,
        events: ReleaseEvents,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let subscribed = Arc::new(AtomicBool::new(false));
        let session = Session {
            nodes,
            channel,
            events,
            connect_timeout,
            response_timeout,
            stop: Arc::clone(&stop),
            subscribed: Arc::clone(&subscribed),
        };
        thread::Builder::new()
            .name("leader-redis-pubsub".to_owned())
            .spawn(move || {
                // Process signals go to the user's threads; this one only listens.
                crate::signals::block_for_this_thread();
                session.run()
            })?;
        Ok(Listener { stop, subscribed })
    }

    /// Whether the subscription is up right now.
    pub(crate) fn is_subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Acquire)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

impl Session {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn run(self) {
        let mut backoff = BACKOFF_MIN;
        let mut node = 0usize;
        while !self.stopped() {
            let client = match &self.nodes {
                Subscription::Nodes(clients) => match clients.get(node % clients.len().max(1)) {
                    Some(client) => Ok((client.clone(), None)),
                    None => return,
                },
                Subscription::Sentinel(target) => target
                    .master()
                    .map(|master| (master.client, Some(master.generation))),
            };
            let listened = client.and_then(|(client, generation)| {
                let listened = self.listen(&client, &mut backoff);
                if let (Err(err), Some(generation), Subscription::Sentinel(target)) =
                    (&listened, generation, &self.nodes)
                    && crate::sentinel::may_have_failed_over(err)
                {
                    target.forget(generation);
                }
                listened
            });
            if let Err(err) = listened {
                tracing::debug!(channel = %self.channel, error = %err, "release subscription lost");
            }
            self.subscribed.store(false, Ordering::Release);
            node = node.wrapping_add(1);
            let delay = rand::rng().random_range(backoff / 2..=backoff);
            self.sleep(delay);
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Subscribes and forwards messages until the connection fails or the backend is gone.
    fn listen(&self, client: &Client, backoff: &mut Duration) -> RedisResult<()> {
        let mut conn = client.get_connection_with_timeout(self.connect_timeout)?;
        conn.set_write_timeout(Some(self.response_timeout))?;
        conn.set_read_timeout(Some(self.response_timeout))?;
        let mut pubsub = conn.as_pubsub();
        pubsub.subscribe(&self.channel)?;
        pubsub.set_read_timeout(Some(POLL))?;
        self.subscribed.store(true, Ordering::Release);
        *backoff = BACKOFF_MIN;
        tracing::debug!(channel = %self.channel, "release subscription up");
        // Releases published while we were not subscribed were missed: wake every waiter.
        self.events.notify_all();
        let mut last_traffic = Instant::now();
        while !self.stopped() {
            match pubsub.get_message() {
                Ok(message) => {
                    last_traffic = Instant::now();
                    if let Ok(message) = message.get_payload::<String>() {
                        self.events.notify_message(&message);
                    }
                }
                Err(err) if err.is_timeout() => {
                    if last_traffic.elapsed() >= KEEPALIVE {
                        pubsub.set_read_timeout(Some(self.response_timeout))?;
                        pubsub.ping::<redis::Value>()?;
                        pubsub.set_read_timeout(Some(POLL))?;
                        last_traffic = Instant::now();
                    }
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    fn sleep(&self, total: Duration) {
        let until = Instant::now() + total;
        while !self.stopped() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            thread::sleep(left.min(POLL));
        }
    }
}
