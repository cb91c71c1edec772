//! The lock table, the records' table and the read/write locks' tables and function: made
//! when missing, checked when found. Nothing is ever altered or dropped: a table of
//! another shape is an error for someone to look at. Tables added after the first release
//! (the records', the read/write locks') are simply made when missing: a release that
//! does not know them never reads them.

use std::fmt;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::error::OpError;
use crate::shared_sql::{HOLD_COLUMNS, RW_COLUMNS, SharedSql};
use crate::sql::{COLUMNS, EXISTS, RECORD_COLUMNS, SHAPE, Sql};
use crate::table::Table;

/// How a found table differs from the one this backend makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShapeError {
    /// A column is missing.
    Missing(&'static str),
    /// A column has another type.
    WrongType {
        column: &'static str,
        found: String,
        expected: &'static str,
    },
    /// A column this backend does not write.
    Extra(String),
    /// `name` is not the primary key.
    NoPrimaryKey,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::Missing(column) => write!(f, "no column `{column}`"),
            ShapeError::WrongType {
                column,
                found,
                expected,
            } => write!(f, "column `{column}` is {found}, expected {expected}"),
            ShapeError::Extra(column) => write!(f, "an unexpected column `{column}`"),
            ShapeError::NoPrimaryKey => write!(f, "`name` is not its primary key"),
        }
    }
}

/// Makes the lock table, the records' table and the read/write locks' tables and function
/// if they are missing, then checks the columns and key of each table.
///
/// The existence checks come first so that a role without `CREATE` on the schema can use
/// tables (and a function) someone else made.
pub(crate) async fn ensure(client: &Client, table: &Table, sql: &Sql) -> Result<(), OpError> {
    ensure_one(client, table, &sql.create, &COLUMNS, Key::Name).await?;
    ensure_one(
        client,
        &table.records(),
        &sql.create_records,
        &RECORD_COLUMNS,
        Key::Name,
    )
    .await?;
    // The read/write locks' tables and function are made here too, but a session opens
    // without them: a role that may not create them (on a schema where only the lock
    // table was made for it) keeps its exclusive locks, and its read/write calls get the
    // reason (`shared::missing`).
    if let Err(err) = ensure_shared(client, &sql.shared).await {
        tracing::debug!(error = %err, "the read/write locks' tables or function are not in place");
    }
    Ok(())
}

/// Makes the read/write locks' tables and function if they are missing, and checks the
/// tables.
pub(crate) async fn ensure_shared(client: &Client, shared: &SharedSql) -> Result<(), OpError> {
    ensure_one(
        client,
        &shared.rw,
        &shared.create_rw,
        &RW_COLUMNS,
        Key::Name,
    )
    .await?;
    ensure_one(
        client,
        &shared.hold,
        &shared.create_hold,
        &HOLD_COLUMNS,
        Key::Composite,
    )
    .await?;
    let exists: bool = client
        .query_one(FUNCTION_EXISTS, &[&shared.function])
        .await?
        .try_get(0)
        .map_err(OpError::Decode)?;
    if !exists {
        match client.batch_execute(&shared.create_function).await {
            Ok(()) => {}
            // Another session made it at the same moment.
            Err(err)
                if err.code() == Some(&SqlState::DUPLICATE_FUNCTION)
                    || err.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// `$1` a function's quoted name and argument types → whether it exists.
const FUNCTION_EXISTS: &str = "SELECT to_regprocedure($1) IS NOT NULL";

/// A table's primary key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// `name` alone.
    Name,
    /// Several columns (the read/write holders': `name`, `fencing_token`), not checked.
    Composite,
}

/// Makes `table` with `create` if it is missing, then checks it has `columns`.
async fn ensure_one(
    client: &Client,
    table: &Table,
    create: &str,
    columns: &[(&'static str, &'static str)],
    key: Key,
) -> Result<(), OpError> {
    let exists: bool = client
        .query_one(EXISTS, &[&table.quoted()])
        .await?
        .try_get(0)
        .map_err(OpError::Decode)?;
    if !exists {
        match client.batch_execute(create).await {
            Ok(()) => {}
            // Another session made it at the same moment: PostgreSQL reports the race as
            // a duplicate table, a unique violation on its catalog, or a duplicate row type
            // (42710, "type … already exists"), whichever catalog entry it hit first.
            Err(err)
                if err.code() == Some(&SqlState::UNIQUE_VIOLATION)
                    || err.code() == Some(&SqlState::DUPLICATE_TABLE)
                    || err.code() == Some(&SqlState::DUPLICATE_OBJECT) => {}
            Err(err) => return Err(err.into()),
        }
    }
    let rows = client.query(SHAPE, &[&table.quoted()]).await?;
    let mut found = Vec::with_capacity(rows.len());
    for row in &rows {
        let name: String = row.try_get(0).map_err(OpError::Decode)?;
        let kind: String = row.try_get(1).map_err(OpError::Decode)?;
        let primary: bool = row.try_get(2).map_err(OpError::Decode)?;
        found.push((name, kind, primary));
    }
    check(&found, columns, key).map_err(|problem| OpError::Shape {
        table: table.name().to_owned(),
        problem,
    })
}

/// Compares the `(name, type, is the primary key)` of each column with `columns`, those
/// of a table this backend makes.
fn check(
    found: &[(String, String, bool)],
    columns: &[(&'static str, &'static str)],
    key: Key,
) -> Result<(), ShapeError> {
    for &(column, expected) in columns {
        match found.iter().find(|(name, _, _)| name == column) {
            None => return Err(ShapeError::Missing(column)),
            Some((_, kind, _)) if kind != expected => {
                return Err(ShapeError::WrongType {
                    column,
                    found: kind.clone(),
                    expected,
                });
            }
            Some(_) => {}
        }
    }
    if let Some((extra, _, _)) = found
        .iter()
        .find(|(name, _, _)| !columns.iter().any(|(column, _)| column == name))
    {
        return Err(ShapeError::Extra(extra.clone()));
    }
    if key == Key::Name
        && !found
            .iter()
            .any(|(name, _, primary)| name == "name" && *primary)
    {
        return Err(ShapeError::NoPrimaryKey);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours() -> Vec<(String, String, bool)> {
        COLUMNS
            .iter()
            .map(|(name, kind)| ((*name).to_owned(), (*kind).to_owned(), *name == "name"))
            .collect()
    }

    #[test]
    fn accepts_its_own_table_and_names_each_difference() {
        assert_eq!(check(&ours(), &COLUMNS, Key::Name), Ok(()));
        let mut other = ours();
        other.retain(|(name, _, _)| name != "owner");
        assert_eq!(
            check(&other, &COLUMNS, Key::Name),
            Err(ShapeError::Missing("owner"))
        );
        let mut other = ours();
        other[3].1 = "integer".into();
        assert!(matches!(
            check(&other, &COLUMNS, Key::Name),
            Err(ShapeError::WrongType {
                column: "fencing_token",
                ..
            })
        ));
        let mut other = ours();
        other.push(("note".into(), "text".into(), false));
        assert_eq!(
            check(&other, &COLUMNS, Key::Name),
            Err(ShapeError::Extra("note".into()))
        );
        let mut other = ours();
        other[0].2 = false;
        assert_eq!(
            check(&other, &COLUMNS, Key::Name),
            Err(ShapeError::NoPrimaryKey)
        );
    }
}
