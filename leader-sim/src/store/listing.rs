//! Listing: what a ranked campaign's survey reads. A candidate's membership record is a
//! lock of its own (`<key>#rank:<rank>:<id>`), kept here as one more record index beside
//! the lock's slots, with its own fencing counter; a backend's listing of the prefix
//! `<key>#rank:` answers the live ones, expired on the store's own clock, which is what
//! [`ModelStore::list`] does for the indices the prefix covers — in pages of at most
//! [`PAGE`] records (a backend may serve fewer than asked, as Redis's `SCAN` does), each
//! read at its own moment: a record written or gone between two pages may be missed.

use super::{ModelStore, Record};

/// The most records one page of a listing holds.
pub const PAGE: usize = 3;

impl ModelStore {
    /// One page of the live records of `slots` at store time `now`: those after index
    /// `after` (all, for the first page), in slot order, at most [`PAGE`]; with the next
    /// page's cursor (the last index covered) when the page is full.
    pub fn list(&self, slots: &[u32], after: Option<u32>, now: u64) -> (Vec<Record>, Option<u32>) {
        if self.listing_misses_records {
            return (Vec::new(), None);
        }
        let mut slots = slots.to_vec();
        slots.sort_unstable();
        slots.dedup();
        let page: Vec<Record> = slots
            .into_iter()
            .filter(|slot| after.is_none_or(|after| *slot > after))
            .filter_map(|slot| self.live(slot, now))
            .take(PAGE)
            .collect();
        let next = (page.len() == PAGE)
            .then(|| page.last().map(|r| r.slot))
            .flatten();
        (page, next)
    }

    /// A defective store whose listings answer no record at all, as a backend whose list
    /// of a prefix missed what it holds (a wrong index, a wrong range end): ranked
    /// candidates never see each other.
    pub fn with_listing_missing_records(mut self) -> Self {
        self.listing_misses_records = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use leader_core::OwnerToken;

    use super::super::{Answer, Call};
    use crate::plan::Profile;
    use crate::store::ModelStore;

    fn heartbeat(store: &mut ModelStore, owner: u128, record: u32, now: u64) -> Answer {
        store.answer(
            Call::Acquire {
                owner: OwnerToken::from_u128(owner),
                node: 0,
                lease_us: 100,
                slots: vec![record],
            },
            now,
            0,
        )
    }

    /// Every page of a listing of `slots` at `now`: (slot, token) of each record, page
    /// by page.
    fn listed(store: &mut ModelStore, slots: &[u32], now: u64) -> Vec<Vec<(u32, u64)>> {
        let mut pages = Vec::new();
        let mut after = None;
        loop {
            let call = Call::List {
                slots: slots.to_vec(),
                after,
            };
            let Answer::Listed { records, next } = store.answer(call, now, 0) else {
                panic!()
            };
            pages.push(records.iter().map(|r| (r.slot, r.token)).collect());
            match next {
                Some(cursor) => after = Some(cursor),
                None => return pages,
            }
        }
    }

    fn slots(pages: &[Vec<(u32, u64)>]) -> Vec<u32> {
        pages.iter().flatten().map(|(s, _)| *s).collect()
    }

    #[test]
    fn membership_records_are_locks_with_their_own_counters_renewed_by_their_owner() {
        let mut store = ModelStore::new(Profile::Sql, 4);
        // The lock (slot 0) and two records (1, 2): each has its own counter.
        let Answer::Acquired(lock) = heartbeat(&mut store, 9, 0, 10) else {
            panic!()
        };
        let Answer::Acquired(a) = heartbeat(&mut store, 1, 1, 10) else {
            panic!()
        };
        let Answer::Acquired(b) = heartbeat(&mut store, 2, 2, 10) else {
            panic!()
        };
        assert_eq!((lock.token, a.token, b.token), (1, 1, 1));
        // A heartbeat renews its own record, same token; another owner's is refused.
        let Answer::Acquired(again) = heartbeat(&mut store, 1, 1, 60) else {
            panic!()
        };
        assert_eq!((again.token, again.expires), (1, 160));
        assert!(matches!(heartbeat(&mut store, 3, 1, 60), Answer::Held(_)));
    }

    #[test]
    fn a_listing_answers_the_live_records_it_covers_on_the_stores_clock_in_pages() {
        let mut store = ModelStore::new(Profile::Sql, 5);
        heartbeat(&mut store, 9, 0, 10);
        heartbeat(&mut store, 1, 1, 10);
        heartbeat(&mut store, 2, 2, 50);
        heartbeat(&mut store, 3, 3, 50);
        // Only the indices asked for (the lock itself is not a record), in slot order,
        // three a page; a full page has a next one (empty here: no record after 3).
        let at_60 = listed(&mut store, &[4, 3, 2, 1, 2], 60);
        assert_eq!(at_60.len(), 2, "{at_60:?}");
        assert_eq!(slots(&at_60), vec![1, 2, 3]);
        heartbeat(&mut store, 4, 4, 60);
        let full = listed(&mut store, &[1, 2, 3, 4], 60);
        assert_eq!(full.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 1]);
        // Record 1 expires at 110 on the store's clock: gone from the listing, not later.
        assert_eq!(slots(&listed(&mut store, &[1, 2, 3], 109)), vec![1, 2, 3]);
        assert_eq!(slots(&listed(&mut store, &[1, 2, 3], 110)), vec![2, 3]);
        // A released record is gone at once.
        let release = Call::Release {
            owner: OwnerToken::from_u128(2),
            slot: 2,
        };
        assert_eq!(store.answer(release, 111, 0), Answer::Released);
        assert_eq!(listed(&mut store, &[1, 2, 3], 111), vec![vec![(3, 1)]]);
        // A page after a cursor starts past it, whatever came and went before it.
        let (page, next) = store.list(&[1, 2, 3, 4], Some(3), 111);
        assert_eq!((page.len(), page[0].slot, next), (1, 4, None));
        // Data loss takes the records with it.
        store.lose_all();
        assert!(slots(&listed(&mut store, &[1, 2, 3], 112)).is_empty());
    }

    #[test]
    fn the_planted_listing_misses_every_record() {
        let mut store = ModelStore::new(Profile::Sql, 2).with_listing_missing_records();
        heartbeat(&mut store, 1, 1, 10);
        assert!(slots(&listed(&mut store, &[1], 20)).is_empty());
        assert_eq!(
            store.holders(20).count(),
            1,
            "the record is held all the same"
        );
    }
}
