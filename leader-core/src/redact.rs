//! Masking the password of a connection URL before it goes into an error or a log.

/// `redis://user:secret@host/` → `redis://user:***@host/` (and `redis://token@host/` →
/// `redis://***@host/`); a URL without a password comes back unchanged. Only the authority
/// is looked at, so a `@` in the path or query is left alone. Text that is almost a URL
/// (`redis:/user:secret@host/`, a typo an error message repeats) is masked too: there the
/// user info is what stands between the last `/` and the last `@`.
///
/// ```
/// use leader_core::__private::mask_password;
///
/// assert_eq!(mask_password("redis://user:secret@host:6379/0"), "redis://user:***@host:6379/0");
/// ```
pub fn mask_password(url: &str) -> String {
    let (scheme_end, authority_end) = match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            (
                i + 3,
                i + 3 + rest.find(['/', '?', '#']).unwrap_or(rest.len()),
            )
        }
        None => match url.rfind('@') {
            Some(at) => (url[..at].rfind('/').map_or(0, |slash| slash + 1), url.len()),
            None => return url.to_owned(),
        },
    };
    let rest = &url[scheme_end..];
    let Some(at) = url[scheme_end..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let user_info = &rest[..at];
    let masked = match user_info.find(':') {
        Some(colon) => format!("{}:***", &user_info[..colon]),
        // A lone user-info part may be the secret itself (a token): mask all of it.
        None => "***".to_owned(),
    };
    format!("{}{masked}{}", &url[..scheme_end], &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::mask_password;

    #[test]
    fn passwords_are_masked() {
        let cases = [
            (
                "redis://user:secret@host:6379/0",
                "redis://user:***@host:6379/0",
            ),
            ("rediss://:secret@host/", "rediss://:***@host/"),
            (
                "mongodb://u:p%40ss@h1,h2/?tls=true",
                "mongodb://u:***@h1,h2/?tls=true",
            ),
            (
                "redis+cluster://:pw@a:7000,b:7001",
                "redis+cluster://:***@a:7000,b:7001",
            ),
            // A user-info part without a colon may be a token: masked whole.
            ("redis://token@host/", "redis://***@host/"),
            ("redis://host/", "redis://host/"),
            ("redis://host/?x=a@b", "redis://host/?x=a@b"),
            ("not a url", "not a url"),
            // Almost a URL: still masked.
            ("redis:/user:pw@h/", "redis:/user:***@h/"),
            ("redis//user:pw@h/", "redis//user:***@h/"),
            ("user:pw@h", "user:***@h"),
            ("a@b", "***@b"),
        ];
        for (url, masked) in cases {
            assert_eq!(mask_password(url), masked, "{url}");
        }
    }
}
