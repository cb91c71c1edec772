//! Finding the test servers the README's test command starts.

/// The value of the environment variable `var` (a server's URL), or `None` after printing
/// a skip line. With `LEADER_TEST_REQUIRE_SERVERS=1` a missing variable is a failure.
///
/// # Panics
///
/// When the server is required and the variable is not set: a test that needs a server
/// must not pass without one in CI.
pub fn server_from_env(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Some(value),
        _ if std::env::var("LEADER_TEST_REQUIRE_SERVERS").as_deref() == Ok("1") => {
            panic!(
                "{var} is not set but LEADER_TEST_REQUIRE_SERVERS=1: start the servers with scripts/test.sh"
            )
        }
        _ => {
            eprintln!("skipped: {var} is not set (run scripts/test.sh to start the test servers)");
            None
        }
    }
}
