#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

mod backend;
mod batches;
mod calls;
mod config;
#[cfg(feature = "serde")]
mod config_serde;
mod conn;
mod connector;
mod error;
mod hosts;
mod listener;
mod operator;
mod ops;
mod pool;
mod records;
mod schema;
mod shared;
mod shared_sql;
mod sql;
mod table;
mod time;
#[cfg(feature = "tls")]
mod tls;
mod url;

pub use backend::PostgresBackend;
pub use config::PostgresConfig;
pub use error::ConnectError;
pub use url::redacted_url;

/// Unstable, behind the `unstable-raw` feature: the statements the backend runs, built by its
/// own builder, for the benchmarks that measure it against them run raw and the tests that
/// read a statement's plan. Not for applications, and exempt from semver: any release, a
/// patch included, may change it.
#[cfg(feature = "unstable-raw")]
pub mod raw {
    use crate::sql::Sql;
    use crate::table::Table;

    /// The acquire and release statements for `table`: acquire takes `$1` name, `$2`
    /// owner, `$3` leader id, `$4` lease µs; release `$1` name, `$2` owner, `$3` minimum
    /// lease µs, `$4` channel.
    pub fn statements(table: &str) -> Result<(String, String), &'static str> {
        let sql = Sql::new(&Table::parse(table)?);
        Ok((sql.acquire, sql.release))
    }

    /// The listing statement for `table`: `$1` prefix, `$2` the name to list after, `$3`
    /// the prefix's upper bound, `$4` how many rows.
    pub fn list_statement(table: &str) -> Result<String, &'static str> {
        Ok(Sql::new(&Table::parse(table)?).list)
    }
}
