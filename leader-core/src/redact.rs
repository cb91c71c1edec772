//! Keeping passwords out of what the library shows: the parts of a connection URL that may
//! be secret ([`UrlSecrets`]), a driver's error with them masked ([`RedactedError`]), and
//! what is shown of a URL no driver parsed ([`unparsed_url`]).
//!
//! The backends show a URL rebuilt from what their driver parsed (scheme, user, hosts,
//! ports, database: never a password). Driver messages are masked with [`UrlSecrets`],
//! which takes every reading of the URL that some driver makes, since a password the user
//! did not percent-encode is split differently by each: redis-rs (the `url` crate) ends
//! the user info at the last `@` before the first `/`, `?` or `#`; tokio-postgres at the
//! first `@` anywhere; the MongoDB driver at the last `@` before the first `?`.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

/// Query and `key=value` parameters whose value is a secret (compared case-insensitively):
/// libpq's `password` and `sslpassword`, redis-rs' `pass` (Unix sockets), MongoDB's
/// `proxyPassword` and `tlsCertificateKeyFilePassword`.
const SECRET_KEYS: &[&str] = &[
    "password",
    "sslpassword",
    "pass",
    "proxypassword",
    "tlscertificatekeyfilepassword",
];

/// Where a piece of a secret may end in some reading of a URL or a `key=value` string.
const DELIMITERS: &[char] = &[
    '/', '?', '#', '@', '&', '=', ':', ',', ';', '\'', '\\', '[', ']',
];

/// Fragments shorter than this are not masked in free text: masking every `a` or `db` would
/// garble every message, and a secret that short protects nothing.
const MIN_FRAGMENT: usize = 3;

/// The parts of a connection URL (or of a PostgreSQL `key=value` string) that could be a
/// secret, however a driver reads it, to mask in text that may quote them: the password
/// of the user info under each driver's rule for where it ends (a lone user info too on
/// Redis and unknown schemes, where it may be a token), the values of `password=`,
/// `sslpassword=`, `pass=`, `proxyPassword=` and `tlsCertificateKeyFilePassword=`
/// parameters, each raw and percent-decoded, and their pieces between URL delimiters.
///
/// `Debug` shows only how many parts were found.
///
/// # Examples
///
/// ```
/// use leader_core::UrlSecrets;
///
/// // tokio-postgres takes the user info up to the first `@`: the password is `pa/ss`.
/// let secrets = UrlSecrets::from_url("postgres://app:pa/ss@127.0.0.1:1/app");
/// assert_eq!(
///     secrets.mask("password authentication failed for `pa/ss`"),
///     "password authentication failed for `***`"
/// );
/// let secrets = UrlSecrets::from_url("host=db user=app password='it''s secret'");
/// assert!(!secrets.mask("it''s secret").contains("secret"));
/// ```
#[derive(Clone, Default)]
pub struct UrlSecrets {
    /// Longest first, so that a part is masked before the pieces inside it.
    parts: Vec<String>,
}

impl UrlSecrets {
    /// The secret parts of `url`.
    pub fn from_url(url: &str) -> Self {
        let mut found = Found::default();
        let (scheme, rest) = match url.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => (String::new(), url),
        };
        // A lone user info is a user name for PostgreSQL and MongoDB, and may be a token
        // elsewhere (`redis://<token>@host`).
        let lone_is_secret = !(scheme.starts_with("postgres") || scheme.starts_with("mongodb"));
        let user_info = |found: &mut Found, info: Option<&str>| {
            if let Some(info) = info {
                match info.split_once(':') {
                    Some((_, password)) => found.push(password),
                    None if lone_is_secret => found.push(info),
                    None => {}
                }
            }
        };
        // redis-rs (the `url` crate): the authority ends at `/`, `?` or `#`; its last `@`.
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        user_info(&mut found, authority.rfind('@').map(|at| &authority[..at]));
        // tokio-postgres: the first `@` anywhere.
        user_info(&mut found, rest.find('@').map(|at| &rest[..at]));
        // The MongoDB driver: the last `@` before the options.
        let before_options = &rest[..rest.find('?').unwrap_or(rest.len())];
        user_info(
            &mut found,
            before_options.rfind('@').map(|at| &before_options[..at]),
        );
        // The widest reading: everything up to the last `@`, and, for text that is almost
        // a URL (`redis:/user:pw@host`), what stands between the last `/` and it.
        if let Some(at) = rest.rfind('@') {
            user_info(&mut found, Some(&rest[..at]));
        }
        if let Some(at) = url.rfind('@') {
            let start = url[..at].rfind('/').map_or(0, |slash| slash + 1);
            user_info(&mut found, Some(&url[start..at]));
        }
        parameters(&mut found, url);
        found.finish()
    }

    /// `text` with every secret part of the URL replaced by `***`.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut masked = Cow::Borrowed(text);
        for part in &self.parts {
            if masked.contains(part.as_str()) {
                masked = Cow::Owned(masked.replace(part.as_str(), "***"));
            }
        }
        masked
    }

    /// Whether no secret part was found.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

