//! The `SCAN MATCH` pattern of a listing, and the lock name inside a scanned key.

use leader_core::LockName;

use super::reads::Found;

/// The lock keys under one name prefix, as a Redis glob for `SCAN MATCH`, with the glob
/// characters of both prefixes escaped so that they match literally:
/// `{key_prefix}:{<prefix>*` for a prefix without `#`, and `{key_prefix}:{<group>}#<rest>*`
/// for a prefix in a group's derived names (see the crate's `keys` module). The glob lets
/// the fencing counters (`...:fence`) and records (`...:record`) through;
/// [`Pattern::found`] leaves them out.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    /// What every lock key starts with: `{key_prefix}:{`.
    head: String,
    /// The name prefix asked for.
    prefix: String,
    /// The glob for `SCAN MATCH`.
    glob: String,
    /// The glob, unescaped.
    display: String,
}

impl Pattern {
    pub(crate) fn new(key_prefix: &str, prefix: &str) -> Self {
        let head = format!("{key_prefix}:{{");
        let mut glob = String::with_capacity(head.len() + prefix.len() + 4);
        escape_into(&head, &mut glob);
        let display = match prefix.split_once(LockName::DERIVED_SEPARATOR) {
            Some((group, rest)) => {
                escape_into(group, &mut glob);
                glob.push('}');
                glob.push(LockName::DERIVED_SEPARATOR);
                escape_into(rest, &mut glob);
                format!("{head}{group}}}{}{rest}*", LockName::DERIVED_SEPARATOR)
            }
            None => {
                escape_into(prefix, &mut glob);
                format!("{head}{prefix}*")
            }
        };
        glob.push('*');
        Pattern {
            head,
            prefix: prefix.to_owned(),
            glob,
            display,
        }
    }

    /// The glob for `SCAN MATCH`.
    pub(crate) fn glob(&self) -> &str {
        &self.glob
    }

    /// The listing for errors and traces: the glob, unescaped.
    pub(crate) fn display(&self) -> String {
        self.display.clone()
    }

    /// The key and the lock name inside it when `key` is a lock key under the prefix:
    /// `{key_prefix}:{<name>}`, or `{key_prefix}:{<group>}#<rest>` for the derived name
    /// `<group>#<rest>`. `None` for anything else the glob let through (a fencing counter,
    /// a record, a key that is not UTF-8 or does not hold a lock name).
    pub(crate) fn found(&self, key: &[u8]) -> Option<Found> {
        let key = std::str::from_utf8(key).ok()?;
        let (tag, rest) = key.strip_prefix(&self.head)?.split_once('}')?;
        let name = match rest.strip_prefix(LockName::DERIVED_SEPARATOR) {
            _ if rest.is_empty() => tag.to_owned(),
            Some(derived) if !derived.ends_with(":fence") && !derived.ends_with(":record") => {
                format!("{tag}{}{derived}", LockName::DERIVED_SEPARATOR)
            }
            _ => return None,
        };
        let ours = name.starts_with(&self.prefix) && LockName::new(name.as_str()).is_ok();
        ours.then(|| Found {
            key: key.to_owned(),
            name,
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
    fn glob_characters_match_literally() {
        let plain = Pattern::new("leader", "tenant:acme:");
        assert_eq!(plain.glob(), "leader:{tenant:acme:*");
        assert_eq!(plain.display(), "leader:{tenant:acme:*");

        let globbed = Pattern::new("a*b", r"x*[y]?\z");
        assert_eq!(globbed.glob(), r"a\*b:{x\*\[y\]\?\\z*");

        let all = Pattern::new("leader", "");
        assert_eq!(all.glob(), "leader:{*");

        let slots = Pattern::new("leader", "tenant:acme:job#r*");
        assert_eq!(slots.glob(), r"leader:{tenant:acme:job}#r\**");
        assert_eq!(slots.display(), "leader:{tenant:acme:job}#r**");
    }

    #[test]
    fn only_lock_keys_under_the_prefix_give_a_name() {
        let pattern = Pattern::new("leader", "job:");
        let name = |key: &[u8]| pattern.found(key).map(|found| found.name);
        assert_eq!(name(b"leader:{job:1}").as_deref(), Some("job:1"));
        assert_eq!(name(b"leader:{job:a*[b]?}").as_deref(), Some("job:a*[b]?"));
        assert_eq!(name(b"leader:{job:1}#2").as_deref(), Some("job:1#2"));
        for other in [
            &b"leader:{job:1}:fence"[..],
            b"leader:{job:1}#2:fence",
            b"leader:{job:1}:record",
            b"leader:{job:1}#2:record",
            b"leader:{other}",
            b"leader:{other}#1",
            b"leader:{job:1}:{x}",
            b"leader:{job:1}x",
            b"leader:{job:\xff}",
            b"billing:{job:1}",
        ] {
            assert_eq!(name(other), None, "{other:?}");
        }
        let slots = Pattern::new("leader", "job#");
        assert_eq!(
            slots.found(b"leader:{job}#3").map(|f| f.name).as_deref(),
            Some("job#3")
        );
        assert_eq!(slots.found(b"leader:{job}").map(|f| f.name), None);
    }
}
