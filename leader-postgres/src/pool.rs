//! [`Pool`]: a few sessions, opened on demand and reused.
//!
//! Why not a pool crate: a call that times out must close its session at once (on a
//! paused server it would otherwise sit behind an unanswered statement until TCP gives
//! up), which needs the session's driver task in hand; each session carries the lock
//! statements prepared right after the table check; and the whole of it is this file.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::conn::{Conn, Statements};
use crate::connector::Connector;
use crate::error::OpError;
use crate::schema;
use crate::sql::Sql;
use crate::table::Table;

/// At most `size` sessions in use at once; idle ones kept for the next call.
pub(crate) struct Pool {
    connector: std::sync::Arc<Connector>,
    table: Table,
    sql: Sql,
    idle: Mutex<Vec<Conn>>,
    slots: Semaphore,
    /// The table was found (or made) with the right shape by some session.
    table_checked: AtomicBool,
}

/// A session lent to one call. Back to the pool when the call [`finish`](Self::finish)ed
/// in a way that leaves it usable; closed otherwise (a call dropped mid-flight included).
pub(crate) struct Lent<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    keep: bool,
    _slot: SemaphorePermit<'a>,
}

impl Pool {
    pub(crate) fn new(connector: std::sync::Arc<Connector>, table: Table, size: usize) -> Self {
        Pool {
            connector,
            sql: Sql::new(&table),
            table,
            idle: Mutex::new(Vec::with_capacity(size)),
            slots: Semaphore::new(size),
            table_checked: AtomicBool::new(false),
        }
    }

    /// A session: an idle one, or a new one (the table made or checked first, once).
    pub(crate) async fn get(&self) -> Result<Lent<'_>, OpError> {
        let slot = self.slots.acquire().await.map_err(|_| OpError::ShutDown)?;
        let idle = {
            let mut idle = self.idle.lock();
            std::iter::from_fn(|| idle.pop()).find(|conn| !conn.client.is_closed())
        };
        let conn = match idle {
            Some(conn) => conn,
            // Boxed: opening a session (connect, TLS, the table's check, the statements)
            // is a future of some 8 KB; inline, every call's future would carry it, and a
            // call's future is moved several times on its way through a task.
            None => Box::pin(self.open()).await?,
        };
        Ok(Lent {
            pool: self,
            conn: Some(conn),
            keep: false,
            _slot: slot,
        })
    }

    async fn open(&self) -> Result<Conn, OpError> {
        let (client, driver) = self.connector.connect(None).await?;
        if !self.table_checked.load(Ordering::Acquire) {
            schema::ensure(&client, &self.table, &self.sql).await?;
            self.table_checked.store(true, Ordering::Release);
        }
        let statements = match Statements::prepare(&client, &self.sql).await {
            // The table went away since it was checked (dropped, a server that lost its
            // data): make it again.
            Err(err) if err.table_changed() => {
                schema::ensure(&client, &self.table, &self.sql).await?;
                Statements::prepare(&client, &self.sql).await?
            }
            prepared => prepared?,
        };
        Ok(Conn::new(client, driver, statements))
    }
}

impl Lent<'_> {
    /// The session.
    pub(crate) fn conn(&self) -> Option<&Conn> {
        self.conn.as_ref()
    }

    /// The call ended with `error` (or none): keep the session if it is still good.
    pub(crate) fn finish(&mut self, error: Option<&OpError>) {
        self.keep = error.is_none_or(OpError::keeps_connection);
        if error.is_some_and(OpError::table_changed) {
            self.pool.table_checked.store(false, Ordering::Release);
            // Every idle session's statements name the old table.
            self.pool.idle.lock().clear();
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.keep
            && !conn.client.is_closed()
        {
            self.pool.idle.lock().push(conn);
        }
    }
}
