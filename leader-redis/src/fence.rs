//! Fencing at the resource: Redis writes that a stale lock holder cannot make.
//!
//! A fencing token protects nothing until the resource checks it. A holder that was paused
//! (a GC pause, a slow disk, a network partition) past the end of its lease still believes
//! it leads; by the time its write arrives, another node may hold the lock with a newer
//! token and may already have written. [`Fence`] makes the write conditional, in one Lua
//! script run atomically on the server:
//!
//! - the *fence key* holds the highest token seen for the resource (a decimal string);
//! - a write with a token **lower** than that is refused:
//!   [`FenceOutcome::Rejected`] says which token is newer, and nothing is written;
//! - a write with an **equal** token is accepted (one holder writes several times);
//! - a write with a **higher** token (or the first write, when the fence key is absent) is
//!   accepted and raises the fence to its token.
//!
//! The check, the write and the raising of the fence happen together, or not at all: when
//! the command fails on the server (a `WRONGTYPE`, say), the script stops before touching
//! the fence. The helper works with any `redis` connection: [`FencedWrite::invoke`] takes a
//! blocking [`redis::ConnectionLike`] and [`FencedWrite::invoke_async`] (with the `tokio`
//! or `smol` feature) an async [`redis::aio::ConnectionLike`] — a plain connection, a
//! `ConnectionManager` or a cluster connection. It does not need a [`RedisBackend`]: the
//! locks may live anywhere, as long as the tokens come from them.
//!
//! # One cluster slot
//!
//! The fence key and every key the command writes must hash to the same Redis Cluster
//! slot, or the cluster refuses the script (`CROSSSLOT`). Give them one hash tag:
//! `{invoice:42}:fence` and `{invoice:42}:pdf`. A standalone server does not check this;
//! tag the keys anyway, so the data can move to a cluster.
//!
//! # When the fence key is lost
//!
//! The fence is only as durable as the fence key. It never expires (each raise is a plain
//! `SET`, which also clears a TTL someone may have put on it), but it can still be lost:
//! deleted by hand or by a `FLUSHDB`, evicted under an `allkeys-*` `maxmemory-policy`,
//! rolled back by a restart on an older RDB/AOF or by a failover to a replica that had not
//! received the last writes. When it is gone, the next write is judged against nothing:
//! **any token is accepted, a stale one included**, and it becomes the new highest. The
//! window closes at the next write of the current holder (its token is higher), so a stale
//! write can slip in only between the loss and that write.
//!
//! That is the trade-off of keeping the fence apart from the data: it costs nothing for
//! values of any type, and a rollback by snapshot or failover usually takes both keys back
//! together (each script's writes are replicated and persisted as one unit), so the data
//! goes back along with the fence. What it does not survive is losing the fence key
//! alone. Against that: run with `noeviction` or a `volatile-*` policy (the fence key has
//! no TTL, so it is never chosen), never delete or expire fence keys, and treat data whose
//! fence key is missing as a fault to alert on. The helper does not refuse a first write
//! next to existing data on its own: it cannot tell a lost fence from data written before
//! fencing was introduced.
//!
//! # Examples
//!
//! ```no_run
//! use leader_redis::fence::{Fence, FenceOutcome};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//!
//! // The holder's token: `LeaseContext::fencing_token()` inside `run_if_leader_with`.
//! let token: u64 = 1_786_000_000_123_456;
//! // `{report}` is the hash tag: both keys are in one cluster slot.
//! let fence = Fence::new("{report}:fence", token);
//!
//! match fence.set("{report}:latest", "rows=42").invoke(&mut con)? {
//!     FenceOutcome::Accepted => println!("written"),
//!     FenceOutcome::Rejected { highest_seen } => {
//!         println!("a newer holder (token {highest_seen}) has written; giving up")
//!     }
//! }
//!
//! // Any write command: an expiring SET, an HSET, an XADD... declare the keys it writes.
//! let hset = ("HSET", "{report}:meta", "rows", 42);
//! let outcome = fence.command(hset, ["{report}:meta"]).invoke(&mut con)?;
//! assert!(outcome.is_accepted());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`RedisBackend`]: crate::RedisBackend

mod reply;

use std::fmt;

use redis::{ScriptInvocation, ToRedisArgs, Value};

use crate::scripts::FENCE;

