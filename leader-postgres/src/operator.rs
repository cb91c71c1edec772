//! The operator's calls as [`Op`]s: listing the held locks under a prefix, and freeing a
//! lock whoever holds it (or only while its holder has a given fencing token). Like `ops`, nothing here knows about threads or runtimes.

use leader_core::kit::calls;
use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage, ListRequest};
use tokio_postgres::Row;

use crate::conn::Conn;
use crate::error::{BACKEND, OpError};
use crate::ops::{LeaseRow, Op};

impl Op for calls::List {
    /// One page of the live rows under the prefix, in byte-wise name order, after the
    /// cursor's name: one statement reading one range of the primary key, one row more
    /// than the page holds to tell whether another page follows. The cursor is the last
    /// name shown, tagged with this backend and the prefix: one of another listing is
    /// refused.
    async fn run(self, conn: &Conn) -> Result<ListPage, OpError> {
        let prefix = self.request.prefix.as_str();
        let after = ListCursor::resume(BACKEND, &self.request)?.unwrap_or("");
        let limit = self.request.page_size();
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = match self.request.prefix_end() {
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
        page(&rows, &self.request)
    }
}

/// The first `limit` of `rows` (leader id, token, acquired, expires, name), and a cursor
/// at the last of them when there were more.
fn page(rows: &[Row], request: &ListRequest) -> Result<ListPage, OpError> {
    let limit = request.page_size();
    let shown = rows.get(..limit).unwrap_or(rows);
    let locks = shown
        .iter()
        .map(|row| {
            let name: String = row.try_get(4).map_err(OpError::Decode)?;
            Ok(LeaderState::occupied(name, LeaseRow::read(row)?.snapshot()))
        })
        .collect::<Result<Vec<_>, OpError>>()?;
    let next = (rows.len() > limit)
        .then(|| {
            let last = locks.last()?;
            Some(ListCursor::tagged(BACKEND, request, last.lock_name()))
        })
        .flatten();
    Ok(ListPage::new(locks, next))
}

impl Op for calls::ForceRelease {
    /// One statement: frees the row if anyone holds it (with `only`, if the holder has
    /// that token), returns that holder and whether it was freed, and notifies the
    /// channel as a release does when it freed it.
    async fn run(self, conn: &Conn) -> Result<ForceReleaseOutcome, OpError> {
        let channel: &str = &conn.statements.channel;
        let any = self.only.is_none();
        // A token above i64::MAX is none this backend stores: NULL matches no row.
        let token = self.only.and_then(|token| i64::try_from(token).ok());
        let row = conn
            .client
            .query_opt(
                &conn.statements.force_release,
                &[&self.key.as_str(), &channel, &any, &token],
            )
            .await?;
        Ok(match row {
            Some(row) => {
                let freed: bool = row.try_get(4).map_err(OpError::Decode)?;
                ForceReleaseOutcome::conditional(Some(LeaseRow::read(&row)?.snapshot()), freed)
            }
            None => ForceReleaseOutcome::NotHeld,
        })
    }
}
