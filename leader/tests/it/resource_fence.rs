//! Fencing at the resource, on every backend with a fence helper for its own kind of
//! resource (`leader::redis::fence`, a script over a fence key and the data;
//! `leader::mongodb::fence`, a filter and an update through the driver): a holder whose
//! lease ran out cannot overwrite what the next holder wrote. Two electors of one lock hand
//! out the tokens; the fenced writes go to the backend's server beside the locks.
//!
//! What only one fence helper has (Redis: any command, exact 64-bit tokens, a cluster's
//! async path; MongoDB: upserts, a fence written before fencing, a named fence field) is
//! tested in that backend crate's `tests/resource_fence.rs`.

use crate::common;

use std::time::Duration;

use leader::{LeaderElectionOptions, LeaderElector, LeaseMode};
use leader_core::LockName;
use leader_testkit::fresh_name;

/// One resource that fenced writes go to.
trait Resource {
    /// Writes `value` under `token`, creating the resource if it is not there yet;
    /// whether the fence accepted it.
    fn write(&self, token: u64, value: &str) -> bool;
    /// Writes `value` under `token` to the resource as it stands (never creating it).
    fn update(&self, token: u64, value: &str) -> bool;
    /// Checks that the `stale` holder's `value` is refused, every way it may be written,
    /// after the holder of `newer` wrote.
    fn assert_refused(&self, stale: u64, newer: u64, value: &str);
    /// The value stored.
    fn value(&self) -> Option<String>;
    /// The highest token the resource's fence has seen.
    fn highest_seen(&self) -> Option<u64>;
}

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::from_secs(10))
}

/// A holds a lock for `stale_lease` and writes to the `resource` of the lock's name; A
/// stalls past its lease; B (waiting for A's lease to run out) takes over and writes; A
/// wakes up and writes with its old token: refused, and B's value stays.
fn a_stale_holders_late_write_is_rejected_and_the_newer_value_stays(
    kind: &str,
    stale_lease: Duration,
    resource: impl FnOnce(&LockName) -> Box<dyn Resource>,
) {
    let Some((backend, _dir)) = common::backend(kind) else {
        return;
    };
    let key = fresh_name("resource-fence");
    let resource = resource(&key);
    let a = LeaderElector::new(backend.clone(), options("node-a")).unwrap();
    let b = LeaderElector::new(backend, options("node-b")).unwrap();

    let held_by_a = a
        .acquire(key.as_str(), LeaseMode::Fixed(stale_lease))
        .unwrap();
    let ta = held_by_a.fencing_token();
    // A fresh resource accepts the first write; the same holder may write again.
    assert!(resource.write(ta, "a-1"));
    assert!(resource.write(ta, "a-2"));
    assert_eq!(resource.highest_seen(), Some(ta));

    // A stalls past its lease; B takes over and writes.
    let held_by_b = b
        .acquire(
            key.as_str(),
            LeaseMode::Watchdog {
                timeout: Duration::from_secs(30),
            },
        )
        .unwrap();
    let tb = held_by_b.fencing_token();
    assert!(tb > ta, "{ta} then {tb}");
    assert!(resource.write(tb, "b-1"));

    // A wakes up and writes with its old token: refused, B's value stays.
    resource.assert_refused(ta, tb, "a-late");
    assert_eq!(resource.value().as_deref(), Some("b-1"));
    assert_eq!(resource.highest_seen(), Some(tb));

    // B, still holding, keeps writing with its token.
    assert!(resource.update(tb, "b-2"));
    assert_eq!(resource.value().as_deref(), Some("b-2"));
    held_by_b.release().unwrap();
    drop(held_by_a);
}

mod redis {
    use std::cell::RefCell;
    use std::time::Duration;

    use leader::redis::fence::{Fence, FenceOutcome};
    use leader::redis::redis as client;
    use leader_core::LockName;
    use leader_rig::fixtures;

    /// A string and its fence key, in one slot through `{name}`.
    struct Report {
        con: RefCell<client::Connection>,
        fence: String,
        data: String,
    }

    impl Report {
        fn get(&self, key: &str) -> Option<String> {
            client::cmd("GET")
                .arg(key)
                .query(&mut *self.con.borrow_mut())
                .unwrap()
        }

        fn set(&self, token: u64, value: &str) -> FenceOutcome {
            Fence::new(&self.fence, token)
                .set(&self.data, value)
                .invoke(&mut *self.con.borrow_mut())
                .unwrap()
        }
    }

