//! URL forms with a password in them, for tests that prove no password is shown: every form
//! each driver accepts (user info raw and percent-encoded, query parameters, `key=value`
//! strings), written once for the library's tests and the CLI's.

/// Every character but ASCII letters, digits and `-._~`, percent-encoded.
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A `key=value` value in quotes, `'` and `\` escaped (what libpq reads).
pub fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', r"\\").replace('\'', r"\'"))
}

/// A `key=value` value without quotes: blanks, quotes and `\` escaped.
pub fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            ' ' | '\'' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

/// Every URL form the drivers accept with `password` in it, raw (`p`) and encoded (`e`),
/// each naming a server that does not listen (port 1 on 127.0.0.1) or none at all.
///
/// # Examples
///
/// ```
/// let urls = leader_rig::secret_urls::urls("pa/ss");
/// assert!(urls.iter().all(|url| url.contains("pa/ss") || url.contains("pa%2Fss")));
/// ```
pub fn urls(password: &str) -> Vec<String> {
    let (p, e) = (password, encode(password));
    let mongo = "serverSelectionTimeoutMS=200&connectTimeoutMS=200";
    vec![
        // redis-rs: user info, TLS, cluster (the facade's), Unix sockets' `pass`, a query.
        format!("redis://:{p}@127.0.0.1:1/"),
        format!("redis://app:{p}@127.0.0.1:1/0"),
        format!("redis://:{e}@127.0.0.1:1/"),
        format!("redis://app:{e}@127.0.0.1:1/"),
        format!("rediss://app:{p}@127.0.0.1:1/"),
        format!("rediss://:{e}@127.0.0.1:1/"),
        format!("redis+cluster://app:{p}@127.0.0.1:1,127.0.0.1:2/"),
        format!("redis+cluster://:{e}@127.0.0.1:1,127.0.0.1:2"),
        format!("rediss+cluster://app:{e}@127.0.0.1:1"),
        format!("redis://127.0.0.1:1/?password={e}"),
        format!("redis+unix:///tmp/leader-no-such.sock?pass={e}"),
        format!("redis+unix:///tmp/leader-no-such.sock?pass={p}"),
        // tokio-postgres: user info (to the first `@`), query parameters, key=value.
        format!("postgres://app:{p}@127.0.0.1:1/app"),
        format!("postgresql://app:{e}@127.0.0.1:1/app"),
        format!("postgres://app@127.0.0.1:1/app?password={e}"),
        format!("postgres://app@127.0.0.1:1/app?password={p}"),
        format!("postgres://app@127.0.0.1:1/app?sslmode=disable&sslpassword={e}"),
        format!("postgres://app:{e}@127.0.0.1:1/app?sslmode=require"),
        format!("host=127.0.0.1 port=1 user=app password={}", quoted(p)),
        format!("host=127.0.0.1 port=1 user=app password={}", escaped(p)),
        format!("host=127.0.0.1 port=1 sslpassword={} user=app", quoted(p)),
        // The MongoDB driver: user info (encoded as it requires, and raw), SRV, options.
        format!("mongodb://app:{e}@127.0.0.1:1/?{mongo}"),
        format!("mongodb://app:{p}@127.0.0.1:1/?{mongo}"),
        format!("mongodb://127.0.0.1:1/?{mongo}&password={e}"),
        format!("mongodb+srv://app:{p}@cluster0.example.invalid/"),
        // A port with SRV is refused before any lookup.
        format!("mongodb+srv://app:{e}@cluster0.example.invalid:1/"),
        // etcd: user info (to the last `@`, raw and encoded), TLS, several members, a prefix.
        format!("etcd://app:{p}@127.0.0.1:1"),
        format!("etcd://app:{e}@127.0.0.1:1,127.0.0.1:2/leader"),
        format!("etcds://app:{e}@127.0.0.1:1"),
        format!("etcd://app:{p}@127.0.0.1:1/ops/locks"),
        // Not a URL, or not one we know.
        format!("mysql://app:{p}@127.0.0.1:1/app"),
        format!("127.0.0.1:1 password={p}"),
    ]
}
