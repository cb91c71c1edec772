//! The end of a run: the nodes' events cut into logs (one per life), the fault spans,
//! and the checker's verdict.

use leader_history::{Clock, Event, History, Log, What, check};

use super::{Outcome, World};

impl World<'_> {
    pub(super) fn judge(self) -> Outcome {
        let mut logs: Vec<Log> = Vec::new();
        for event in &self.events {
            let Some(node) = event.node else { continue };
            let starts_life = matches!(event.what, What::NodeStarted { .. });
            let open = logs
                .iter()
                .rposition(|l| l.node == node && l.died_at.is_none());
            let i = match open {
                Some(i) if !starts_life || logs[i].events.is_empty() => i,
                _ => {
                    logs.push(Log {
                        node,
                        ..Log::default()
                    });
                    logs.len() - 1
                }
            };
            logs[i].events.push(event.clone());
            if matches!(event.what, What::NodeStopped) {
                logs[i].died_at = Some(event.at);
            }
        }
        let mut spans = self.spans;
        spans.sort_by_key(|s| (s.start, s.end));
        let history = History {
            backend: format!("sim-{:?}", self.plan.profile).to_lowercase(),
            logs,
            faults: spans,
            resource: self.resource,
            unreadable_resource_entries: 0,
            run_end: self.t,
            stopped_at: self.t,
            lease_us: self.plan.lease_ms * 1_000,
            paused_client_blocks_store: false,
            exact_times: true,
        };
        let mut events = self.events;
        events.extend(history.faults.iter().map(|f| Event {
            at: f.end,
            clock: Clock::Wall,
            node: None,
            what: What::Fault {
                fault: f.kind,
                start: f.start,
                end: f.end,
            },
        }));
        Outcome {
            report: check(&history),
            events,
            steps: self.steps,
            stuck: self.stuck,
            grants: self.store.grants().to_vec(),
            rank_ignored: self.rank_ignored,
            ranked_checks: self.ranked_checks,
        }
    }
}
