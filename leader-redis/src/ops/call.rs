//! [`ScriptCall`]: one EVALSHA as data, the way redis' `ScriptInvocation` builds one, but
//! written straight into the one command it sends.
//!
//! redis' invocation keeps every key and argument as a vector of its own and copies them
//! all into the command it sends: an acquire and a release cost two dozen allocations on
//! the client before a byte is sent, a share of every cycle that 64 tasks on one
//! connection feel (`--bench concurrency`). Here a call is the command itself (two
//! buffers, whatever its number of arguments), sent as it was built: its keys are
//! counted when it is made, so the `EVALSHA <sha1> <key count>` head comes first and the
//! keys, then the arguments, follow it.

use std::cell::Cell;

use redis::{Cmd, ConnectionLike, RedisResult, RedisWrite, Script, ToRedisArgs, Value};

use crate::sync_conn::is_no_script;

/// Room reserved for a call's keys and arguments together (bytes, and how many), so that
/// a single lock's call writes them without growing its buffers.
const CALL_BYTES: usize = 256;
const CALL_ARGS: usize = 12;

/// The length of a script's SHA1 in hex, and of `EVALSHA` and the key count around it.
const HEAD_BYTES: usize = 40 + "EVALSHA".len() + 20;

/// An EVALSHA of `script` with its keys and arguments, run with [`invoke`](Self::invoke)
/// or [`invoke_async`](Self::invoke_async) (which load the script when the server does
/// not know it, and send the call once more), or put in a pipeline with
/// [`eval_cmd`](Self::eval_cmd).
///
/// Made with the number of its keys; every key is added before the first argument. A
/// call built otherwise fails a debug assertion, so the tests, which send every
/// operation's call to a real server, catch it.
pub(crate) struct ScriptCall {
    script: &'static Script,
    cmd: Cmd,
    /// Keys declared in the head and not added yet.
    keys_left: usize,
}

impl std::fmt::Debug for ScriptCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptCall")
            .field("script", &self.script.get_hash())
            .field("words", &self.cmd.args_iter().len())
            .finish()
    }
}

