//! [`Table`]: the validated name of the lock table, quoted for SQL, and the notification
//! channel derived from it.

/// The longest table name: its channel, the name plus [`CHANNEL_SUFFIX`], must fit in
/// PostgreSQL's 63-byte identifiers.
pub(crate) const MAX_TABLE_LEN: usize = 63 - CHANNEL_SUFFIX.len();
const CHANNEL_SUFFIX: &str = "_released";
const RECORDS_SUFFIX: &str = "_records";
/// The read/write locks' tables and function (see `shared_sql`): each fits in 63 bytes
/// beside a table name of [`MAX_TABLE_LEN`], as the channel does.
const RW_SUFFIX: &str = "_rw";
const RW_HOLD_SUFFIX: &str = "_rw_hold";
const RW_FUNCTION_SUFFIX: &str = "_rw_v2";

/// A table name that is safe to splice into SQL: `table` or `schema.table`, each part
/// ASCII letters, digits and `_`, not starting with a digit. Quoted in SQL, so its case
/// is kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    name: String,
    quoted: String,
}

impl Table {
    /// Validates `name`; the error says what is wrong with it.
    pub(crate) fn parse(name: &str) -> Result<Table, &'static str> {
        if name.len() > MAX_TABLE_LEN {
            return Err(
                "longer than 54 bytes (its release channel, `<table>_released`, must fit in 63)",
            );
        }
        let parts: Vec<&str> = name.split('.').collect();
        if parts.len() > 2 {
            return Err("more than one `.`: give `table` or `schema.table`");
        }
        for part in &parts {
            let mut chars = part.chars();
            match chars.next() {
                None => return Err("an empty name or schema"),
                Some(first) if first.is_ascii_digit() => {
                    return Err("a name or schema that starts with a digit");
                }
                Some(_) => {}
            }
            if !part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err("only ASCII letters, digits and `_` are allowed (and one `.`)");
            }
        }
        let quoted = parts
            .iter()
            .map(|part| format!("\"{part}\""))
            .collect::<Vec<_>>()
            .join(".");
        Ok(Table {
            name: name.to_owned(),
            quoted,
        })
    }

    /// The name as given.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The name quoted for SQL: `"schema"."table"`.
    pub(crate) fn quoted(&self) -> &str {
        &self.quoted
    }

    /// The records' table, beside the lock table: `<table>_records` in the same schema
    /// (it fits in 63 bytes, as the channel does).
    pub(crate) fn records(&self) -> Table {
        self.suffixed(RECORDS_SUFFIX)
    }

    /// The read/write locks' table, `<table>_rw` in the same schema: one row per name.
    pub(crate) fn rw(&self) -> Table {
        self.suffixed(RW_SUFFIX)
    }

    /// The read/write locks' holders, `<table>_rw_hold`: one row per reader or writer.
    pub(crate) fn rw_holders(&self) -> Table {
        self.suffixed(RW_HOLD_SUFFIX)
    }

    /// The function every read/write lock call runs, `<table>_rw_v2` (its version in its
    /// name: a changed function is a new one).
    pub(crate) fn rw_function(&self) -> Table {
        self.suffixed(RW_FUNCTION_SUFFIX)
    }

    /// `<table><suffix>` in the same schema, quoted alike.
    fn suffixed(&self, suffix: &str) -> Table {
        let name = format!("{}{suffix}", self.name);
        let quoted = format!("{}{suffix}\"", self.quoted.trim_end_matches('"'));
        Table { name, quoted }
    }

    /// The channel releases are notified on: `<table>_released`.
    pub(crate) fn channel(&self) -> String {
        format!("{}{CHANNEL_SUFFIX}", self.name)
    }

    /// `LISTEN` on [`channel`](Self::channel), quoted (it holds no `"`).
    pub(crate) fn listen(&self) -> String {
        format!("LISTEN \"{}\"", self.channel())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_and_schema_qualified_names_and_quotes_them() {
        let table = Table::parse("leader_locks").unwrap();
        assert_eq!(table.quoted(), "\"leader_locks\"");
        assert_eq!(table.channel(), "leader_locks_released");
        let table = Table::parse("ops.Locks2").unwrap();
        assert_eq!(table.quoted(), "\"ops\".\"Locks2\"");
        assert_eq!(table.listen(), "LISTEN \"ops.Locks2_released\"");
        assert!(Table::parse(&"a".repeat(MAX_TABLE_LEN)).is_ok());
        let table = Table::parse("ops.Locks2").unwrap();
        assert_eq!(table.rw().quoted(), "\"ops\".\"Locks2_rw\"");
        assert_eq!(table.rw_holders().quoted(), "\"ops\".\"Locks2_rw_hold\"");
        assert_eq!(table.rw_function().quoted(), "\"ops\".\"Locks2_rw_v2\"");
        let longest = Table::parse(&"a".repeat(MAX_TABLE_LEN)).unwrap();
        for derived in [longest.rw(), longest.rw_holders(), longest.rw_function()] {
            assert!(derived.name().len() <= 63, "{}", derived.name());
        }
    }

    #[test]
    fn refuses_what_could_break_out_of_the_quotes_or_the_limits() {
        for bad in [
            "",
            ".",
            "a.",
            "a.b.c",
            "1locks",
            "locks\"; DROP TABLE x; --",
            "lo cks",
            "lòcks",
            "a-b",
        ] {
            assert!(Table::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Table::parse(&"a".repeat(MAX_TABLE_LEN + 1)).is_err());
    }
}
