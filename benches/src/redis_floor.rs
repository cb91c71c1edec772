//! The floor of a Redis cycle: the two EVALSHA commands the backend sends (acquire,
//! release), with the backend's own scripts and arguments, sent raw; and the references
//! the server's time per cycle is measured against: the fewest-calls lock, rslock's two
//! commands and two empty scripts.

use std::time::SystemTime;

use leader_core::OwnerToken;

use crate::LEASE;

const ACQUIRE_LUA: &str = include_str!("../../leader-redis/src/lua/acquire.lua");
const RELEASE_LUA: &str = include_str!("../../leader-redis/src/lua/release.lua");

/// The two EVALSHA commands of one cycle on the lock `name` under `prefix`, with the
/// arguments the backend would send (a fresh owner token, a [`LEASE`]; a system clock
/// before 1970 sends 0 as the time).
pub fn raw_cycle(prefix: &str, name: &str) -> (redis::Cmd, redis::Cmd) {
    raw_cycle_of(prefix, name, false)
}

/// [`raw_cycle`] of a waiter: its acquire says that it waits for the release
/// notification, as the backend's does while an elector waits, so that an attempt that
/// finds the lock held marks the record and the holder's release publishes.
pub fn raw_waiter_cycle(prefix: &str, name: &str) -> (redis::Cmd, redis::Cmd) {
    raw_cycle_of(prefix, name, true)
}

fn raw_cycle_of(prefix: &str, name: &str, waits: bool) -> (redis::Cmd, redis::Cmd) {
    let acquire = redis::Script::new(ACQUIRE_LUA);
    let release = redis::Script::new(RELEASE_LUA);
    let lock_key = format!("{prefix}:{{{name}}}");
    let owner = OwnerToken::random().to_string();
    let now_us = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|since| since.as_micros())
        .unwrap_or_default();
    let mut acquire_cmd = redis::cmd("EVALSHA");
    acquire_cmd
        .arg(acquire.get_hash())
        .arg(3)
        .arg(&lock_key)
        .arg(format!("{lock_key}:fence"))
        .arg(format!("{lock_key}:derived"))
        .arg(u64::try_from(now_us).unwrap_or(u64::MAX))
        .arg(&owner)
        .arg("bench-node")
        .arg(u64::try_from(LEASE.as_millis()).unwrap_or(u64::MAX))
        .arg("0")
        .arg(if waits { "1" } else { "0" })
        .arg(1);
    let mut release_cmd = redis::cmd("EVALSHA");
    release_cmd
        .arg(release.get_hash())
        .arg(1)
        .arg(&lock_key)
        .arg(format!("{prefix}:released"))
        .arg(&owner)
        .arg(0)
        .arg(name);
    (acquire_cmd, release_cmd)
}

/// Loads the backend's scripts, the fewest-calls lock's, the plain lock's release and
/// the empty script into the server at `url`, so the raw EVALSHA find them.
///
/// # Errors
///
/// When the server cannot be reached or refuses the scripts.
pub fn load_scripts(url: &str) -> redis::RedisResult<()> {
    let mut conn = redis::Client::open(url)?.get_connection()?;
    for code in [
        ACQUIRE_LUA,
        RELEASE_LUA,
        FEWEST_ACQUIRE_LUA,
        FEWEST_RELEASE_LUA,
        PLAIN_UNLOCK_LUA,
        EMPTY_LUA,
    ] {
        redis::Script::new(code).load(&mut conn)?;
    }
    Ok(())
}

/// A fenced, expiring, notifying lock built from the fewest script calls, the reference
/// for the server's time per cycle: acquire is `GET` (free?), `TIME`, `SET .. GET` of the
/// counter (the token is `max(counter + 1, server µs)`) and `SET .. PX` of the lock;
/// release is `GET` (ours?), `DEL` and `PUBLISH`. Seven calls; it keeps no leader id,
/// times, minimum lease, corruption check or group slots.
const FEWEST_ACQUIRE_LUA: &str = r"
if redis.call('GET', KEYS[1]) then
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local last = tonumber(redis.call('SET', KEYS[2], string.format('%d', now), 'GET'))
local fence = now
if last and last >= now then
  fence = last + 1
  redis.call('SET', KEYS[2], string.format('%d', fence))
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. string.format('%d', fence), 'PX', ARGV[2])
return fence
";

