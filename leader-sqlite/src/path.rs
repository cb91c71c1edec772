//! Paths that cannot hold locks shared between processes, refused before anything is
//! opened: SQLite reads `:memory:`, an empty path and some `file:` URIs as databases that
//! no other process sees, or that it opens without its file locks.

use std::path::Path;

use crate::error::ConnectError;

/// `Ok` when `path` names a database file other processes share, with SQLite's locking.
///
/// `file:` URIs are read as SQLite reads them (the backend opens with URIs enabled): the
/// path part up to `?`, then `&`-separated `key=value` parameters up to `#`, each
/// percent-decoded. Refused: an in-memory path (`:memory:`, `file::memory:`,
/// `mode=memory`), an empty one (a private temporary database), `nolock` and `immutable`
/// unless clearly off (`0`, `no`, `off`, `false`), and any `vfs=` (a VFS may lock
/// differently from the processes that open the file without it, or not at all).
pub(crate) fn check(path: &Path) -> Result<(), ConnectError> {
    let refuse = |reason| {
        Err(ConnectError::NotShared {
            path: path.to_owned(),
            reason,
        })
    };
    let text = path.as_os_str().as_encoded_bytes();
    if text.is_empty() {
        return refuse("an empty path opens a private, temporary database");
    }
    if text == b":memory:" {
        return refuse("`:memory:` is an in-memory database");
    }
    let Some(uri) = text.strip_prefix(b"file:") else {
        return Ok(());
    };
    let uri = uri.split(|&b| b == b'#').next().unwrap_or_default();
    let mut parts = uri.splitn(2, |&b| b == b'?');
    let file = decode(parts.next().unwrap_or_default());
    let file = match file.strip_prefix(b"//") {
        // `file://host/path`: SQLite takes the path from the first `/` on.
        Some(rest) => rest
            .iter()
            .position(|&b| b == b'/')
            .map_or(&[][..], |at| &rest[at..]),
        None => &file[..],
    };
    if file.is_empty() {
        return refuse("a `file:` URI without a path opens a private, temporary database");
    }
    if file == b":memory:" {
        return refuse("`file::memory:` is an in-memory database");
    }
    for parameter in parts.next().unwrap_or_default().split(|&b| b == b'&') {
        let mut pair = parameter.splitn(2, |&b| b == b'=');
        let key = decode(pair.next().unwrap_or_default());
        let value = decode(pair.next().unwrap_or_default());
        match key.as_slice() {
            b"mode" if value.eq_ignore_ascii_case(b"memory") => {
                return refuse("`mode=memory` opens an in-memory database");
            }
            b"nolock" if !off(&value) => {
                return refuse("`nolock` opens the file without SQLite's locks");
            }
            b"immutable" if !off(&value) => {
                return refuse("`immutable` opens the file without SQLite's locks");
            }
            b"vfs" => {
                return refuse("`vfs=` chooses a VFS that may lock differently, or not at all");
            }
            _ => {}
        }
    }
    Ok(())
}

/// A boolean URI parameter that is clearly false: `no`, `off`, `false`, or digits that
/// are all zero. (SQLite also reads an empty or unknown value as false; a bare `nolock`
/// was meant to be on, so it is refused.)
fn off(value: &[u8]) -> bool {
    [&b"no"[..], b"off", b"false"]
        .iter()
        .any(|word| value.eq_ignore_ascii_case(word))
        || (!value.is_empty() && value.iter().all(|&b| b == b'0'))
}

/// `%HH` escapes decoded, as SQLite decodes the parts of a URI; a `%` not followed by two
/// hex digits is kept as it is.
fn decode(part: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(part.len());
    let mut rest = part;
    while let Some((&byte, tail)) = rest.split_first() {
        let escaped = match tail {
            [high, low, ..] if byte == b'%' => hex(*high).zip(hex(*low)),
            _ => None,
        };
        match escaped {
            Some((high, low)) => {
                out.push((high << 4) | low);
                rest = &tail[2..];
            }
            None => {
                out.push(byte);
                rest = tail;
            }
        }
    }
    out
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(path: &str) -> bool {
        matches!(check(Path::new(path)), Err(ConnectError::NotShared { .. }))
    }

    #[test]
    fn shared_files_pass() {
        for path in [
            "locks.db",
            "/var/lib/app/locks.db",
            "memory",
            ":memory",
            "file:locks.db",
            "file:/tmp/locks.db?mode=rwc&cache=shared",
            "file:locks.db?nolock=0&immutable=off&psow=1",
            "file:locks.db?nolock=false&immutable=00",
            "file://localhost/tmp/locks.db",
            "file:locks.db#mode=memory",
            "file:locks.db?mode=memoryx",
            "file:mem%ory.db",
        ] {
            assert!(check(Path::new(path)).is_ok(), "{path}");
        }
    }

    #[test]
    fn unshared_forms_are_refused() {
        for path in [
            "",
            ":memory:",
            "file:",
            "file:?cache=shared",
            "file::memory:",
            "file:%3Amemory%3a",
            "file://localhost",
            "file:x.db?mode=memory",
            "file:x.db?mode=Memory",
            "file:x.db?cache=shared&mode=memory#frag",
            "file:x.db?mode=mem%6fry",
            "file:x.db?nolock=1",
            "file:x.db?nolock=2",
            "file:x.db?nolock=yes",
            "file:x.db?nolock=TRUE",
            "file:x.db?nolock=on",
            "file:x.db?nolock=full",
            "file:x.db?%6Eolock=1",
            "file:x.db?immutable=1",
            "file:x.db?vfs=unix-none",
            "file:x.db?vfs=",
            "file:x.db?vfs",
            "file:x.db?nolock",
            "file:x.db?immutable=",
            "file:x.db?nolock=0x1",
        ] {
            assert!(refused(path), "{path}");
        }
    }

    #[test]
    fn percent_escapes_decode_and_stray_percents_stay() {
        assert_eq!(decode(b"a%41%6a"), b"aAj");
        assert_eq!(decode(b"%"), b"%");
        assert_eq!(decode(b"%4"), b"%4");
        assert_eq!(decode(b"%zz%41"), b"%zzA");
        assert_eq!(decode("é%C3%A9".as_bytes()), "éé".as_bytes());
    }
}
