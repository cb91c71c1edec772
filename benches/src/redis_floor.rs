//! The floor of a Redis cycle: the two EVALSHA commands the backend sends (acquire,
//! release), with the backend's own scripts and arguments, sent raw.

use std::time::SystemTime;

use leader_core::OwnerToken;

use crate::LEASE;

const ACQUIRE_LUA: &str = include_str!("../../leader-redis/src/lua/acquire.lua");
const RELEASE_LUA: &str = include_str!("../../leader-redis/src/lua/release.lua");

/// The two EVALSHA commands of one cycle on the lock `name` under `prefix`, with the
/// arguments the backend would send (a fresh owner token, a [`LEASE`]; a system clock
/// before 1970 sends 0 as the time).
pub fn raw_cycle(prefix: &str, name: &str) -> (redis::Cmd, redis::Cmd) {
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

/// Loads the backend's scripts into the server at `url`, so the raw EVALSHA find them.
///
/// # Errors
///
/// When the server cannot be reached or refuses the scripts.
pub fn load_scripts(url: &str) -> redis::RedisResult<()> {
    let mut conn = redis::Client::open(url)?.get_connection()?;
    for code in [ACQUIRE_LUA, RELEASE_LUA] {
        redis::Script::new(code).load(&mut conn)?;
    }
    Ok(())
}
