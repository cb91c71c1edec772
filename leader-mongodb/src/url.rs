//! [`redacted_url`]: a MongoDB connection string as this crate's errors show it.

use leader_core::__private::unparsed_url;
use leader_core::UrlSecrets;
use mongodb::options::{ConnectionString, HostInfo};

/// `uri` as errors show it: rebuilt from what the MongoDB driver parses (the scheme, user
/// with `:***` where a password is given, hosts, default database; no options, since some
/// hold secrets such as `proxyPassword`), so no password is shown however it is written.
/// A connection string the driver does not parse shows its scheme only (`mongodb://…`):
/// where a password that was not percent-encoded ends in such text is anyone's guess.
/// Parsing resolves nothing: a `mongodb+srv://` name is shown as given.
///
/// # Examples
///
/// ```
/// use leader_mongodb::redacted_url;
///
/// assert_eq!(redacted_url("mongodb://app:s3cret@h1,h2:27018/locks?tls=true"), "mongodb://app:***@h1:27017,h2:27018/locks");
/// // The driver refuses an unencoded `/` in a password: nothing of it is shown.
/// assert_eq!(redacted_url("mongodb://app:pa/ss@127.0.0.1:1/"), "mongodb://…");
/// ```
pub fn redacted_url(uri: &str) -> String {
    let shown = match ConnectionString::parse(uri) {
        Ok(parsed) => rebuild(&parsed).unwrap_or_else(|| unparsed_url(uri)),
        Err(_) => unparsed_url(uri),
    };
    // A host the driver parsed may still hold a piece of a password written without
    // encoding (`mongodb://u:1?x@h` reads host `u`, port 1): masked too.
    UrlSecrets::from_url(uri).mask(&shown).into_owned()
}

fn rebuild(parsed: &ConnectionString) -> Option<String> {
    let (scheme, hosts) = match &parsed.host_info {
        HostInfo::HostIdentifiers(hosts) => (
            "mongodb",
            hosts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        ),
        HostInfo::DnsRecord(name) => ("mongodb+srv", name.clone()),
        _ => return None,
    };
    let auth = match &parsed.credential {
        Some(credential) => match (&credential.username, &credential.password) {
            (user, Some(_)) => format!("{}:***@", user.as_deref().unwrap_or_default()),
            (Some(user), None) => format!("{user}@"),
            (None, None) => String::new(),
        },
        None => String::new(),
    };
    let db = parsed.default_database.as_deref().unwrap_or_default();
    Some(format!("{scheme}://{auth}{hosts}/{db}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_are_rebuilt_without_their_password() {
        for (uri, shown) in [
            ("mongodb://127.0.0.1", "mongodb://127.0.0.1:27017/"),
            ("mongodb://app:p%40ss@h:1/db", "mongodb://app:***@h:1/db"),
            (
                "mongodb://app@h/?authSource=admin",
                "mongodb://app@h:27017/",
            ),
            (
                "mongodb+srv://app:pw-12@cluster0.example.net/",
                "mongodb+srv://app:***@cluster0.example.net/",
            ),
            ("mongodb://app:pa?ss@h/", "mongodb://…"),
            ("mongodb://app:pa/ss@h/", "mongodb://…"),
        ] {
            assert_eq!(redacted_url(uri), shown, "{uri}");
        }
    }
}
