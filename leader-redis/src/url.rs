//! [`redacted_url`]: a Redis URL as this crate's errors show it.

use leader_core::__private::unparsed_url;
use leader_core::UrlSecrets;
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo};

/// `url` as errors show it: rebuilt from what the redis driver parses (scheme, host, port,
/// database, and `user:***@` where the URL gives a password, `***@` for a user name alone,
/// which may be a token), so no password is shown however it is written. A URL the driver
/// does not parse shows its scheme only (`rediss://…`): where a password that was not
/// percent-encoded ends in such text is anyone's guess.
///
/// # Examples
///
/// ```
/// use leader_redis::redacted_url;
///
/// assert_eq!(redacted_url("redis://app:s3cret@127.0.0.1/2"), "redis://app:***@127.0.0.1:6379/2");
/// // An unencoded `#` ends the host part for the driver: nothing parses, nothing is shown.
/// assert_eq!(redacted_url("redis://:pa#ss@127.0.0.1/"), "redis://…");
/// ```
pub fn redacted_url(url: &str) -> String {
    let shown = match url.into_connection_info() {
        Ok(info) => rebuild(&info).unwrap_or_else(|| unparsed_url(url)),
        Err(_) => unparsed_url(url),
    };
    // What the driver parsed as a host or a user name may still hold a piece of a password
    // written without encoding (`redis://u:p@ss@h`): masked too.
    UrlSecrets::from_url(url).mask(&shown).into_owned()
}

fn rebuild(info: &ConnectionInfo) -> Option<String> {
    let settings = info.redis_settings();
    let auth = match (settings.username(), settings.password()) {
        (user, Some(_)) => format!("{}:***@", user.unwrap_or_default()),
        (Some(_), None) => "***@".to_owned(),
        (None, None) => String::new(),
    };
    let db = settings.db();
    Some(match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("redis://{auth}{}:{port}/{db}", host_part(host)),
        ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            ..
        } => {
            let fragment = if *insecure { "#insecure" } else { "" };
            format!("rediss://{auth}{}:{port}/{db}{fragment}", host_part(host))
        }
        ConnectionAddr::Unix(path) => format!("redis+unix://{}?db={db}", path.display()),
        _ => return None,
    })
}

/// An IPv6 address in brackets, as a URL writes it.
fn host_part(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_rebuilt_without_their_password() {
        for (url, shown) in [
            ("redis://127.0.0.1", "redis://127.0.0.1:6379/0"),
            ("redis://:pw-123@h:7000/3", "redis://:***@h:7000/3"),
            ("redis://app:p%2Fw%40d@h/", "redis://app:***@h:6379/0"),
            ("redis://token-123@h/", "redis://***@h:6379/0"),
            ("redis://[::1]:6380", "redis://[::1]:6380/0"),
            (
                "redis+unix:///tmp/r.sock?db=2&pass=hunter2",
                "redis+unix:///tmp/r.sock?db=2",
            ),
            ("redis://u:pa/ss@h/", "redis://…"),
            ("redis://h/notadb", "redis://…"),
            ("mysql://u:pw@h/", "…"),
        ] {
            let got = redacted_url(url);
            let expected = if url.starts_with("mysql") {
                "mysql://…"
            } else {
                shown
            };
            assert_eq!(got, expected, "{url}");
        }
        // A password with an unencoded `@`: the driver's user name holds a piece of it.
        let shown = redacted_url("redis://u:secret@word@h/");
        assert!(
            !shown.contains("secret") && !shown.contains("word"),
            "{shown}"
        );
    }
}
