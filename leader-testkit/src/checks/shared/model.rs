//! A random walk of one lock, answer by answer against the kit's `SharedRecord`.

use std::time::Duration;

use leader_core::kit::{Deadline, SharedAnswer, SharedAsk, SharedRecord};
use leader_core::{
    AsyncSharedLockBackend, ExtendOutcome, Lease, MaxReaders, OwnerToken, ReleaseOutcome, Role,
    SharedOutcome,
};
use rand::{Rng, SeedableRng};

use super::{ask, by_owner, extend, release};
use crate::checks::LONG_LEASE;
use crate::harness::{Harness, fresh_name};
use crate::runner::Runner;

/// Random acquires, renewals and releases of six owners on one lock, with leases too long
/// to run out, answer as the record's rules ([`SharedRecord`]) say, step by step; every
/// new grant's token exceeds every earlier one.
pub fn shared_answers_follow_the_record_rules<H: Harness, R: Runner>(harness: &H, runner: &R)
where
    H::Backend: AsyncSharedLockBackend,
{
    runner.block_on(async {
        let backend = harness.backend().await;
        let seed: u64 = rand::rng().random();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let key = fresh_name("rw-model");
        let owners: Vec<OwnerToken> = (0..6).map(|_| OwnerToken::random()).collect();
        let mut model: SharedRecord<Still> = SharedRecord::default();
        let now = Still(false);
        let mut leases: Vec<Option<Lease>> = vec![None; owners.len()];
        let mut last_token = 0;
        for step in 0..120 {
            let who = rng.random_range(0..owners.len());
            let owner = owners[who];
            let role = if rng.random_bool(0.35) {
                Role::Write
            } else {
                Role::Read
            };
            let context = format!("seed {seed}, step {step}, owner {who}, {}", role.as_str());
            match rng.random_range(0..5) {
                0..=2 => {
                    let renewing = leases[who].is_some();
                    let expected = model.acquire(
                        SharedAsk {
                            role,
                            owner,
                            node: "n",
                            expires: Still(true),
                            max_readers: MaxReaders::DEFAULT.get(),
                            token_floor: 0,
                        },
                        now,
                    );
                    let node = format!("node-{who}");
                    let actual = ask(&backend, role, &key, owner, &node, LONG_LEASE * 10).await;
                    match (&expected, actual) {
                        (SharedAnswer::Acquired(_), SharedOutcome::Acquired(lease)) => {
                            if !renewing {
                                assert!(lease.fencing_token > last_token, "{context}: token order");
                                last_token = lease.fencing_token;
                            }
                            leases[who] = Some(lease);
                        }
                        (SharedAnswer::Held, SharedOutcome::Held(_))
                        | (SharedAnswer::Queued, SharedOutcome::Queued(_)) => {}
                        (expected, actual) => {
                            panic!("{context}: expected {expected:?}, got {actual:?}")
                        }
                    }
                }
                3 => {
                    let lease = leases[who].clone().unwrap_or_else(|| by_owner(&key, owner));
                    let expected = model.extend(role, owner, Still(true), now).is_some();
                    let actual = extend(&backend, &lease, role, LONG_LEASE * 10).await;
                    assert_eq!(
                        matches!(actual, ExtendOutcome::Extended { .. }),
                        expected,
                        "{context}: extend answered {actual:?}"
                    );
                }
                _ => {
                    let lease = leases[who].clone().unwrap_or_else(|| by_owner(&key, owner));
                    let expected = model.release(role, owner, Duration::ZERO, now);
                    let actual = release(&backend, &lease, role).await;
                    assert_eq!(
                        actual == ReleaseOutcome::Released,
                        expected,
                        "{context}: release answered {actual:?}"
                    );
                    let holds = model.readers.iter().any(|r| r.owner == owner)
                        || model.writer.as_ref().is_some_and(|w| w.owner == owner);
                    if !holds {
                        leases[who] = None;
                    }
                }
            }
        }
    });
}

/// The model's clock in [`shared_answers_follow_the_record_rules`]: time stands still, so
/// no hold runs out (the leases there are far longer than the check), and a minimum lease
/// of zero is over at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Still(bool);

impl Deadline for Still {
    fn after(self, by: Duration) -> Option<Self> {
        Some(if by.is_zero() { self } else { Still(true) })
    }
}
