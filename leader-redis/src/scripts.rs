//! The Lua scripts (in `src/lua/`), loaded once per process and run with EVALSHA
//! (redis' [`Script`] reloads a script the server does not know and retries).
//!
//! A script cannot load another, so a helper two scripts share lives in `src/lua/lib/`
//! and is put before each script that calls it.

use std::sync::LazyLock;

use redis::Script;

/// Acquire or renew: see `lua/acquire.lua`.
pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/acquire.lua")));

/// Renew an owned lease: see `lua/extend.lua`.
pub(crate) static EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/extend.lua")));

/// Release, honouring the minimum lease: see `lua/release.lua`.
pub(crate) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/release.lua")));

/// Read the holder and remaining time: see `lua/state.lua`.
pub(crate) static STATE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/state.lua")));

/// A write fenced by a token, for the resource side: see `lua/fence.lua`.
pub(crate) static FENCE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/fence.lua")));

/// Free a lock whoever holds it (the operator's call): see `lua/force_release.lua`.
pub(crate) static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/lib/utf8.lua"),
        include_str!("lua/force_release.lua")
    ))
});

/// One page of a name's derived locks from its index: see `lua/list.lua`.
pub(crate) static LIST: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/list.lua")));

/// Read or compare-and-set a record: see `lua/record.lua`.
pub(crate) static RECORD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/lib/utf8.lua"),
        include_str!("lua/record.lua")
    ))
});

/// Acquire or renew a read/write lock in a role: see `lua/shared_acquire.lua`.
pub(crate) static SHARED_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/lib/shared.lua"),
        include_str!("lua/shared_acquire.lua")
    ))
});

/// Renew a hold of a read/write lock: see `lua/shared_extend.lua`.
pub(crate) static SHARED_EXTEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/lib/shared.lua"),
        include_str!("lua/shared_extend.lua")
    ))
});

/// End a hold (or a writer's intent) of a read/write lock: see `lua/shared_release.lua`.
pub(crate) static SHARED_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/lib/shared.lua"),
        include_str!("lua/shared_release.lua")
    ))
});

/// Read a read/write lock's holds: see `lua/shared_state.lua`.
pub(crate) static SHARED_STATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/lib/shared.lua"),
        include_str!("lua/shared_state.lua")
    ))
});
