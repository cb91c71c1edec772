//! The resource the workers write to: a list on a Redis server of its own (not behind the
//! fault proxy), each write fenced by the writer's token through [`leader::redis::fence`].

use std::time::Duration;

use leader::redis::fence::{Fence, FenceOutcome};
use leader::redis::redis::{self, RedisError};

use crate::event::{Phase, ReadOutcome, WriteOutcome};

/// The list of accepted writes, `lock:worker:token:phase`, oldest first.
pub const LIST_KEY: &str = "{chaos}:writes";

/// The key of the highest token the list has accepted for lock `lock` (same hash tag as
/// the list: one cluster slot). Each lock has its own fence: tokens are ordered per lock.
pub fn fence_key(lock: u32) -> String {
    format!("{{chaos}}:fence:{lock}")
}
/// How long a resource call may take.
const TIMEOUT: Duration = Duration::from_secs(2);

/// A worker's connection to the resource.
#[allow(missing_debug_implementations)] // the driver's connection is not Debug
pub struct Resource {
    url: String,
    con: Option<redis::Connection>,
    fenced: bool,
}

impl Resource {
    /// A resource at `url`; `fenced: false` writes with a plain `RPUSH` (the broken
    /// `no-fence` mode). Connects on first use.
    pub fn new(url: &str, fenced: bool) -> Self {
        Resource {
            url: url.to_owned(),
            con: None,
            fenced,
        }
    }

    /// Appends `lock:worker:token:phase` to the list, fenced by `token` on `lock`'s fence
    /// unless unfenced. A failed call drops the connection; the next write opens a new one.
    pub fn write(&mut self, lock: u32, worker: u32, token: u64, phase: Phase) -> WriteOutcome {
        let phase = match phase {
            Phase::Start => "start",
            Phase::End => "end",
        };
        let entry = format!("{lock}:{worker}:{token}:{phase}");
        let fenced = self.fenced;
        let answer = self.connection().and_then(|con| {
            if fenced {
                Fence::new(fence_key(lock), token)
                    .command(("RPUSH", LIST_KEY, entry), [LIST_KEY])
                    .invoke(con)
                    .map_err(|err| err.to_string())
            } else {
                redis::cmd("RPUSH")
                    .arg(LIST_KEY)
                    .arg(entry)
                    .query::<i64>(con)
                    .map(|_| FenceOutcome::Accepted)
                    .map_err(|err| err.to_string())
            }
        });
        match answer {
            Ok(FenceOutcome::Accepted) => WriteOutcome::Accepted,
            Ok(FenceOutcome::Rejected { highest_seen }) => WriteOutcome::Rejected { highest_seen },
            Err(_) => {
                self.con = None;
                WriteOutcome::Failed
            }
        }
    }

    /// A reader's read: the token of the last write the resource accepted for `lock`
    /// (its fence, the highest accepted token), as a reader of the data would see which
    /// writer's state it reads. It refuses nothing and raises no fence: readers share the
    /// lock, so a reader's token bounds nothing the resource keeps; the checker compares
    /// what each reader saw with its token (a stale read). A failed call drops the
    /// connection.
    pub fn read(&mut self, lock: u32) -> ReadOutcome {
        let answer = self.connection().and_then(|con| {
            redis::cmd("GET")
                .arg(fence_key(lock))
                .query::<Option<u64>>(con)
                .map_err(|err| err.to_string())
        });
        match answer {
            Ok(seen) => ReadOutcome::Seen(seen),
            Err(_) => {
                self.con = None;
                ReadOutcome::Failed
            }
        }
    }

    fn connection(&mut self) -> Result<&mut redis::Connection, String> {
        if self.con.is_none() {
            self.con = Some(connect(&self.url).map_err(|err| err.to_string())?);
        }
        self.con.as_mut().ok_or_else(|| "no connection".to_owned())
    }
}

/// The list of accepted writes at `url`, oldest first.
///
/// # Errors
///
/// When the server cannot be reached or the list cannot be read.
pub fn entries(url: &str) -> Result<Vec<String>, RedisError> {
    let mut con = connect(url)?;
    redis::cmd("LRANGE")
        .arg(LIST_KEY)
        .arg(0)
        .arg(-1)
        .query(&mut con)
}

fn connect(url: &str) -> Result<redis::Connection, RedisError> {
    let con = redis::Client::open(url)?.get_connection_with_timeout(TIMEOUT)?;
    con.set_read_timeout(Some(TIMEOUT))?;
    con.set_write_timeout(Some(TIMEOUT))?;
    Ok(con)
}
