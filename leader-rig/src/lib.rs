#![cfg_attr(docsrs, feature(doc_cfg))]
//! The toolkit's own test rig, beside the published contract suite (`leader-testkit`):
//! server [`fixtures`], fault-injecting wrappers ([`FaultyBackend`], [`CountingBackend`]),
//! a TCP [`FaultProxy`] (`tokio` feature), multi-process [`contenders`], and the samplers
//! and witnesses the fault tests judge by. Unpublished: it changes with the tests.
//!
//! ```no_run
//! use leader_rig::fixtures;
//!
//! // One Redis server per test process, or a skip line when redis-server is missing
//! // (a failure under LEADER_TEST_REQUIRE_SERVERS=1).
//! let Some(server) = fixtures::shared_redis() else { return };
//! println!("{}", server.url());
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod contenders;
mod counting;
mod faulty;
pub mod fixtures;
mod lateness;
#[cfg(feature = "tokio")]
mod proxy;
mod sampler;
pub mod secret_urls;
pub mod spans;

pub use counting::{Call, CallCounter, CountingBackend};
pub use faulty::{Fault, FaultyBackend, Op};
pub use lateness::{DeadlineWitness, Lateness};
#[cfg(feature = "tokio")]
pub use proxy::FaultProxy;
pub use sampler::LeaderSampler;