impl fmt::Debug for UrlSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UrlSecrets")
            .field("parts", &self.parts.len())
            .finish()
    }
}

/// The candidates found so far.
#[derive(Default)]
struct Found(Vec<String>);

impl Found {
    /// `secret` raw and percent-decoded, and the pieces of both between delimiters.
    fn push(&mut self, secret: &str) {
        let decoded = percent_decode(secret);
        for form in [secret, decoded.as_str()] {
            self.add(form);
            for piece in form.split(|c: char| DELIMITERS.contains(&c) || c.is_whitespace()) {
                self.add(piece);
            }
        }
    }

    fn add(&mut self, part: &str) {
        if part.chars().count() >= MIN_FRAGMENT && !self.0.iter().any(|known| known == part) {
            self.0.push(part.to_owned());
        }
    }

    fn finish(mut self) -> UrlSecrets {
        self.0
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        UrlSecrets { parts: self.0 }
    }
}

/// The values of the [`SECRET_KEYS`] parameters, as a URL query (`?password=...&...`) or
/// a `key=value` string (`password='...'`) may give them: up to the next `&`, the next
/// blank, the end (a value whose `&` was not encoded), or a quoted value's closing quote.
fn parameters(found: &mut Found, text: &str) {
    let lower = text.to_ascii_lowercase();
    for key in SECRET_KEYS {
        let mut from = 0;
        while let Some(offset) = lower[from..].find(key) {
            let start = from + offset;
            from = start + key.len();
            let at_boundary = lower[..start]
                .chars()
                .next_back()
                .is_none_or(|c| matches!(c, '?' | '&' | ';' | '#' | '/') || c.is_whitespace());
            // A `key = value` string may have blanks around the `=`; the lowercase copy
            // keeps the byte offsets of the text.
            let Some(value) = text[from..].trim_start().strip_prefix('=') else {
                continue;
            };
            if !at_boundary {
                continue;
            }
            let value = value.trim_start();
            if let Some(quoted) = value.strip_prefix('\'') {
                found.push(&unquote(quoted));
            }
            for end in ['&', '#'] {
                found.push(&value[..value.find(end).unwrap_or(value.len())]);
            }
            let word_end = value.find(char::is_whitespace).unwrap_or(value.len());
            found.push(&value[..word_end]);
            found.push(value);
        }
    }
}

/// A quoted `key=value` value, after its opening quote, up to the closing one: `\x` is `x`
/// (what tokio-postgres and libpq read).
fn unquote(quoted: &str) -> String {
    let mut value = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => break,
            '\\' => value.extend(chars.next()),
            c => value.push(c),
        }
    }
    value
}

/// `%XX` sequences decoded (invalid UTF-8 replaced), the rest as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What is shown of a URL that no driver parsed: its scheme only (`redis://…`), or `…`
/// when it has none that looks like one. Where the password ends in text that does not
/// parse is anyone's guess, so no other part is shown; the driver's message (masked with
/// [`UrlSecrets`]) says what is wrong.
///
/// # Examples
///
/// ```
/// use leader_core::__private::unparsed_url;
///
/// assert_eq!(unparsed_url("redis://:pa#ss@127.0.0.1/"), "redis://…");
/// assert_eq!(unparsed_url("host=db password=secret"), "…");
/// ```
pub fn unparsed_url(url: &str) -> String {
    match url_scheme(url) {
        Some(scheme) => format!("{scheme}://…"),
        None => "…".to_owned(),
    }
}

/// The scheme of `scheme://...`, when what stands before `://` is one (a DSN may hold a
/// `://` further on, after a password).
///
/// # Examples
///
/// ```
/// use leader_core::__private::url_scheme;
///
/// assert_eq!(url_scheme("Redis+Cluster://a:1"), Some("Redis+Cluster"));
/// assert_eq!(url_scheme("host=db password=x options=a://b"), None);
/// ```
pub fn url_scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.trim().split_once("://")?;
    is_scheme(scheme).then_some(scheme)
}

