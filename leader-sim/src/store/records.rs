//! The job's run record on the model store: a versioned value written only over the
//! version expected (compare-and-set, as every backend's `write_record` is), apart from
//! the locks (no lock call touches it, it never expires).
//!
//! Data loss, by profile: Redis keeps records in the same keyspace as locks, so a restart
//! without persistence loses the record and a failover rolls it back with the locks. The
//! SQL stores keep records in a table of their own (`<table>_records`), which the
//! "rows deleted by hand" fault (the lock rows) does not touch: the record is kept. etcd
//! loses nothing, and a record write raises its revision as every write does.

use super::{Answer, ModelStore, PAST_KEPT};
use crate::plan::Profile;

impl ModelStore {
    /// The record, as `read_record` answers.
    pub(super) fn read_record(&self) -> Answer {
        Answer::Record(self.record.clone())
    }

    /// A compare-and-set write at store time `now`: written (version + 1, or 1 for a new
    /// record) only while the version is `expected`.
    pub(super) fn write_record(
        &mut self,
        expected: Option<u64>,
        value: String,
        now: u64,
    ) -> Answer {
        if self.record.as_ref().map(|(version, _)| *version) != expected {
            return Answer::RecordConflict;
        }
        let version = expected.map_or(1, |v| v.saturating_add(1));
        match self.profile {
            Profile::Redis => {
                if self.record_past.len() == PAST_KEPT {
                    self.record_past.pop_front();
                }
                self.record_past.push_back((now, self.record.clone()));
            }
            Profile::Etcd => {
                if let Some(revision) = self.counters.first_mut() {
                    *revision += 1;
                }
            }
            Profile::Sql => {}
        }
        self.record = Some((version, value));
        Answer::RecordWritten { version }
    }

    /// A loss of every record: Redis's restart without persistence loses the job's; the
    /// SQL stores' rows deleted by hand are lock rows, and the record's table is kept.
    pub(super) fn lose_record(&mut self) {
        if self.profile == Profile::Redis {
            self.record = None;
            self.record_past.clear();
        }
    }

    /// A roll-back to before every record write made after store time `since` (Redis).
    pub(super) fn roll_back_record(&mut self, since: u64) {
        while self.record_past.back().is_some_and(|(at, _)| *at >= since) {
            if let Some((_, record)) = self.record_past.pop_back() {
                self.record = record;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Call;

    fn write(store: &mut ModelStore, expected: Option<u64>, value: &str, now: u64) -> Answer {
        store.answer(
            Call::WriteRecord {
                expected,
                value: value.to_owned(),
            },
            now,
            0,
        )
    }

    #[test]
    fn a_record_is_written_only_over_the_version_expected() {
        let mut store = ModelStore::new(Profile::Sql, 1);
        assert_eq!(store.answer(Call::ReadRecord, 1, 0), Answer::Record(None));
        assert_eq!(write(&mut store, Some(1), "a", 1), Answer::RecordConflict);
        assert_eq!(
            write(&mut store, None, "a", 1),
            Answer::RecordWritten { version: 1 }
        );
        assert_eq!(write(&mut store, None, "b", 2), Answer::RecordConflict);
        assert_eq!(
            write(&mut store, Some(1), "b", 2),
            Answer::RecordWritten { version: 2 }
        );
        assert_eq!(
            store.answer(Call::ReadRecord, 3, 0),
            Answer::Record(Some((2, "b".to_owned())))
        );
        // Rows deleted by hand are lock rows: the record's table is kept.
        store.lose_all();
        assert_eq!(
            store.answer(Call::ReadRecord, 3, 0),
            Answer::Record(Some((2, "b".to_owned())))
        );
    }

    #[test]
    fn redis_loses_and_rolls_back_the_record_with_the_locks() {
        let mut store = ModelStore::new(Profile::Redis, 1);
        write(&mut store, None, "a", 10);
        write(&mut store, Some(1), "b", 20);
        store.roll_back(15);
        assert_eq!(
            store.answer(Call::ReadRecord, 30, 0),
            Answer::Record(Some((1, "a".to_owned())))
        );
        store.lose_all();
        assert_eq!(store.answer(Call::ReadRecord, 30, 0), Answer::Record(None));
    }
}
