//! [`Conn`]: one pooled session with the lock statements prepared on it.

use std::sync::Arc;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Statement};

use crate::connector::Driver;
use crate::error::OpError;
use crate::shared_sql::SharedSql;
use crate::sql::Sql;

/// A session and its statements. Dropping it aborts its driver, closing the socket.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) statements: Statements,
    _driver: Driver,
}

/// The lock statements of one session: the single calls prepared, the batches as text.
///
/// A batch statement is planned anew at each call (an unnamed statement, sent with its
/// parameters in the same round trip): a prepared one's cached plan is chosen once, and
/// one chosen while the table was small scans the whole table for each batch once it has
/// grown. Planning costs a fraction of a millisecond, next to up to 1,000 rows.
#[derive(Debug)]
pub(crate) struct Statements {
    /// The channel releases notify.
    pub(crate) channel: Arc<str>,
    pub(crate) acquire: Statement,
    pub(crate) acquire_batch: Arc<str>,
    pub(crate) holder: Statement,
    pub(crate) holders: Arc<str>,
    pub(crate) extend: Statement,
    pub(crate) extend_batch: Arc<str>,
    pub(crate) release: Statement,
    pub(crate) release_batch: Arc<str>,
    pub(crate) list: Statement,
    pub(crate) list_unbounded: Statement,
    pub(crate) force_release: Statement,
    pub(crate) read_record: Statement,
    pub(crate) write_record: Statement,
    /// The read/write locks' call (`shared_sql`), when its function was in place as the
    /// session opened.
    pub(crate) shared: Option<Statement>,
    /// The read/write locks' SQL, to make the tables and function when they were not.
    pub(crate) shared_sql: Arc<SharedSql>,
}

impl Conn {
    pub(crate) fn new(client: Client, driver: Driver, statements: Statements) -> Conn {
        Conn {
            client,
            statements,
            _driver: driver,
        }
    }
}

impl Statements {
    /// Prepares the statements on `client` (one round trip: they are pipelined).
    pub(crate) async fn prepare(client: &Client, sql: &Sql) -> Result<Statements, OpError> {
        const TEXT: Type = Type::TEXT;
        const INT8: Type = Type::INT8;
        let locks = futures_util::future::try_join4(
            client.prepare_typed(&sql.acquire, &[TEXT, TEXT, TEXT, INT8]),
            client.prepare_typed(&sql.holder, &[TEXT]),
            client.prepare_typed(&sql.extend, &[TEXT, TEXT, INT8]),
            client.prepare_typed(&sql.release, &[TEXT, TEXT, INT8, TEXT]),
        );
        let operator = futures_util::future::try_join3(
            client.prepare_typed(&sql.list, &[TEXT, TEXT, TEXT, INT8]),
            client.prepare_typed(&sql.list_unbounded, &[TEXT, TEXT, INT8]),
            client.prepare_typed(&sql.force_release, &[TEXT, TEXT, Type::BOOL, INT8]),
        );
        let records = futures_util::future::try_join3(
            client.prepare_typed(&sql.read_record, &[TEXT]),
            client.prepare_typed(&sql.write_record, &[TEXT, INT8, TEXT]),
            prepare_shared(client, sql),
        );
        let (
            (acquire, holder, extend, release),
            (list, list_unbounded, force_release),
            (read_record, write_record, shared),
        ) = futures_util::future::try_join3(locks, operator, records).await?;
        let (acquire_batch, holders, extend_batch, release_batch) = (
            sql.acquire_batch.as_str().into(),
            sql.holders.as_str().into(),
            sql.extend_batch.as_str().into(),
            sql.release_batch.as_str().into(),
        );
        Ok(Statements {
            channel: sql.channel.as_str().into(),
            acquire,
            acquire_batch,
            holder,
            holders,
            extend,
            extend_batch,
            release,
            release_batch,
            list,
            list_unbounded,
            force_release,
            read_record,
            write_record,
            shared,
            shared_sql: Arc::clone(&sql.shared),
        })
    }
}

/// The read/write locks' call, prepared; `None` when its function or tables are missing
/// (the role may not make them, say): the session serves the exclusive locks all the same.
async fn prepare_shared(
    client: &Client,
    sql: &Sql,
) -> Result<Option<Statement>, tokio_postgres::Error> {
    const TEXT: Type = Type::TEXT;
    let types = [TEXT, TEXT, TEXT, TEXT, TEXT, Type::INT8, Type::INT4, TEXT];
    match client.prepare_typed(&sql.shared.call, &types).await {
        Ok(statement) => Ok(Some(statement)),
        Err(err)
            if err.code() == Some(&SqlState::UNDEFINED_FUNCTION)
                || err.code() == Some(&SqlState::UNDEFINED_TABLE) =>
        {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}
