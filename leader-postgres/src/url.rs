//! [`redacted_url`]: a PostgreSQL URL (or `key=value` string) as this crate's errors show it.

use leader_core::__private::unparsed_url;
use leader_core::UrlSecrets;
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// `url` as errors show it: rebuilt from what tokio-postgres parses (user, `:***` where a
/// password is given, hosts and ports, database), as a URL whether it was given as one or
/// in the `key=value` form, so no password is shown however it is written (tokio-postgres
/// takes the user info up to the first `@`, `/` and `?` included, and reads `password=`
/// from the query). Text it does not parse shows its scheme only (`postgres://…`, or `…`
/// for a `key=value` string): where a password ends in such text is anyone's guess.
///
/// # Examples
///
/// ```
/// use leader_postgres::redacted_url;
///
/// assert_eq!(redacted_url("postgres://app:pa/ss@127.0.0.1:1/app"), "postgres://app:***@127.0.0.1:1/app");
/// assert_eq!(redacted_url("host=db user=app password='s3 cret'"), "postgres://app:***@db:5432");
/// assert_eq!(redacted_url("postgres://db/app?sslmode=sometimes&password=s3cret"), "postgres://…");
/// ```
pub fn redacted_url(url: &str) -> String {
    let shown = match url.parse::<Config>() {
        Ok(config) => rebuild(&config),
        Err(_) => unparsed_url(url),
    };
    // A host or user name the driver parsed may still hold a piece of a password written
    // without encoding: masked too.
    UrlSecrets::from_url(url).mask(&shown).into_owned()
}

fn rebuild(config: &Config) -> String {
    let auth = match (config.get_user(), config.get_password()) {
        (user, Some(_)) => format!("{}:***@", user.unwrap_or_default()),
        (Some(user), None) => format!("{user}@"),
        (None, None) => String::new(),
    };
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(index, host)| {
            let port = match ports {
                [] => 5432,
                [one] => *one,
                many => many.get(index).copied().unwrap_or(5432),
            };
            format!("{}:{port}", host_part(host))
        })
        .collect();
    let db = config
        .get_dbname()
        .map(|db| format!("/{db}"))
        .unwrap_or_default();
    format!("postgres://{auth}{}{db}", hosts.join(","))
}

/// A host as a URL writes it: an IPv6 address in brackets, a socket directory with its
/// slashes encoded.
fn host_part(host: &Host) -> String {
    match host {
        Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
        Host::Tcp(name) => name.clone(),
        #[cfg(unix)]
        Host::Unix(path) => path.display().to_string().replace('/', "%2F"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_key_value_strings_are_rebuilt_without_their_password() {
        for (url, shown) in [
            (
                "postgres://app:pw@db:6543/app",
                "postgres://app:***@db:6543/app",
            ),
            (
                "postgresql://db/app?password=hunter2",
                "postgres://:***@db:5432/app",
            ),
            ("postgres://app@a:1,b:2/app", "postgres://app@a:1,b:2/app"),
            (
                "postgres://app:hunter2@a:1,b:2/app?target_session_attrs=read-write",
                "postgres://app:***@a:1,b:2/app",
            ),
            (
                "postgres://app@a,b:7/app?password=hunter2",
                "postgres://app:***@a:5432,b:7/app",
            ),
            (
                "postgres://app:p%40ss@[::1]/app",
                "postgres://app:***@[::1]:5432/app",
            ),
            (
                "postgres://app@%2Fvar%2Frun/app",
                "postgres://app@%2Fvar%2Frun:5432/app",
            ),
            (
                "host=db port=1 user=app password=hunter2 dbname=x",
                "postgres://app:***@db:1/x",
            ),
            ("host=db sslpassword=hunter2", "…"),
            ("postgres://h:notaport/db", "postgres://…"),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
        // tokio-postgres ends the user info at the first `@`: the rest is a host.
        let shown = redacted_url("postgres://app:secret@word@h/db");
        assert!(
            !shown.contains("secret") && !shown.contains("word"),
            "{shown}"
        );
    }
}
