//! [`Conn`]: one pooled session with the lock statements prepared on it.

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Statement};

use crate::connector::Driver;
use crate::error::OpError;
use crate::sql::Sql;

/// A session and its statements. Dropping it aborts its driver, closing the socket.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) statements: Statements,
    _driver: Driver,
}

/// The prepared lock statements of one session.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) acquire: Statement,
    pub(crate) acquire_batch: Statement,
    pub(crate) holder: Statement,
    pub(crate) holders: Statement,
    pub(crate) extend: Statement,
    pub(crate) extend_batch: Statement,
    pub(crate) release: Statement,
    pub(crate) release_batch: Statement,
    pub(crate) list: Statement,
    pub(crate) list_unbounded: Statement,
    pub(crate) force_release: Statement,
    pub(crate) read_record: Statement,
    pub(crate) write_record: Statement,
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
        let records = futures_util::future::try_join(
            client.prepare_typed(&sql.read_record, &[TEXT]),
            client.prepare_typed(&sql.write_record, &[TEXT, INT8, TEXT]),
        );
        const TEXTS: Type = Type::TEXT_ARRAY;
        const INT8S: Type = Type::INT8_ARRAY;
        let batches = futures_util::future::try_join4(
            client.prepare_typed(&sql.acquire_batch, &[TEXTS, TEXTS, TEXTS, INT8S]),
            client.prepare_typed(&sql.holders, &[TEXTS]),
            client.prepare_typed(&sql.extend_batch, &[TEXTS, TEXTS, INT8S]),
            client.prepare_typed(&sql.release_batch, &[TEXTS, TEXTS, INT8S, TEXT]),
        );
        let (
            (acquire, holder, extend, release),
            (list, list_unbounded, force_release),
            (read_record, write_record),
            (acquire_batch, holders, extend_batch, release_batch),
        ) = futures_util::future::try_join4(locks, operator, records, batches).await?;
        Ok(Statements {
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
        })
    }
}
