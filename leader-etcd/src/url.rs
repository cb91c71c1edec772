//! `etcd://` and `etcds://` URLs: what they name, and [`redacted_url`], a URL as this
//! crate's errors show it.
//!
//! `etcd[s]://[user[:password]@]host[:port][,host[:port]...][/prefix]`: the members to
//! talk to (port 2379 when left out; IPv6 addresses in brackets), the credentials for
//! etcd's authentication, and optionally the key prefix. The user info runs to the last
//! `@`, so a password may hold `@`, `/` or `:`; user, password and prefix may be
//! percent-encoded.

use leader_core::__private::unparsed_url;
use leader_core::UrlSecrets;

use crate::error::ConnectError;

/// etcd's client port.
const DEFAULT_PORT: u16 = 2379;

/// What an etcd URL names.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// Each member as `host:port`.
    pub(crate) members: Vec<String>,
    /// Whether to speak TLS (`etcds://`).
    pub(crate) tls: bool,
    /// User and password for etcd's authentication.
    pub(crate) credentials: Option<(String, String)>,
    /// The key prefix, when the URL has a path.
    pub(crate) prefix: Option<String>,
}

impl Target {
    /// Reads `url`.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidUrl`], saying what is wrong without quoting the password.
    pub(crate) fn parse(url: &str) -> Result<Self, ConnectError> {
        let invalid = |why: &str| ConnectError::InvalidUrl(why.to_owned());
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid("expected etcd://host:port[,host:port...]"))?;
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "etcd" => false,
            "etcds" => true,
            _ => return Err(invalid("the scheme must be etcd:// or etcds://")),
        };
        let (userinfo, rest) = match rest.rfind('@') {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        let credentials = userinfo
            .map(|info| {
                let (user, password) = info.split_once(':').unwrap_or((info, ""));
                let user =
                    decode(user).ok_or_else(|| invalid("the user name is not valid UTF-8"))?;
                let password =
                    decode(password).ok_or_else(|| invalid("the password is not valid UTF-8"))?;
                if user.is_empty() {
                    return Err(invalid("a password needs a user name"));
                }
                Ok((user, password))
            })
            .transpose()?;
        if rest.contains('?') || rest.contains('#') {
            return Err(invalid("etcd URLs take no query or fragment"));
        }
        let (hosts, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], Some(&rest[slash + 1..])),
            None => (rest, None),
        };
        let members = hosts
            .split(',')
            .map(member)
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let prefix = match path.filter(|path| !path.is_empty()) {
            Some(path) => {
                Some(decode(path).ok_or_else(|| invalid("the prefix is not valid UTF-8"))?)
            }
            None => None,
        };
        Ok(Target {
            members,
            tls,
            credentials,
            prefix,
        })
    }

    /// The URL as errors may show it: the password masked.
    pub(crate) fn shown(&self) -> String {
        let scheme = if self.tls { "etcds" } else { "etcd" };
        let auth = match &self.credentials {
            Some((user, password)) if password.is_empty() => format!("{}@", encode(user)),
            Some((user, _)) => format!("{}:***@", encode(user)),
            None => String::new(),
        };
        let prefix = self
            .prefix
            .as_ref()
            .map(|prefix| format!("/{}", encode(prefix)))
            .unwrap_or_default();
        format!("{scheme}://{auth}{}{prefix}", self.members.join(","))
    }

    /// Each member as the client's endpoint (`http://host:port` or `https://...`).
    pub(crate) fn endpoints(&self) -> Vec<String> {
        let scheme = if self.tls { "https" } else { "http" };
        self.members
            .iter()
            .map(|member| format!("{scheme}://{member}"))
            .collect()
    }
}

