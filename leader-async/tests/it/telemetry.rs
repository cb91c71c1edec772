//! The async elector's spans: the action runs inside `leader.run` across its awaits, on
//! every runtime; acquire, renewal and release have their spans too.

use std::time::Duration;

use leader_async::AsyncLeaderElector;
use leader_core::{InMemoryBackend, LeaderElectionOptions};
use leader_rig::spans::SpanLog;
use leader_testkit::{Runner, fresh_name, sleep};

leader_testkit::on_every_runtime!(the_action_runs_inside_its_span_across_awaits);

fn the_action_runs_inside_its_span_across_awaits<R: Runner>(runner: &R) {
    let log = SpanLog::global();
    let lock = fresh_name("async-spans").to_string();
    let message = format!("after an await in {lock}");
    runner.block_on(async {
        let options = LeaderElectionOptions::default()
            .with_node_id("node-a")
            .with_lease_time(Duration::from_millis(300))
            .with_auto_extend(true);
        let elector = AsyncLeaderElector::new(InMemoryBackend::new(), options).unwrap();
        let token = elector
            .run_if_leader_with(&lock, |lease| {
                let message = message.clone();
                async move {
                    // Wait for a renewal (every 100 ms), then log.
                    let first = lease.deadline();
                    for _ in 0..1000 {
                        if lease.deadline() > first {
                            break;
                        }
                        sleep(Duration::from_millis(10)).await;
                    }
                    tracing::info!("{message}");
                    Ok::<_, std::convert::Infallible>(lease.fencing_token())
                }
            })
            .await
            .unwrap()
            .into_value()
            .unwrap();
        let [run] = log.spans("leader.run", &lock).try_into().unwrap();
        assert_eq!(run.fields["fencing_token"], token.to_string());
        assert_eq!(run.fields["backend"], "memory");
        let events = log.events(&message);
        assert!(
            events.iter().any(|scope| scope.first() == Some(&run)),
            "{events:?}"
        );
        let [acquire] = log.spans("leader.acquire", &lock).try_into().unwrap();
        assert_eq!(acquire.fields["outcome"], "acquired");
        let [release] = log.spans("leader.release", &lock).try_into().unwrap();
        assert_eq!(release.fields["outcome"], "released");
        assert!(
            log.spans("leader.extend", &lock).iter().any(|s| s
                .fields
                .get("outcome")
                .map(String::as_str)
                == Some("extended"))
        );
    });
}
