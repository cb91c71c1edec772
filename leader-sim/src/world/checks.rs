//! The world's own checks, which need the store's state and so are not the history
//! checker's: what a node gave up, and a group leader's other slots, must not keep a lock
//! for long when no fault is in the way (`Outcome::stuck`).

use leader_core::OwnerToken;
use leader_history::FaultKind as HistoryFault;

use super::World;

impl World<'_> {
    /// Whether the store still holds the lock for `owner`, which node `node` gave up at
    /// `since`, with no fault since that could have kept its releases from landing (a
    /// fault of the node, of the network, or of the store's data).
    pub(super) fn check_abandoned(&mut self, node: u32, owner: OwnerToken, since: u64) {
        let now = self.store_clock.local_us(self.t);
        if !self.store.holders(now).any(|r| r.owner == owner) {
            return;
        }
        if !self.excused(node, since) {
            self.stuck.push(format!(
                "node {node} gave up owner {owner:?} at {since} µs; the store still held the lock for it at {} µs, with no fault since",
                self.t
            ));
        }
    }

    /// Whether the store holds a slot other than `slot` for `owner`, whose term on `slot`
    /// node `node` began at `since`: what an attempt of the term's token took elsewhere
    /// (a stray) must be released, as an orphan is.
    pub(super) fn check_strays(&mut self, node: u32, owner: OwnerToken, slot: u32, since: u64) {
        let now = self.store_clock.local_us(self.t);
        let stray = self
            .store
            .holders(now)
            .find(|r| r.owner == owner && r.slot != slot)
            .map(|r| r.slot);
        if let Some(stray) = stray
            && !self.excused(node, since)
        {
            self.stuck.push(format!(
                "node {node} began a term on slot {slot} at {since} µs; the store still held slot {stray} for the same owner at {} µs, with no fault since",
                self.t
            ));
        }
    }

    /// Whether a fault since `since` could have kept node `node`'s releases from landing:
    /// the node down, paused or killed, or any fault of the network or the store's data.
    fn excused(&self, node: u32, since: u64) -> bool {
        self.faults_of[node as usize].down
            || self.spans.iter().any(|f| {
                f.start <= self.t
                    && f.end >= since
                    && match f.kind {
                        HistoryFault::Pause { worker } | HistoryFault::Kill { worker } => {
                            worker == node
                        }
                        _ => true,
                    }
            })
    }
}
