//! Redis Sentinel: the master of a set found through its sentinels, and found again after
//! a failover.
//!
//! The master's address is asked of the sentinels (`SENTINEL get-master-addr-by-name`), in
//! turn, and kept until a call gives a sign that it changed: the connection failed, timed
//! out or was refused, or the server answered `READONLY` (a master demoted to a replica,
//! or a stale address) or `MASTERDOWN`. Then it is forgotten, and the next connection asks
//! the sentinels again. Every new connection checks with `ROLE` that the server it reached
//! is a master before it is used, so a sentinel that still names the old master (it has not
//! seen the failover yet) or a server that has just been demoted is never written to: the
//! call is a transient error instead, and the next one asks the next sentinel.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use redis::{Client, ErrorKind, RedisError, RedisResult, ServerErrorKind};

use crate::config::RedisConfig;
use crate::error::ConnectError;
use crate::url::SentinelUrl;

/// The master as the sentinels named it, and the generation of that answer: connections
/// opened to it carry the generation, so once it is forgotten they are not used again.
#[derive(Debug, Clone)]
pub(crate) struct Master {
    pub(crate) generation: u64,
    pub(crate) client: Client,
}

/// The sentinels of one master, and the master they named last.
pub(crate) struct SentinelTarget {
    url: SentinelUrl,
    sentinels: Vec<Client>,
    config: RedisConfig,
    current: Mutex<Option<Master>>,
    /// The generation the next answer gets (starts at 1).
    generations: AtomicU64,
    /// The sentinel asked first next time; moves on when an answer turned out wrong.
    first: AtomicUsize,
}

impl std::fmt::Debug for SentinelTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelTarget")
            .field("url", &self.url)
            .field(
                "generation",
                &self.current.lock().as_ref().map(|m| m.generation),
            )
            .finish_non_exhaustive()
    }
}

impl SentinelTarget {
    /// The sentinels of `url` (a `redis+sentinel://` or `rediss+sentinel://` URL).
    pub(crate) fn new(url: &str, config: &RedisConfig) -> Result<Self, ConnectError> {
        let parsed = SentinelUrl::parse(url).map_err(|reason| {
            ConnectError::invalid_url(
                &[url],
                &RedisError::from((ErrorKind::InvalidClientConfig, reason)),
            )
        })?;
        let sentinels = parsed
            .sentinels
            .iter()
            .map(|node| crate::clients::node_client(&parsed.sentinel_url(node), config))
            .collect::<Result<Vec<_>, _>>()?;
        // The servers' URL is checked here too, so a bad user info fails at construction.
        crate::clients::node_client(&parsed.server_url("127.0.0.1", 6379), config)?;
        Ok(SentinelTarget {
            url: parsed,
            sentinels,
            config: config.clone(),
            current: Mutex::new(None),
            generations: AtomicU64::new(1),
            first: AtomicUsize::new(0),
        })
    }

    fn timeouts(&self) -> (Duration, Duration) {
        (
            self.config.connect_timeout(),
            self.config.response_timeout(),
        )
    }

    /// The master named last, if not forgotten since.
    pub(crate) fn cached(&self) -> Option<Master> {
        self.current.lock().clone()
    }