/// A URL scheme as RFC 3986 spells it (a letter, then letters, digits, `+`, `-`, `.`), of
/// reasonable length.
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    text.len() <= 32
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// A driver's error, its message and those of its causes on one line with the secrets of
/// a URL masked: what the backends report instead of the driver's own error when its text
/// may quote the URL (a rejected connection string). It has no `source`: the causes are
/// in the message, masked, and the originals are dropped.
///
/// # Examples
///
/// ```
/// use leader_core::{RedactedError, UrlSecrets};
///
/// let url = "mongodb://app:pa?ss@db/";
/// let driver = std::io::Error::other("invalid server address app:pa?ss@db");
/// let err = RedactedError::new(&driver, &UrlSecrets::from_url(url));
/// assert_eq!(err.to_string(), "invalid server address app:***@db");
/// assert!(std::error::Error::source(&err).is_none());
/// ```
#[derive(Clone)]
pub struct RedactedError {
    message: String,
}

impl RedactedError {
    /// `err` and its causes, masked with `secrets`.
    pub fn new(err: &(dyn StdError + 'static), secrets: &UrlSecrets) -> Self {
        let mut message = err.to_string();
        let mut cause = err.source();
        while let Some(err) = cause {
            let text = err.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            cause = err.source();
        }
        RedactedError {
            message: secrets.mask(&message).into_owned(),
        }
    }
}

impl fmt::Display for RedactedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for RedactedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedactedError").field(&self.message).finish()
    }
}

impl StdError for RedactedError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(url: &str) -> String {
        UrlSecrets::from_url(url).mask(url).into_owned()
    }

    #[test]
    fn every_reading_of_the_user_info_is_masked() {
        for (url, secret) in [
            ("redis://user:secret@host:6379/0", "secret"),
            ("redis://:pa#ss@127.0.0.1/", "pa#ss"),
            ("postgres://app:pa/ss@127.0.0.1:1/app", "pa/ss"),
            ("postgres://app:pa?ss@127.0.0.1:1/app", "pa?ss"),
            ("mongodb://u:p%40ss@h1,h2/?tls=true", "p%40ss"),
            ("mongodb://u:p%40ss@h1,h2/?tls=true", "p@ss"),
            ("redis+cluster://:pw-1@a:7000,b:7001", "pw-1"),
            ("redis://token-123@host/", "token-123"),
            ("redis:/user:secret@h/", "secret"),
            ("user:secret@h", "secret"),
            ("postgres://app:se@cret@h/db", "se@cret"),
        ] {
            let text = masked(url);
            assert!(!text.contains(secret), "{url} → {text}");
            assert!(text.contains("***"), "{url} → {text}");
        }
        // A user name is not a secret on PostgreSQL and MongoDB.
        assert_eq!(masked("postgres://app@db/app"), "postgres://app@db/app");
        assert!(UrlSecrets::from_url("redis://127.0.0.1/").is_empty());
    }

    #[test]
    fn password_parameters_are_masked() {
        for (text, secret) in [
            (
                "postgres://db/app?password=hunter2&sslmode=disable",
                "hunter2",
            ),
            ("postgres://db/app?sslpassword=hunter2", "hunter2"),
            ("postgres://db/app?password=hun&ter2", "hun&ter2"),
            ("postgres://db/app?PASSWORD=hunter%202", "hunter 2"),
            ("redis+unix:///tmp/redis.sock?pass=hunter2", "hunter2"),
            ("host=db user=app password=hunter2 port=1", "hunter2"),
            ("host=db password = 'hun ter\\'2' port=1", "hun ter'2"),
            ("host=db password=hun\\ ter2", "hun\\ ter2"),
            ("mongodb://h/?proxyPassword=hunter2", "hunter2"),
        ] {
            let secrets = UrlSecrets::from_url(text);
            let shown = secrets.mask(text);
            assert!(!shown.contains(secret), "{text} → {shown}");
            assert!(!secrets.mask(secret).contains(secret), "{text}");
        }
        // Only whole keys: `mypassword=` is not `password=`.
        assert!(UrlSecrets::from_url("postgres://db/app?mypassword=x").is_empty());
    }

    #[test]
    fn short_fragments_are_left_alone() {
        let secrets = UrlSecrets::from_url("redis://:a/bc@host/");
        assert_eq!(secrets.mask("a bc"), "a bc");
        assert_eq!(format!("{secrets:?}"), "UrlSecrets { parts: 1 }");
    }

    #[test]
    fn unparsed_urls_show_their_scheme_only() {
        assert_eq!(
            unparsed_url("rediss+cluster://:pw@a:1"),
            "rediss+cluster://…"
        );
        assert_eq!(unparsed_url("not a url"), "…");
        assert_eq!(unparsed_url("pass word://x"), "…");
    }
}