const FEWEST_RELEASE_LUA: &str = r"
local held = redis.call('GET', KEYS[1])
if not held or string.sub(held, 1, #ARGV[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
";

/// The fewest-calls lock (see `FEWEST_ACQUIRE_LUA`) on one name: its scripts and keys.
struct FewestLock {
    acquire: redis::Script,
    release: redis::Script,
    lock_key: String,
    counter_key: String,
    channel: String,
    lease_ms: u64,
}

impl FewestLock {
    fn new(prefix: &str, name: &str) -> Self {
        let lock_key = format!("{prefix}:{{{name}}}:fewest");
        FewestLock {
            acquire: redis::Script::new(FEWEST_ACQUIRE_LUA),
            release: redis::Script::new(FEWEST_RELEASE_LUA),
            counter_key: format!("{lock_key}:fence"),
            lock_key,
            channel: format!("{prefix}:released"),
            lease_ms: u64::try_from(LEASE.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The acquire of `owner`.
    fn acquire(&self, owner: &str) -> redis::Cmd {
        let mut acquire = redis::cmd("EVALSHA");
        acquire
            .arg(self.acquire.get_hash())
            .arg(2)
            .arg(&self.lock_key)
            .arg(&self.counter_key)
            .arg(owner)
            .arg(self.lease_ms);
        acquire
    }

    /// The release of `owner`, announcing `message`.
    fn release(&self, owner: &str, message: &str) -> redis::Cmd {
        let mut release = redis::cmd("EVALSHA");
        release
            .arg(self.release.get_hash())
            .arg(1)
            .arg(&self.lock_key)
            .arg(owner)
            .arg(&self.channel)
            .arg(message);
        release
    }
}

/// One cycle of the fewest-calls lock (see `FEWEST_ACQUIRE_LUA`) on `name` under
/// `prefix`, as a closure over `conn`: acquire, then release (two EVALSHA). Its scripts
/// must be loaded ([`load_scripts`]).
///
/// # Errors
///
/// When the server refuses a call.
///
/// # Panics
///
/// When the lock is held by someone else.
pub fn fewest_calls_cycle(
    prefix: &str,
    name: &str,
) -> impl FnMut(&mut redis::Connection) -> redis::RedisResult<()> {
    let lock = FewestLock::new(prefix, name);
    let name = name.to_owned();
    move |conn| {
        let owner = OwnerToken::random().to_string();
        let fence: u64 = lock.acquire(&owner).query(conn)?;
        assert!(fence > 0, "the fewest-calls lock is free");
        let message = format!("{name}\n{fence}");
        let released: i64 = lock.release(&owner, &message).query(conn)?;
        assert_eq!(released, 1, "the fewest-calls lock was ours");
        Ok(())
    }
}

/// The fewest-calls lock's two commands of one cycle on `name` under `prefix`, for one
/// owner (a pipeline of cycles repeats them; the release announces `name` alone).
pub fn fewest_calls_commands(prefix: &str, name: &str) -> (redis::Cmd, redis::Cmd) {
    let (lock, owner) = (
        FewestLock::new(prefix, name),
        OwnerToken::random().to_string(),
    );
    (lock.acquire(&owner), lock.release(&owner, name))
}

/// The plain lock's release: delete the key if it still holds the caller's value (the
/// compare-and-delete that Redis' documentation gives for `SET NX` locks, and that rslock
/// sends).
const PLAIN_UNLOCK_LUA: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// The two commands of one cycle of the plain lock rslock builds on `resource`, sent raw:
/// `SET .. NX PX` of a random 20-byte value (as rslock's) and the compare-and-delete.
pub fn rslock_commands(resource: &str) -> (redis::Cmd, redis::Cmd) {
    let value: [u8; 20] = rand::random();
    let mut lock = redis::cmd("SET");
    lock.arg(resource)
        .arg(&value[..])
        .arg("NX")
        .arg("PX")
        .arg(u64::try_from(LEASE.as_millis()).unwrap_or(u64::MAX));
    let mut unlock = redis::cmd("EVALSHA");
    unlock
        .arg(redis::Script::new(PLAIN_UNLOCK_LUA).get_hash())
        .arg(1)
        .arg(resource)
        .arg(&value[..]);
    (lock, unlock)
}

/// A script that calls nothing: what the server spends around any script.
const EMPTY_LUA: &str = "return 1";

/// Two runs of an empty script (`return 1`): a cycle's cost of running two scripts,
/// before their calls.
pub fn empty_scripts_commands() -> (redis::Cmd, redis::Cmd) {
    let mut run = redis::cmd("EVALSHA");
    run.arg(redis::Script::new(EMPTY_LUA).get_hash()).arg(0);
    (run.clone(), run)
}