    /// Whether `generation` is still the current answer.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        self.current
            .lock()
            .as_ref()
            .is_some_and(|master| master.generation == generation)
    }

    /// Forgets the master of `generation` (if it is still the current one): a call on it
    /// failed in a way that may mean a failover. The next sentinel is asked first.
    pub(crate) fn forget(&self, generation: u64) {
        let mut current = self.current.lock();
        if current
            .as_ref()
            .is_some_and(|master| master.generation == generation)
        {
            *current = None;
            self.first.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(master = %self.url.master_name, "redis master forgotten; asking the sentinels again");
        }
    }

    /// The master, asking the sentinels (blocking) when it is not known.
    pub(crate) fn master(&self) -> RedisResult<Master> {
        if let Some(master) = self.cached() {
            return Ok(master);
        }
        let (connect, response) = self.timeouts();
        let mut last = None;
        for sentinel in self.in_turn() {
            let answer = sentinel
                .get_connection_with_timeout(connect)
                .and_then(|mut conn| {
                    conn.set_read_timeout(Some(response))?;
                    conn.set_write_timeout(Some(response))?;
                    self.ask().query::<Option<(String, u16)>>(&mut conn)
                });
            match self.answer(answer) {
                Ok(master) => return Ok(master),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(no_sentinels))
    }

    /// [`master`](Self::master), asking the sentinels without blocking.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn master_async(&self) -> RedisResult<Master> {
        if let Some(master) = self.cached() {
            return Ok(master);
        }
        let (connect, response) = self.timeouts();
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(Some(response));
        let mut last = None;
        for sentinel in self.in_turn() {
            let answer = match sentinel
                .get_multiplexed_async_connection_with_config(&config)
                .await
            {
                Ok(mut conn) => {
                    self.ask()
                        .query_async::<Option<(String, u16)>>(&mut conn)
                        .await
                }
                Err(err) => Err(err),
            };
            match self.answer(answer) {
                Ok(master) => return Ok(master),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(no_sentinels))
    }

    /// The sentinels, starting with the one to ask first.
    fn in_turn(&self) -> impl Iterator<Item = &Client> {
        let first = self.first.load(Ordering::Relaxed) % self.sentinels.len().max(1);
        self.sentinels
            .iter()
            .cycle()
            .skip(first)
            .take(self.sentinels.len())
    }

    fn ask(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("get-master-addr-by-name")
            .arg(&self.url.master_name);
        cmd
    }

    /// A sentinel's answer: the master's client, kept as the current one.
    fn answer(&self, answer: RedisResult<Option<(String, u16)>>) -> RedisResult<Master> {
        let Some((host, port)) = answer? else {
            return Err(RedisError::from((
                ErrorKind::InvalidClientConfig,
                "a sentinel does not know a master of the name in the URL",
            )));
        };
        let client = crate::clients::node_client(&self.url.server_url(&host, port), &self.config)
            .map_err(|_| {
            RedisError::from((
                ErrorKind::InvalidClientConfig,
                "a sentinel named a master address that is not a valid host",
            ))
        })?;
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        let master = Master { generation, client };
        tracing::debug!(master = %self.url.master_name, %host, port, generation, "redis master from the sentinels");
        *self.current.lock() = Some(master.clone());
        Ok(master)
    }
}

fn no_sentinels() -> RedisError {
    RedisError::from((ErrorKind::InvalidClientConfig, "no sentinel to ask"))
}

/// The `ROLE` reply of a server: `Ok` for a master, a transient `READONLY`-kind error
/// otherwise (a replica, or a server the sentinels named before it was promoted).
pub(crate) fn check_master(role: &redis::Value) -> RedisResult<()> {
    let first = match role {
        redis::Value::Array(items) => items.first(),
        _ => None,
    };
    let is_master = match first {
        Some(redis::Value::BulkString(bytes)) => bytes == b"master",
        Some(redis::Value::SimpleString(text)) => text == "master",
        _ => false,
    };
    if is_master { Ok(()) } else { Err(not_master()) }
}

/// The error of a server that turned out not to be the master.
fn not_master() -> RedisError {
    RedisError::from((
        ErrorKind::Server(ServerErrorKind::ReadOnly),
        "the server the sentinels named is not a master (a failover is under way)",
    ))
}

/// A failure that may mean the master changed: forget it and ask the sentinels again.
pub(crate) fn may_have_failed_over(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || is_readonly(err)
        || matches!(err.kind(), ErrorKind::Server(ServerErrorKind::MasterDown))
}

/// `READONLY`: the server is a replica, so nothing was written; the call may go to the
/// master found again at once.
pub(crate) fn is_readonly(err: &RedisError) -> bool {
    matches!(err.kind(), ErrorKind::Server(ServerErrorKind::ReadOnly))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_master_role_passes() {
        let master = redis::Value::Array(vec![
            redis::Value::BulkString(b"master".to_vec()),
            redis::Value::Int(10),
            redis::Value::Array(vec![]),
        ]);
        assert!(check_master(&master).is_ok());
        let replica = redis::Value::Array(vec![redis::Value::BulkString(b"slave".to_vec())]);
        let err = check_master(&replica).unwrap_err();
        assert!(is_readonly(&err) && may_have_failed_over(&err));
        assert!(check_master(&redis::Value::Nil).is_err());
    }

    #[test]
    fn a_bad_url_is_refused_without_its_password() {
        let err = SentinelTarget::new("redis+sentinel://:hunter2@h:0/m", &RedisConfig::default())
            .unwrap_err();
        assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
        assert!(matches!(err, ConnectError::InvalidUrl { .. }));
    }
}