pub use reply::{FenceError, FenceOutcome};

/// A holder's fencing token and the key that keeps the highest token seen for a resource:
/// the start of a [`FencedWrite`].
///
/// # Examples
///
/// ```
/// use leader_redis::fence::Fence;
///
/// let fence = Fence::new("{orders}:fence", 7);
/// let write = fence.set("{orders}:total", 1250);
/// assert_eq!(write.fence().token(), 7);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    key: String,
    token: u64,
}

impl Fence {
    /// A fence on `fence_key` for a holder with `token` (its lease's fencing token).
    ///
    /// The fence key must share a hash tag with the keys written under it (see the
    /// [module docs](self)).
    pub fn new(fence_key: impl Into<String>, token: u64) -> Self {
        Fence {
            key: fence_key.into(),
            token,
        }
    }

    /// The fence key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The holder's token.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// `SET key value`, fenced.
    pub fn set(&self, key: impl ToRedisArgs, value: impl ToRedisArgs) -> FencedWrite {
        let key = key.to_redis_args();
        let mut command = vec![b"SET".to_vec()];
        command.extend(key.iter().cloned());
        command.extend(value.to_redis_args());
        FencedWrite {
            fence: self.clone(),
            keys: key,
            command,
        }
    }

    /// Any write command, fenced: `command` is its name and arguments (a tuple such as
    /// `("HSET", key, "field", value)`, or a `Vec`), `keys` the keys it writes. The keys
    /// are passed to the script as `KEYS`, so that a cluster routes the call and checks
    /// that they share the fence key's slot. The command's own reply is not returned.
    pub fn command<K: ToRedisArgs>(
        &self,
        command: impl ToRedisArgs,
        keys: impl IntoIterator<Item = K>,
    ) -> FencedWrite {
        FencedWrite {
            fence: self.clone(),
            keys: keys.into_iter().flat_map(|k| k.to_redis_args()).collect(),
            command: command.to_redis_args(),
        }
    }
}

/// A write that happens only if its token is not older than the highest token seen for
/// the resource. Made by [`Fence::set`] or [`Fence::command`]; run it with
/// [`invoke`](Self::invoke) or [`invoke_async`](Self::invoke_async), as often as needed.
#[derive(Clone)]
pub struct FencedWrite {
    fence: Fence,
    keys: Vec<Vec<u8>>,
    command: Vec<Vec<u8>>,
}

impl fmt::Debug for FencedWrite {
    // The arguments may carry secrets: only their number is shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FencedWrite")
            .field("fence", &self.fence)
            .field("keys", &self.keys.len())
            .field("args", &self.command.len())
            .finish()
    }
}

impl FencedWrite {
    /// The fence it is checked against.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Runs the write on a blocking connection.
    ///
    /// # Errors
    ///
    /// [`FenceError::Redis`] when the call fails (network, server, or the command itself —
    /// then nothing was written), [`FenceError::CorruptFence`] when the fence key holds
    /// something other than a token (nothing was written), [`FenceError::BadReply`] for a
    /// reply the script cannot give.
    pub fn invoke(&self, con: &mut dyn redis::ConnectionLike) -> Result<FenceOutcome, FenceError> {
        let reply: Value = self.invocation().invoke(con)?;
        reply::decode(&self.fence.key, &reply)
    }

    /// Runs the write on an async connection.
    ///
    /// # Errors
    ///
    /// As [`invoke`](Self::invoke).
    ///
    /// # Cancel safety
    ///
    /// Dropped before the reply, the write may or may not have happened, as any Redis call;
    /// running it again with the same token is harmless for an idempotent command.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub async fn invoke_async(
        &self,
        con: &mut impl redis::aio::ConnectionLike,
    ) -> Result<FenceOutcome, FenceError> {
        let reply: Value = self.invocation().invoke_async(con).await?;
        reply::decode(&self.fence.key, &reply)
    }

    /// The script call, built the same way for both paths.
    fn invocation(&self) -> ScriptInvocation<'static> {
        let mut invocation = FENCE.key(&self.fence.key);
        for key in &self.keys {
            invocation.key(key.as_slice());
        }
        invocation.arg(self.fence.token);
        for arg in &self.command {
            invocation.arg(arg.as_slice());
        }
        invocation
    }
}
