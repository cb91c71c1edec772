//! [`ScriptCall`]: one EVALSHA as data, the way redis' `ScriptInvocation` builds one, but
//! with its keys and its arguments each written into one buffer.
//!
//! redis' invocation keeps every key and argument as a vector of its own and copies them
//! all into the command it sends: an acquire and a release cost two dozen allocations on
//! the client before a byte is sent, a share of every cycle that 64 tasks on one
//! connection feel (`--bench concurrency`). Here a call is three buffers (keys,
//! arguments, the command), whatever its number of arguments.

use redis::{Arg, Cmd, ConnectionLike, RedisResult, RedisWrite, Script, ToRedisArgs, Value};

use crate::sync_conn::is_no_script;

/// Room reserved for a call's keys and for its arguments (bytes, and how many), so that a
/// single lock's call writes each without growing it.
const KEY_BYTES: usize = 128;
const KEY_COUNT: usize = 4;
const ARG_BYTES: usize = 128;
const ARG_COUNT: usize = 8;

/// The length of a script's SHA1 in hex, and of `EVALSHA` and the key count around it.
const HEAD_BYTES: usize = 40 + "EVALSHA".len() + 20;

/// An EVALSHA of `script` with its keys and arguments, run with [`invoke`](Self::invoke)
/// or [`invoke_async`](Self::invoke_async) (which load the script when the server does
/// not know it, and send the call once more), or put in a pipeline with
/// [`eval_cmd`](Self::eval_cmd).
pub(crate) struct ScriptCall {
    script: &'static Script,
    keys: Cmd,
    args: Cmd,
}

impl std::fmt::Debug for ScriptCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptCall")
            .field("script", &self.script.get_hash())
            .field("keys", &self.keys.args_iter().len())
            .field("args", &self.args.args_iter().len())
            .finish()
    }
}

impl ScriptCall {
    /// A call of `script` with no keys or arguments yet.
    pub(crate) fn new(script: &'static Script) -> Self {
        ScriptCall {
            script,
            keys: Cmd::with_capacity(KEY_COUNT, KEY_BYTES),
            args: Cmd::with_capacity(ARG_COUNT, ARG_BYTES),
        }
    }

    /// Adds a key (`KEYS[n]` in the script, in the order added).
    pub(crate) fn key<T: ToRedisArgs>(&mut self, key: T) -> &mut Self {
        self.keys.arg(key);
        self
    }

    /// Adds an argument (`ARGV[n]` in the script, in the order added).
    pub(crate) fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Self {
        self.args.arg(arg);
        self
    }

    /// Adds an argument written with its `Display` (an owner token, a number), straight
    /// into the call's buffer.
    pub(crate) fn arg_fmt(&mut self, arg: impl std::fmt::Display) -> &mut Self {
        self.args.write_arg_fmt(arg);
        self
    }

    /// `EVALSHA <sha1> <key count> <keys> <args>`, built at its exact size.
    pub(crate) fn eval_cmd(&self) -> Cmd {
        let keys = self.keys.args_iter();
        let args = self.args.args_iter();
        let count = keys.len();
        let bytes: usize = keys
            .clone()
            .chain(args.clone())
            .map(|arg| match arg {
                Arg::Simple(bytes) => bytes.len(),
                _ => 0,
            })
            .sum();
        let mut cmd = Cmd::with_capacity(3 + count + args.len(), HEAD_BYTES + bytes);
        cmd.arg("EVALSHA").arg(self.script.get_hash()).arg(count);
        for arg in keys.chain(args) {
            if let Arg::Simple(bytes) = arg {
                cmd.arg(bytes);
            }
        }
        cmd
    }

    /// Runs the call on a blocking connection; a script the server does not know (a
    /// restart emptied its cache) is loaded and the call sent once more.
    pub(crate) fn invoke(&self, con: &mut dyn ConnectionLike) -> RedisResult<Value> {
        let cmd = self.eval_cmd();
        match cmd.query(con) {
            Err(err) if is_no_script(&err) => {
                self.load(con)?;
                cmd.query(con)
            }
            answer => answer,
        }
    }

    /// [`invoke`](Self::invoke) on an async connection.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn invoke_async(
        &self,
        con: &mut impl redis::aio::ConnectionLike,
    ) -> RedisResult<Value> {
        let cmd = self.eval_cmd();
        match cmd.query_async(con).await {
            Err(err) if is_no_script(&err) => {
                self.load_async(con).await?;
                cmd.query_async(con).await
            }
            answer => answer,
        }
    }

    /// Loads the script into the server's cache.
    pub(crate) fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        self.script.load(con).map(drop)
    }

    /// [`load`](Self::load) on an async connection.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn load_async(
        &self,
        con: &mut impl redis::aio::ConnectionLike,
    ) -> RedisResult<()> {
        self.script.load_async(con).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command as its arguments, each as text.
    fn words(cmd: &Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|arg| match arg {
                Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<cursor>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn the_command_is_the_one_redis_builds() {
        static SCRIPT: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new("return 1"));
        let mut ours = ScriptCall::new(&SCRIPT);
        let mut theirs = SCRIPT.key("k1");
        ours.key("k1");
        // Interleaved: keys stay before arguments, each in its own order.
        for i in 0..20u64 {
            ours.arg(i).key(format!("key-{i}")).arg("x".repeat(300));
            theirs.arg(i).key(format!("key-{i}")).arg("x".repeat(300));
        }
        let mut pipe = redis::pipe();
        pipe.invoke_script(&theirs);
        let mut expected = redis::pipe();
        expected.add_command(ours.eval_cmd());
        assert_eq!(
            pipe.get_packed_pipeline(),
            expected.get_packed_pipeline(),
            "{:?}",
            words(&ours.eval_cmd())
        );
        let none = ScriptCall::new(&SCRIPT).eval_cmd();
        assert_eq!(words(&none), ["EVALSHA", SCRIPT.get_hash(), "0"]);
    }
}
