//! [`redacted_url`]: a Redis URL as this crate's errors show it; and the parsing of a
//! Sentinel URL (`redis+sentinel://`), which the driver does not know.

use leader_core::__private::{unparsed_url, url_scheme};
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
/// // A Sentinel URL: the sentinels, the master's name and the database.
/// assert_eq!(
///     redacted_url("redis+sentinel://app:s3cret@10.0.0.1,10.0.0.2:5000/orders/1"),
///     "redis+sentinel://app:***@10.0.0.1:26379,10.0.0.2:5000/orders/1",
/// );
/// ```
pub fn redacted_url(url: &str) -> String {
    let shown = if SentinelUrl::is_sentinel(url) {
        SentinelUrl::parse(url).map_or_else(|_| unparsed_url(url), |parsed| parsed.shown())
    } else {
        match url.into_connection_info() {
            Ok(info) => rebuild(&info).unwrap_or_else(|| unparsed_url(url)),
            Err(_) => unparsed_url(url),
        }
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

/// The port of a sentinel the URL gives without one.
const SENTINEL_PORT: u16 = 26379;

/// A parsed `redis+sentinel://[user:password@]host[:port][,host[:port]...]/<master>[/db]`
/// (`rediss+sentinel://` for TLS to the sentinels and the servers).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SentinelUrl {
    pub(crate) tls: bool,
    /// The user info as written (still percent-encoded), for the servers' URLs.
    user_info: Option<String>,
    pub(crate) sentinels: Vec<(String, u16)>,
    pub(crate) master_name: String,
    pub(crate) db: i64,
}

impl std::fmt::Debug for SentinelUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl SentinelUrl {
    /// Whether `url` has a Sentinel scheme.
    pub(crate) fn is_sentinel(url: &str) -> bool {
        matches!(
            url_scheme(url).map(str::to_ascii_lowercase).as_deref(),
            Some("redis+sentinel" | "rediss+sentinel")
        )
    }

    /// Parses `url`; the error says what is wrong, without quoting the URL.
    pub(crate) fn parse(url: &str) -> Result<Self, &'static str> {
        let (scheme, rest) = url.trim().split_once("://").ok_or("not a URL")?;
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "redis+sentinel" => false,
            "rediss+sentinel" => true,
            _ => return Err("not a redis+sentinel:// or rediss+sentinel:// URL"),
        };
        if rest.contains(['?', '#']) {
            return Err("a Sentinel URL takes no query or fragment");
        }
        let (authority, path) = rest
            .split_once('/')
            .ok_or("the master's name is missing (`/<master-name>` after the sentinels)")?;
        let (user_info, hosts) = match authority.rsplit_once('@') {
            Some((info, hosts)) => (Some(info.to_owned()), hosts),
            None => (None, authority),
        };
        let sentinels = hosts
            .split(',')
            .map(host_port)
            .collect::<Result<Vec<_>, _>>()?;
        let mut parts = path.splitn(2, '/');
        let master_name = percent_decode(parts.next().unwrap_or_default())?;
        if master_name.is_empty() {
            return Err("the master's name is missing (`/<master-name>` after the sentinels)");
        }
        let db = match parts.next().map(|db| db.trim_end_matches('/')) {
            None | Some("") => 0,
            Some(db) => db
                .parse::<i64>()
                .ok()
                .filter(|db| *db >= 0)
                .ok_or("the database after the master's name is not a number")?,
        };
        Ok(SentinelUrl {
            tls,
            user_info,
            sentinels,
            master_name,
            db,
        })
    }

    /// The URL of the sentinel `(host, port)`: no credentials (the URL's are the servers').
    pub(crate) fn sentinel_url(&self, (host, port): &(String, u16)) -> String {
        format!("{}://{}:{port}/", self.node_scheme(), bracketed(host))
    }

    /// The URL of the data server at `host:port`, with the URL's credentials and database.
    pub(crate) fn server_url(&self, host: &str, port: u16) -> String {
        let auth = self
            .user_info
            .as_deref()
            .map(|info| format!("{info}@"))
            .unwrap_or_default();
        format!(
            "{}://{auth}{}:{port}/{}",
            self.node_scheme(),
            bracketed(host),
            self.db
        )
    }

    fn node_scheme(&self) -> &'static str {
        if self.tls { "rediss" } else { "redis" }
    }

    /// The URL as errors show it: the password masked, a user name alone too.
    pub(crate) fn shown(&self) -> String {
        let auth = match self.user_info.as_deref().map(|info| info.split_once(':')) {
            Some(Some((user, _))) => format!("{user}:***@"),
            Some(None) => "***@".to_owned(),
            None => String::new(),
        };
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|(host, port)| format!("{}:{port}", bracketed(host)))
            .collect();
        let scheme = if self.tls {
            "rediss+sentinel"
        } else {
            "redis+sentinel"
        };
        let name: String = self
            .master_name
            .chars()
            .map(|c| if c.is_ascii_graphic() { c } else { '?' })
            .collect();
        format!("{scheme}://{auth}{}/{name}/{}", hosts.join(","), self.db)
    }
}