    impl super::Resource for Report {
        fn write(&self, token: u64, value: &str) -> bool {
            self.set(token, value) == FenceOutcome::Accepted
        }

        fn update(&self, token: u64, value: &str) -> bool {
            self.set(token, value).is_accepted()
        }

        fn assert_refused(&self, stale: u64, newer: u64, value: &str) {
            let late = self.set(stale, value);
            assert_eq!(
                late,
                FenceOutcome::Rejected {
                    highest_seen: newer
                }
            );
            assert!(!late.is_accepted());
        }

        fn value(&self) -> Option<String> {
            self.get(&self.data)
        }

        fn highest_seen(&self) -> Option<u64> {
            self.get(&self.fence).map(|token| token.parse().unwrap())
        }
    }

    impl Report {
        /// The report of lock `key` on the shared server.
        fn of(key: &LockName) -> Box<dyn super::Resource> {
            let url = fixtures::shared_redis().unwrap().url();
            let con = client::Client::open(url).unwrap().get_connection().unwrap();
            Box::new(Report {
                con: RefCell::new(con),
                fence: format!("{{{key}}}:fence"),
                data: format!("{{{key}}}:report"),
            })
        }
    }

    #[test]
    fn a_stale_holders_late_write_is_rejected_and_the_newer_value_stays() {
        super::a_stale_holders_late_write_is_rejected_and_the_newer_value_stays(
            "redis",
            Duration::from_millis(300),
            Report::of,
        );
    }
}

mod mongodb {
    use std::time::Duration;

    use leader::mongodb::fence::{Fence, FenceOutcome};
    use leader::mongodb::mongodb::bson::{Document, doc};
    use leader::mongodb::mongodb::{Client, Collection};
    use leader_core::LockName;
    use leader_rig::fixtures;
    use leader_testkit::{Runner, TokioRunner};

    /// A document in a plain collection, its fence a field of it.
    struct Report {
        runtime: TokioRunner,
        reports: Collection<Document>,
        id: String,
    }

    impl Report {
        /// A fenced `update_one` of the report to `value`, with or without upsert.
        fn update_one(&self, token: u64, value: &str, upsert: bool) -> FenceOutcome {
            let fence = Fence::new(token).unwrap();
            let filter = fence.filter(doc! { "_id": &self.id });
            let update = fence.set(doc! { "value": value });
            let result = self.runtime.block_on(
                self.reports
                    .update_one(filter, update)
                    .upsert(upsert)
                    .into_future(),
            );
            FenceOutcome::from_update(result).unwrap()
        }

        fn stored(&self) -> Option<Document> {
            self.runtime
                .block_on(
                    self.reports
                        .find_one(doc! { "_id": &self.id })
                        .into_future(),
                )
                .unwrap()
        }
    }

    impl super::Resource for Report {
        fn write(&self, token: u64, value: &str) -> bool {
            self.update_one(token, value, true) == FenceOutcome::Accepted
        }

        fn update(&self, token: u64, value: &str) -> bool {
            self.update_one(token, value, false).is_accepted()
        }

        /// As an upsert (the server answers with a duplicate key) and as a plain update
        /// (nothing matches).
        fn assert_refused(&self, stale: u64, _: u64, value: &str) {
            assert_eq!(self.update_one(stale, value, true), FenceOutcome::Rejected);
            assert_eq!(self.update_one(stale, value, false), FenceOutcome::Rejected);
        }

        fn value(&self) -> Option<String> {
            let doc = self.stored()?;
            Some(doc.get_str("value").unwrap().to_owned())
        }

        fn highest_seen(&self) -> Option<u64> {
            let doc = self.stored()?;
            Fence::new(1).unwrap().highest_seen(&doc).unwrap()
        }
    }

    impl Report {
        /// The report of lock `key` on the shared server.
        fn of(key: &LockName) -> Box<dyn super::Resource> {
            let uri = fixtures::shared_mongo().unwrap().uri();
            let runtime = TokioRunner::multi_thread();
            let client = runtime.block_on(Client::with_uri_str(uri)).unwrap();
            let reports = client.database("leader_test");
            Box::new(Report {
                reports: reports.collection("resource_fence_reports"),
                runtime,
                id: key.as_str().to_owned(),
            })
        }
    }

    #[test]
    fn a_stale_holders_late_write_is_rejected_and_the_newer_value_stays() {
        super::a_stale_holders_late_write_is_rejected_and_the_newer_value_stays(
            "mongodb",
            Duration::from_millis(500),
            Report::of,
        );
    }
}
