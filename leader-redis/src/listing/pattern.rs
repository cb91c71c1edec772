//! The `SCAN MATCH` pattern of a listing, and the lock name inside a scanned key.

use leader_core::LockName;

use super::reads::Found;

/// The lock keys under one name prefix: `{key_prefix}:{<prefix>*}` as a Redis glob, with
/// the glob characters of both prefixes escaped so that they match literally. The closing
/// brace keeps the fencing counters (`...}:fence`) out.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    /// What every lock key starts with: `{key_prefix}:{`.
    head: String,
    /// The name prefix asked for.
    prefix: String,
    /// The glob for `SCAN MATCH`.
    glob: String,
}

impl Pattern {
    pub(crate) fn new(key_prefix: &str, prefix: &str) -> Self {
        let head = format!("{key_prefix}:{{");
        let mut glob = String::with_capacity(head.len() + prefix.len() + 4);
        escape_into(&head, &mut glob);
        escape_into(prefix, &mut glob);
        glob.push_str("*}");
        Pattern {
            head,
            prefix: prefix.to_owned(),
            glob,
        }
    }

    /// The glob for `SCAN MATCH`.
    pub(crate) fn glob(&self) -> &str {
        &self.glob
    }

    /// The listing for errors and traces: `{key_prefix}:{<prefix>*}`, unescaped.
    pub(crate) fn display(&self) -> String {
        format!("{}{}*}}", self.head, self.prefix)
    }

    /// The key and the lock name inside it when `key` is a lock key under the prefix;
    /// `None` for anything else the glob let through (a key that is not UTF-8 or does not
    /// hold a lock name).
    pub(crate) fn found(&self, key: &[u8]) -> Option<Found> {
        let key = std::str::from_utf8(key).ok()?;
        let name = key.strip_prefix(&self.head)?.strip_suffix('}')?;
        let ours = name.starts_with(&self.prefix) && LockName::new(name).is_ok();
        ours.then(|| Found {
            key: key.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// Appends `text` to `glob` with Redis' glob characters (`\ * ? [ ]`) backslash-escaped.
fn escape_into(text: &str, glob: &mut String) {
    for ch in text.chars() {
        if matches!(ch, '\\' | '*' | '?' | '[' | ']') {
            glob.push('\\');
        }
        glob.push(ch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_match_literally_and_fence_keys_stay_out() {
        let plain = Pattern::new("leader", "tenant:acme:");
        assert_eq!(plain.glob(), "leader:{tenant:acme:*}");
        assert_eq!(plain.display(), "leader:{tenant:acme:*}");

        let globbed = Pattern::new("a*b", r"x*[y]?\z");
        assert_eq!(globbed.glob(), r"a\*b:{x\*\[y\]\?\\z*}");

        let all = Pattern::new("leader", "");
        assert_eq!(all.glob(), "leader:{*}");
    }

    #[test]
    fn only_lock_keys_under_the_prefix_give_a_name() {
        let pattern = Pattern::new("leader", "job:");
        let name = |key: &[u8]| pattern.found(key).map(|found| found.name);
        assert_eq!(name(b"leader:{job:1}").as_deref(), Some("job:1"));
        assert_eq!(name(b"leader:{job:a*[b]?}").as_deref(), Some("job:a*[b]?"));
        for other in [
            &b"leader:{job:1}:fence"[..],
            b"leader:{other}",
            b"leader:{job:1}:{x}",
            b"leader:{job:\xff}",
            b"billing:{job:1}",
        ] {
            assert_eq!(name(other), None, "{other:?}");
        }
    }
}
