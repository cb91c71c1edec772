//! The operator's calls as [`Op`]s: listing the held locks under a prefix, and freeing a
//! lock whoever holds it. Like `ops`, nothing here knows about threads or runtimes.

use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage, ListRequest, LockName};
use tokio_postgres::Row;

use crate::conn::Conn;
use crate::error::OpError;
use crate::ops::{LeaseRow, Op};

/// `list`'s request.
#[derive(Debug, Clone)]
pub(crate) struct List {
    pub(crate) request: ListRequest,
}

impl Op for List {
    type Output = ListPage;
    const NAME: &'static str = "list";

    fn key(&self) -> &str {
        &self.request.prefix
    }

    /// One page of the live rows under the prefix, in byte-wise name order, after the
    /// cursor's name: one statement reading one range of the primary key, one row more
    /// than the page holds to tell whether another page follows.
    async fn run(self, conn: &Conn) -> Result<ListPage, OpError> {
        let prefix = self.request.prefix.as_str();
        let after = self.request.cursor.as_ref().map_or("", ListCursor::as_str);
        let limit = self.request.limit.max(1);
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = match upper_bound(prefix) {
            Some(upper) => {
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                    [&prefix, &after, &upper, &fetch];
                conn.client.query(&conn.statements.list, &params).await?
            }
            None => {
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                    [&prefix, &after, &fetch];
                conn.client
                    .query(&conn.statements.list_unbounded, &params)
                    .await?
            }
        };
        page(&rows, limit)
    }

    fn outcome(output: &ListPage) -> &'static str {
        match output.next {
            Some(_) => "page",
            None => "last_page",
        }
    }
}

/// The first `limit` of `rows` (leader id, token, acquired, expires, name), and a cursor
/// at the last of them when there were more.
fn page(rows: &[Row], limit: usize) -> Result<ListPage, OpError> {
    let shown = rows.get(..limit).unwrap_or(rows);
    let locks = shown
        .iter()
        .map(|row| {
            let name: String = row.try_get(4).map_err(OpError::Decode)?;
            Ok(LeaderState::occupied(name, LeaseRow::read(row)?.snapshot()))
        })
        .collect::<Result<Vec<_>, OpError>>()?;
    let next = (rows.len() > limit)
        .then(|| locks.last().map(|last| ListCursor::new(last.lock_name())))
        .flatten();
    Ok(ListPage::new(locks, next))
}

/// The smallest string above every string that starts with `prefix`, byte-wise: the
/// prefix with its last character replaced by the next one (dropping trailing U+10FFFF,
/// which has none). UTF-8's byte order is code point order, so the strings under the
/// prefix are exactly those in `[prefix, upper)`. `None` when no string is above them all
/// (an empty prefix, or only U+10FFFF).
fn upper_bound(prefix: &str) -> Option<String> {
    let mut rest = prefix.chars();
    while let Some(last) = rest.next_back() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            _ => char::from_u32(u32::from(last) + 1),
        };
        if let Some(next) = next {
            let mut bound = rest.as_str().to_owned();
            bound.push(next);
            return Some(bound);
        }
    }
    None
}

/// `force_release`'s arguments, and the channel its `NOTIFY` goes to.
#[derive(Debug, Clone)]
pub(crate) struct ForceRelease {
    pub(crate) key: LockName,
    pub(crate) channel: String,
}

impl Op for ForceRelease {
    type Output = ForceReleaseOutcome;
    const NAME: &'static str = "force_release";

    fn key(&self) -> &str {
        self.key.as_str()
    }

    /// One statement: frees the row if anyone holds it, returns that holder, and notifies
    /// the channel as a release does.
    async fn run(self, conn: &Conn) -> Result<ForceReleaseOutcome, OpError> {
        let row = conn
            .client
            .query_opt(
                &conn.statements.force_release,
                &[&self.key.as_str(), &self.channel],
            )
            .await?;
        Ok(match row {
            Some(row) => ForceReleaseOutcome::Released(LeaseRow::read(&row)?.snapshot()),
            None => ForceReleaseOutcome::NotHeld,
        })
    }

    fn outcome(output: &ForceReleaseOutcome) -> &'static str {
        output.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upper_bound_is_above_exactly_the_names_under_the_prefix() {
        assert_eq!(upper_bound("job:"), Some("job;".to_owned()));
        assert_eq!(upper_bound("a.*[x]%_"), Some("a.*[x]%`".to_owned()));
        assert_eq!(upper_bound("é"), Some("ê".to_owned()));
        assert_eq!(upper_bound("a\u{D7FF}"), Some("a\u{E000}".to_owned()));
        assert_eq!(upper_bound("a\u{10FFFF}\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(upper_bound("\u{10FFFF}"), None);
        assert_eq!(upper_bound(""), None);
        for prefix in ["job:", "é", "a\u{D7FF}", "z\u{10FFFF}", "a.*[x]%_"] {
            let upper = upper_bound(prefix).unwrap();
            for name in [
                prefix.to_owned(),
                format!("{prefix}\u{10FFFF}"),
                format!("{prefix}~~"),
            ] {
                assert!(
                    prefix <= name.as_str() && name < upper,
                    "{name:?} < {upper:?}"
                );
            }
            assert!(upper.as_str() > prefix && !upper.starts_with(prefix));
        }
    }
}