impl ScriptCall {
    /// A call of `script` that will have `keys` keys, with none added yet.
    pub(crate) fn new(script: &'static Script, keys: usize) -> Self {
        let mut cmd = SPARE
            .try_with(Cell::take)
            .ok()
            .flatten()
            .unwrap_or_else(|| Cmd::with_capacity(3 + CALL_ARGS, HEAD_BYTES + CALL_BYTES));
        cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys);
        ScriptCall {
            script,
            cmd,
            keys_left: keys,
        }
    }

    /// Adds a key (`KEYS[n]` in the script, in the order added).
    pub(crate) fn key<T: ToRedisArgs>(&mut self, key: T) -> &mut Self {
        debug_assert!(self.keys_left > 0, "more keys than the call was made with");
        self.keys_left = self.keys_left.saturating_sub(1);
        self.cmd.arg(key);
        self
    }

    /// Adds an argument (`ARGV[n]` in the script, in the order added).
    pub(crate) fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Self {
        debug_assert_eq!(self.keys_left, 0, "an argument before the last key");
        self.cmd.arg(arg);
        self
    }

    /// Adds an argument written with its `Display` (an owner token, a number), straight
    /// into the call's buffer.
    pub(crate) fn arg_fmt(&mut self, arg: impl std::fmt::Display) -> &mut Self {
        debug_assert_eq!(self.keys_left, 0, "an argument before the last key");
        self.cmd.write_arg_fmt(arg);
        self
    }

    /// `EVALSHA <sha1> <key count> <keys> <args>`, for a pipeline.
    pub(crate) fn eval_cmd(&self) -> Cmd {
        self.command().clone()
    }

    /// The command as built, once every key it was made with has been added.
    fn command(&self) -> &Cmd {
        debug_assert_eq!(self.keys_left, 0, "fewer keys than the call was made with");
        &self.cmd
    }

    /// Runs the call on a blocking connection; a script the server does not know (a
    /// restart emptied its cache) is loaded and the call sent once more.
    pub(crate) fn invoke(&self, con: &mut dyn ConnectionLike) -> RedisResult<Value> {
        let cmd = self.command();
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
        let cmd = self.command();
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

impl Drop for ScriptCall {
    /// Keeps the command's buffers for the thread's next call, unless they held a batch
    /// or a long argument (a record's value): a thread keeps at most a few KiB.
    fn drop(&mut self) {
        if worth_keeping(&self.cmd) {
            let mut cmd = std::mem::take(&mut self.cmd);
            cmd.clear();
            // A thread that is exiting has no spare to keep: the buffers are freed.
            let _ = SPARE.try_with(|spare| spare.set(Some(cmd)));
        }
    }
}

/// The most bytes of words a call may have held for its buffers to be kept.
const SPARE_BYTES: usize = 4 * (HEAD_BYTES + CALL_BYTES);

/// `true` for a command of at most a single lock's words and [`SPARE_BYTES`] bytes.
fn worth_keeping(cmd: &Cmd) -> bool {
    let words = cmd.args_iter();
    words.len() <= 3 + CALL_ARGS
        && words
            .map(|word| match word {
                redis::Arg::Simple(bytes) => bytes.len(),
                _ => 0,
            })
            .sum::<usize>()
            <= SPARE_BYTES
}

thread_local! {
    /// The buffers of this thread's last single-lock call, cleared, for its next one: a
    /// call is built, sent and dropped before the next is built on the same thread, so
    /// one spare saves a cycle's four allocations (two buffers for each of two calls).
    /// A call's buffers are no longer used once it has been sent: the connection sends
    /// a copy packed for the wire.
    static SPARE: Cell<Option<Cmd>> = const { Cell::new(None) };
}

/// The most bytes [`write_arg`] assembles on the stack: a key of a name of 200 bytes with
/// the default prefix, or a release message of one (the buffer is zeroed on every call,
/// so it is no larger than the usual argument needs).
const STACK_ARG: usize = 256;

/// Writes into `out` the one argument that `fill` writes, assembled on the stack instead
/// of in a `String` of its own (a key from its parts, a release message). Too long to
/// fit, it writes nothing and returns the error, for the caller to write the argument
/// from a `String`.
pub(crate) fn write_arg<W: ?Sized + RedisWrite>(
    out: &mut W,
    fill: impl FnOnce(&mut &mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut stack = [0u8; STACK_ARG];
    let mut rest = &mut stack[..];
    fill(&mut rest)?;
    let len = STACK_ARG - rest.len();
    out.write_arg(&stack[..len]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use redis::Arg;

    use super::*;

    static SCRIPT: std::sync::LazyLock<Script> =
        std::sync::LazyLock::new(|| Script::new("return 1"));

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
        let mut ours = ScriptCall::new(&SCRIPT, 21);
        let mut theirs = SCRIPT.key("k1");
        ours.key("k1");
        for i in 0..20u64 {
            ours.key(format!("key-{i}"));
        }
        // Larger than the room reserved, so the buffers grow as they are written.
        for i in 0..20u64 {
            ours.arg(i).arg("x".repeat(300));
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
        let none = ScriptCall::new(&SCRIPT, 0).eval_cmd();
        assert_eq!(words(&none), ["EVALSHA", SCRIPT.get_hash(), "0"]);
    }

    #[test]
    fn a_call_built_after_another_was_dropped_holds_only_its_own_words() {
        let mut first = ScriptCall::new(&SCRIPT, 2);
        first.key("k1").key("k2").arg("a").arg(7u64);
        assert_eq!(words(&first.eval_cmd())[3..], ["k1", "k2", "a", "7"]);
        drop(first);
        // Built on the same thread: on the first call's buffers, cleared.
        let mut second = ScriptCall::new(&SCRIPT, 1);
        second.key("other").arg("b");
        assert_eq!(
            words(&second.eval_cmd()),
            ["EVALSHA", SCRIPT.get_hash(), "1", "other", "b"]
        );
        // A batch's call, too large to keep, is freed; the next call is built afresh.
        let mut batch = ScriptCall::new(&SCRIPT, 0);
        for i in 0..100u64 {
            batch.arg(i);
        }
        drop((second, batch));
        let third = ScriptCall::new(&SCRIPT, 0);
        assert_eq!(
            words(&third.eval_cmd()),
            ["EVALSHA", SCRIPT.get_hash(), "0"]
        );
    }

    #[test]
    fn only_a_single_locks_small_call_leaves_its_buffers() {
        let mut small = ScriptCall::new(&SCRIPT, 1);
        small.key("k").arg("v");
        assert!(worth_keeping(&small.cmd));
        let mut long = ScriptCall::new(&SCRIPT, 1);
        long.key("k").arg("v".repeat(SPARE_BYTES));
        assert!(!worth_keeping(&long.cmd), "a record's long value");
        let mut batch = ScriptCall::new(&SCRIPT, 0);
        for i in 0..=CALL_ARGS as u64 {
            batch.arg(i);
        }
        assert!(!worth_keeping(&batch.cmd), "a batch's many words");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "an argument before the last key")]
    fn an_argument_before_the_last_key_is_caught() {
        ScriptCall::new(&SCRIPT, 2).key("k1").arg("a").key("k2");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "more keys than the call was made with")]
    fn a_key_beyond_the_count_is_caught() {
        ScriptCall::new(&SCRIPT, 1).key("k1").key("k2");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "fewer keys than the call was made with")]
    fn a_call_short_of_its_keys_is_caught() {
        ScriptCall::new(&SCRIPT, 2).key("k1").eval_cmd();
    }
}
