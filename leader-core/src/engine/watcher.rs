//! [`LeadershipWatcher`]: a read-only, cloneable view of a running campaign.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::leadership_state::LeadershipState;
use crate::leadership::context::LeaseContext;
use crate::leadership::events::LeadershipEvents;

/// A read-only view of a campaign, for the tasks or threads that do the leader's work
/// while the campaign's handle stays with whoever may resign.
///
/// Cloning is cheap. Unlike the handle, dropping a watcher does not stop the campaign.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::LeadershipWatcher;
///
/// // `watcher` comes from `leadership.watcher()` on a campaign's handle.
/// fn spawn_worker(watcher: LeadershipWatcher) -> std::thread::JoinHandle<()> {
///     std::thread::spawn(move || loop {
///         let Some(term) = watcher.wait_for_term_timeout(Duration::from_secs(1)) else {
///             continue; // not leading yet
///         };
///         while !term.is_lost() {
///             // one step of the leader's work, its writes fenced with term.fencing_token()
///             # break;
///         }
///         # break;
///     })
/// }
/// ```
#[derive(Clone)]
pub struct LeadershipWatcher {
    state: Arc<LeadershipState>,
}

impl LeadershipWatcher {
    pub(crate) fn new(state: Arc<LeadershipState>) -> Self {
        LeadershipWatcher { state }
    }

    /// This instance's node id.
    pub fn node_id(&self) -> &str {
        self.state.node_id()
    }

    /// `true` while this instance leads (and its renew deadline has not passed).
    pub fn is_leader(&self) -> bool {
        self.state.is_leader()
    }

    /// The leader this instance last observed (itself while it leads).
    pub fn current_leader(&self) -> Option<String> {
        self.state.current_leader()
    }

    /// The current term's signal while this instance leads: its `lost()` resolves (and
    /// `is_lost()` turns true) the moment the term ends.
    pub fn term(&self) -> Option<LeaseContext> {
        self.state.term()
    }

    /// Waits until this instance leads and returns the term's signal.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn wait_for_term(&self) -> LeaseContext {
        self.state.wait_for_term().await
    }

    /// Blocks until this instance leads (`Some(term)`) or `timeout` passes (`None`).
    pub fn wait_for_term_timeout(&self, timeout: Duration) -> Option<LeaseContext> {
        self.state.wait_for_term_timeout(timeout)
    }

    /// Events from now on, bounded; see [`LeadershipEvents`] for what happens when the
    /// reader lags.
    ///
    /// Each event is sent just *after* the state it describes becomes visible, so a
    /// callback or subscriber that reads `is_leader()` on `Elected` sees `true`; the other
    /// way round, `is_leader()` may turn true a moment before the `Elected` event arrives.
    pub fn events(&self) -> LeadershipEvents {
        self.state.subscribe()
    }
}

impl fmt::Debug for LeadershipWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.state, f)
    }
}

impl LeadershipState {
    /// A read-only view of this campaign, for users.
    pub fn watcher(self: &Arc<Self>) -> LeadershipWatcher {
        LeadershipWatcher::new(Arc::clone(self))
    }
}