/// One `host[:port]`, checked.
fn member(text: &str) -> Result<String, &'static str> {
    if text.is_empty() {
        return Err("a member address is empty");
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address is missing its `]`")?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or("expected `:port` after `]`")?,
            ),
        };
        (format!("[{host}]"), port)
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (text.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("a member address has no host");
    }
    if host.contains(|c: char| c.is_whitespace() || c == '@' || c == '%') {
        return Err("a member host holds a character hosts do not");
    }
    let port = match port {
        Some(port) => port
            .parse::<u16>()
            .map_err(|_| "a member port is not a number from 1 to 65535")?,
        None => DEFAULT_PORT,
    };
    if port == 0 {
        return Err("a member port is not a number from 1 to 65535");
    }
    Ok(format!("{host}:{port}"))
}

/// Percent-decoding; `None` when the result is not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Percent-encoding of what a URL part cannot hold as it is.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~!$&'()*+;=/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `url` as errors show it: rebuilt from what it names with the password masked
/// (`etcd://app:***@h1:2379,h2:2379/billing`); text that does not parse shows its
/// scheme only (`etcd://…`): where a password ends in such text is anyone's guess.
///
/// # Examples
///
/// ```
/// use leader_etcd::redacted_url;
///
/// assert_eq!(
///     redacted_url("etcd://app:pa/ss@10.0.0.1:2379,10.0.0.2/billing"),
///     "etcd://app:***@10.0.0.1:2379,10.0.0.2:2379/billing"
/// );
/// assert_eq!(redacted_url("etcds://app:secret@db:notaport"), "etcds://…");
/// ```
pub fn redacted_url(url: &str) -> String {
    let shown = match Target::parse(url) {
        Ok(target) => target.shown(),
        Err(_) => unparsed_url(url),
    };
    UrlSecrets::from_url(url).mask(&shown).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_credentials_and_prefix() {
        let target = Target::parse("etcd://app:p%40ss@a:1,[::1]:2,b/ops%2Flocks")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(target.members, ["a:1", "[::1]:2", "b:2379"]);
        assert!(!target.tls);
        assert_eq!(
            target.credentials,
            Some(("app".to_owned(), "p@ss".to_owned()))
        );
        assert_eq!(target.prefix.as_deref(), Some("ops/locks"));
        assert_eq!(target.endpoints()[0], "http://a:1");
        let target = Target::parse("ETCDS://h").unwrap_or_else(|e| panic!("{e}"));
        assert!(target.tls);
        assert_eq!(target.endpoints(), ["https://h:2379"]);
        assert_eq!(target.credentials, None);
        assert_eq!(target.prefix, None);
    }

    #[test]
    fn a_password_may_hold_at_signs_and_slashes() {
        let target = Target::parse("etcd://app:a@b/c:d@h:1/pre").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            target.credentials,
            Some(("app".to_owned(), "a@b/c:d".to_owned()))
        );
        assert_eq!(target.members, ["h:1"]);
        assert_eq!(
            redacted_url("etcd://app:a@b/c:d@h:1/pre"),
            "etcd://app:***@h:1/pre"
        );
    }

    #[test]
    fn bad_urls_are_refused_without_the_password() {
        for url in [
            "redis://h:1",
            "etcd://",
            "etcd://h:port",
            "etcd://h:0",
            "etcd://a,,b",
            "etcd://h:1?prefix=x",
            "etcd://:hunter2@h:1",
            "etcd://[::1",
            "etcd//h",
        ] {
            match Target::parse(url) {
                Err(ConnectError::InvalidUrl(why)) => assert!(!why.contains("hunter2"), "{why}"),
                other => panic!("{url}: {:?}", other.map(|t| t.shown())),
            }
        }
    }

    #[test]
    fn shown_urls_mask_the_password() {
        for (url, shown) in [
            ("etcd://app:hunter2@h:1", "etcd://app:***@h:1"),
            // A user info without `:` may be a password alone (as Redis takes it): masked too.
            ("etcd://app@h:1", "etcd://***@h:1"),
            ("etcd://h", "etcd://h:2379"),
            ("etcds://u:p@a:1,b:2/x", "etcds://u:***@a:1,b:2/x"),
            ("etcd://u:hunter2@h:x", "etcd://…"),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
    }
}
