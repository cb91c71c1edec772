//! The operator's calls as [`Op`]s: listing the held locks under a prefix, and freeing a
//! lock whoever holds it (or only while its holder has a given fencing token). Like `ops`,
//! nothing here knows about threads or runtimes.

use etcd_client::{Compare, CompareOp, GetOptions, Txn};
use leader_core::kit::calls;
use leader_core::{ForceReleaseOutcome, LeaderState, ListCursor, ListPage};

use crate::conn::Conn;
use crate::error::{BACKEND, OpError};
use crate::keys::prefix_end;
use crate::ops::txn::LockKeys;
use crate::ops::{Answer, Op, lapsed};
use crate::record::HolderRecord;

/// How many times a conditional force release reads the holder again after it changed
/// between the read and the delete.
const FORCE_ATTEMPTS: usize = 3;

impl Op for calls::List {
    /// One page of the holder keys under the prefix, in byte-wise name order, after the
    /// cursor's name: one linearizable range read, one key more than the page holds to
    /// tell whether another page follows. The cursor is the last name read, tagged with
    /// this backend and the prefix: one of another listing is refused. A holder is left
    /// out only when its lease is [`lapsed`] (its keys not yet removed by etcd), as
    /// `state` would.
    async fn run(self, conn: Conn) -> Result<ListPage, OpError> {
        let holders = conn.keys.holder_prefix().as_bytes().to_vec();
        let after = ListCursor::resume(BACKEND, &self.request)?;
        let start = match after {
            // The first key after the cursor's name.
            Some(name) => [holders.as_slice(), name.as_bytes(), b"\0"].concat(),
            None => [holders.as_slice(), self.request.prefix.as_bytes()].concat(),
        };
        let end = match self.request.prefix_end() {
            Some(end) => [holders.as_slice(), end.as_bytes()].concat(),
            None => prefix_end(&holders),
        };
        let limit = self.request.page_size();
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let mut answer = conn
            .client
            .kv_client()
            .get(
                start,
                Some(GetOptions::new().with_range(end).with_limit(fetch)),
            )
            .await?;
        let kvs = answer.take_kvs();
        let more = kvs.len() > limit;
        let mut locks = Vec::with_capacity(kvs.len().min(limit));
        let mut last = None;
        for kv in kvs.iter().take(limit) {
            let name = conn
                .keys
                .name_of_holder(kv.key())
                .ok_or_else(|| OpError::corrupt(kv.key(), "not a lock name"))?;
            let holder = HolderRecord::decode(kv.key(), kv.value())?.holder();
            if !lapsed(&conn, &holder, kv.lease()).await? {
                locks.push(LeaderState::occupied(name.as_str(), holder));
            }
            last = Some(name);
        }
        let next = more
            .then(|| last.map(|name| ListCursor::tagged(BACKEND, &self.request, name.as_str())))
            .flatten();
        Ok(ListPage::new(locks, next))
    }
}

impl Op for calls::ForceRelease {
    /// Without a token: one transaction deleting both keys, the holder read from what it
    /// deleted. With one: the holder read, then deleted by a transaction that holds only
    /// while the holder key is the one read (its `mod_revision`), so a holder that took
    /// over in between is never freed. A holder key that exists is a held lock, whatever
    /// the times in its record say (they are the holder's clock).
    async fn run(self, conn: Conn) -> Result<ForceReleaseOutcome, OpError> {
        let keys = LockKeys::of(&conn.keys, self.key.as_str());
        let Some(token) = self.only else {
            let txn = Txn::new().and_then(keys.free());
            let mut answer = Answer::read(conn.client.kv_client().txn(txn).await?);
            let lock = answer.deleted(0)?;
            let holder = answer.deleted(1)?;
            if let Some(lock) = &lock {
                conn.revoke_later(lock.lease);
            }
            return Ok(match holder {
                Some(kv) => ForceReleaseOutcome::Released(
                    HolderRecord::decode(&kv.key, &kv.value)?.holder(),
                ),
                None => ForceReleaseOutcome::NotHeld,
            });
        };
        for _ in 0..FORCE_ATTEMPTS {
            let mut read = conn
                .client
                .kv_client()
                .get(keys.holder.clone(), None)
                .await?;
            let Some(kv) = read.take_kvs().pop() else {
                return Ok(ForceReleaseOutcome::NotHeld);
            };
            let record = HolderRecord::decode(kv.key(), kv.value())?;
            if record.fencing_token != token {
                return Ok(ForceReleaseOutcome::HolderChanged(record.holder()));
            }
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    keys.holder.clone(),
                    CompareOp::Equal,
                    kv.mod_revision(),
                )])
                .and_then(keys.free());
            let mut answer = Answer::read(conn.client.kv_client().txn(txn).await?);
            if answer.succeeded {
                if let Some(lock) = answer.deleted(0)? {
                    conn.revoke_later(lock.lease);
                }
                return Ok(ForceReleaseOutcome::Released(record.holder()));
            }
        }
        Err(OpError::FenceContended)
    }
}