/// `host[:port]` or `[v6]:port` of one sentinel.
fn host_port(text: &str) -> Result<(String, u16), &'static str> {
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let (host, rest) = bracketed
            .split_once(']')
            .ok_or("an IPv6 address without its `]`")?;
        (host, rest.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    if host.is_empty() || host.contains(['@', '/', ' ']) {
        return Err("a sentinel's host is empty or not a host name");
    }
    let port = match port {
        None => SENTINEL_PORT,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|port| *port != 0)
            .ok_or("a sentinel's port is not a number from 1 to 65535")?,
    };
    Ok((host.to_owned(), port))
}

fn bracketed(host: &str) -> String {
    host_part(host)
}

/// `%XX` escapes decoded (the master's name may hold any character).
fn percent_decode(text: &str) -> Result<String, &'static str> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'%' {
            let hex = bytes
                .get(at + 1..at + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or("a `%` in the master's name is not followed by two hex digits")?;
            out.push(hex);
            at += 3;
        } else {
            out.push(byte);
            at += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the master's name is not UTF-8")
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

    #[test]
    fn sentinel_urls_are_parsed() {
        let url =
            SentinelUrl::parse("redis+sentinel://u:p%40w@a,b:5000,[::1]:7/my%20set/3").unwrap();
        assert!(!url.tls);
        assert_eq!(
            url.sentinels,
            [
                ("a".to_owned(), 26379),
                ("b".to_owned(), 5000),
                ("::1".to_owned(), 7)
            ]
        );
        assert_eq!(url.master_name, "my set");
        assert_eq!(url.db, 3);
        assert_eq!(
            url.server_url("10.0.0.9", 6380),
            "redis://u:p%40w@10.0.0.9:6380/3"
        );
        assert_eq!(url.sentinel_url(&url.sentinels[2]), "redis://[::1]:7/");
        assert_eq!(
            url.shown(),
            "redis+sentinel://u:***@a:26379,b:5000,[::1]:7/my?set/3"
        );
        let tls = SentinelUrl::parse("rediss+sentinel://h/m").unwrap();
        assert!(tls.tls);
        assert_eq!(tls.db, 0);
        assert_eq!(tls.server_url("h", 1), "rediss://h:1/0");
        for bad in [
            "redis+sentinel://h",
            "redis+sentinel://h/",
            "redis+sentinel://h:0/m",
            "redis+sentinel://h:x/m",
            "redis+sentinel://h,/m",
            "redis+sentinel://h/m/x",
            "redis+sentinel://h/m?db=2",
            "redis+sentinel://h/%zz",
            "redis://h/m",
        ] {
            assert!(SentinelUrl::parse(bad).is_err(), "{bad}");
        }
        let shown = redacted_url("redis+sentinel://:hunter2@h/m?x");
        assert_eq!(shown, "redis+sentinel://…");
        assert_eq!(
            redacted_url("rediss+sentinel://tok3n@h:1/m"),
            "rediss+sentinel://***@h:1/m/0"
        );
    }
}
