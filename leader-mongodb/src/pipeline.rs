//! The filters and update pipelines of each operation: plain functions, no I/O.
//!
//! Every time is the server's: "now" is `$$NOW`, evaluated by the server, in every
//! operation. The lock document's times decide who holds the lock, so they must all come
//! from one clock; the clocks of a fleet's nodes differ (by 30 s, mutual exclusion broke
//! with node clocks). `use_db_time` therefore changes nothing for this backend.
//!
//! Only expressions that MongoDB 4.4+ and the test server both accept are used: date
//! arithmetic goes through `$toLong`/`$toDate` (never `$add` on a date or `$dateAdd`),
//! and strings that come from callers (node ids) are wrapped in `$literal` so that a
//! node id starting with `$` is never read as a field path.

use std::time::Duration;

use leader_core::{LockName, OwnerToken};
use mongodb::bson::{Bson, Document, doc};

use crate::document::field::{ACQUIRED_AT, EXPIRES_AT, FENCING_TOKEN, ID, LEADER_ID, OWNER};
use crate::time::millis;

/// The lock fields as expression paths (`$field`), spelled out to save an allocation each.
mod path {
    pub(super) const ID: &str = "$_id";
    pub(super) const OWNER: &str = "$owner";
    pub(super) const LEADER_ID: &str = "$leader_id";
    pub(super) const FENCING_TOKEN: &str = "$fencing_token";
    pub(super) const ACQUIRED_AT: &str = "$acquired_at";
    pub(super) const EXPIRES_AT: &str = "$expires_at";
}

/// The server's clock, as an expression.
const NOW: &str = "$$NOW";

/// The field the state pipeline adds with the server's time.
pub(crate) const SERVER_NOW: &str = "_leader_now";

/// `{$toDate: {$add: [{$toLong: <date>}, ms]}}`: date plus milliseconds, without `$add` on dates.
pub(crate) fn plus_millis(date: impl Into<Bson>, ms: i64) -> Bson {
    Bson::Document(doc! { "$toDate": { "$add": [ { "$toLong": date.into() }, ms ] } })
}

/// The next fencing token: `max(stored + 1, server time in microseconds)` (the server's
/// clock has millisecond precision, so the time part is `ms × 1000`). A missing or
/// rolled-back counter — the document deleted by an operator or a TTL index, restored
/// from a backup — therefore never makes a token repeat or go back.
fn next_token() -> Document {
    token_after(path::FENCING_TOKEN)
}

/// The next fencing token after the counter `counter` (an expression; missing or null is
/// 0): `max(counter + 1, server time in microseconds)`, as [`next_token`]. The read/write
/// locks' counter takes its tokens so too.
pub(crate) fn token_after(counter: impl Into<Bson>) -> Document {
    doc! { "$max": [
        { "$add": [ { "$toLong": { "$ifNull": [ counter.into(), 0_i64 ] } }, 1_i64 ] },
        { "$multiply": [ { "$toLong": NOW }, 1000_i64 ] },
    ] }
}

/// A filter and an update pipeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Selects the lock document.
    pub(crate) filter: Document,
    /// The aggregation-pipeline update.
    pub(crate) update: Vec<Document>,
}

/// Selects a lock's document by name.
pub(crate) fn by_name(key: &LockName) -> Document {
    doc! { ID: key.as_str() }
}

pub(crate) fn type_is(path: &str, types: &[&str]) -> Document {
    match types {
        [one] => doc! { "$eq": [ { "$type": path }, one ] },
        _ => doc! { "$in": [ { "$type": path }, types ] },
    }
}

/// True when every lock field has the type and range this backend writes.
fn well_formed() -> Document {
    doc! { "$and": [
        type_is(path::OWNER, &["string", "null"]),
        type_is(path::LEADER_ID, &["string"]),
        type_is(path::FENCING_TOKEN, &["long", "int"]),
        { "$gte": [ path::FENCING_TOKEN, 0_i64 ] },
        type_is(path::ACQUIRED_AT, &["date"]),
        type_is(path::EXPIRES_AT, &["date"]),
    ] }
}

/// Acquire: one `findOneAndUpdate` (upsert, return the new document) on [`by_name`].
///
/// One `$replaceWith` stage, so that each condition is evaluated once (`$let`):
/// - `ok`: every lock field has the type and range this backend writes;
/// - `free`: the document is the bare `{_id}` the upsert just made, or it is `ok` and
///   released (`owner: null`) or expired on the server's clock;
/// - `ours`: it is `ok`, unexpired and held by `owner`.
///
/// When `free`, the lock is taken: new owner, node id and times, and the next fencing
/// token ([`next_token`]). When `ours`, it is renewed: only `expires_at` moves. Otherwise
/// the document stays as it is (`$$ROOT`), including a document of the wrong shape, and
/// decoding the returned document tells the holder, or the shape error. The document holds
/// exactly the six lock fields afterwards.
pub(crate) fn acquire(
    key: &LockName,
    owner: OwnerToken,
    leader_id: &str,
    lease_time: Duration,
) -> Plan {
    let owner = owner.to_string();
    let fresh = doc! { "$eq": [ "$$ROOT", { "$literal": { ID: key.as_str() } } ] };
    let expired = doc! { "$or": [
        { "$eq": [ path::OWNER, Bson::Null ] },
        { "$lte": [ path::EXPIRES_AT, NOW ] },
    ] };
    let free = doc! { "$or": [ fresh, { "$and": [ "$$ok", expired ] } ] };
    let ours = doc! { "$and": [
        "$$ok",
        { "$eq": [ path::OWNER, &owner ] },
        { "$gt": [ path::EXPIRES_AT, NOW ] },
    ] };
    let taken = doc! {
        ID: path::ID,
        OWNER: { "$literal": &owner },
        LEADER_ID: { "$cond": [ "$$free", { "$literal": leader_id }, path::LEADER_ID ] },
        FENCING_TOKEN: { "$cond": [ "$$free", next_token(), path::FENCING_TOKEN ] },
        ACQUIRED_AT: { "$cond": [ "$$free", NOW, path::ACQUIRED_AT ] },
        EXPIRES_AT: plus_millis(NOW, millis(lease_time)),
    };
    let update = vec![doc! { "$replaceWith": { "$let": {
        "vars": { "ok": well_formed() },
        "in": { "$let": {
            "vars": { "free": free, "ours": ours },
            "in": { "$cond": [ { "$or": [ "$$free", "$$ours" ] }, taken, "$$ROOT" ] },
        } },
    } } }];
    Plan {
        filter: by_name(key),
        update,
    }
}

/// Extend: one `findOneAndUpdate` (no upsert, return the new document) that matches only
/// `owner`'s lease unexpired on the server's clock and moves `expires_at` to now +
/// `lease_time`.
pub(crate) fn extend(key: &LockName, owner: OwnerToken, lease_time: Duration) -> Plan {
    Plan {
        filter: doc! {
            ID: key.as_str(),
            OWNER: owner.to_string(),
            "$expr": unexpired(),
        },
        update: vec![doc! { "$set": { EXPIRES_AT: plus_millis(NOW, millis(lease_time)) } }],
    }
}

/// The `owner` of a lock kept for its minimum lease after its release: held, but no longer
/// by anyone who could renew or release it.
pub(crate) const RELEASED: &str = "released";

/// Release: one `updateOne` that matches `owner`'s document and moves `expires_at` to
/// `min(expires_at, acquired_at + min_lease_time)`.
///
/// Without a minimum lease the owner is cleared too. With one, a second stage decides on
/// the server's clock from the new expiry: still ahead, the owner becomes [`RELEASED`], so
/// the lock stays held until then while a renewal that was still on its way no longer
/// matches and cannot stretch it; already passed, the owner is cleared as by a plain
/// release. Only a null owner fires the change stream (see `listener`), so every release
/// that frees the lock must write one, or waiters would learn of it only by polling. The
/// document stays either way, so the fencing counter survives.
pub(crate) fn release(key: &LockName, owner: OwnerToken, min_lease_time: Duration) -> Plan {
    let filter = doc! { ID: key.as_str(), OWNER: owner.to_string() };
    if min_lease_time.is_zero() {
        let update = vec![doc! { "$set": {
            EXPIRES_AT: { "$min": [ path::EXPIRES_AT, path::ACQUIRED_AT ] },
            OWNER: Bson::Null,
        } }];
        return Plan { filter, update };
    }
    let keep_until = plus_millis(path::ACQUIRED_AT, millis(min_lease_time));
    let update = vec![
        doc! { "$set": { EXPIRES_AT: { "$min": [ path::EXPIRES_AT, keep_until ] } } },
        doc! { "$set": { OWNER: { "$cond": [ unexpired(), RELEASED, Bson::Null ] } } },
    ];
    Plan { filter, update }
}

/// Force release: one `findOneAndUpdate` (no upsert, return the document *before*) that
/// matches the lock while anyone holds it — a well-formed document with an owner (a
/// [`RELEASED`] one kept for its minimum lease included), unexpired on the server's clock —
/// and frees it as a release without minimum lease does: owner cleared, `expires_at` moved
/// to now. The document stays, so the fencing counter survives; the holder's next extend
/// or release no longer matches its owner token. A document of another shape is never
/// written: it matches nothing.
pub(crate) fn force_release(key: &LockName) -> Plan {
    Plan {
        filter: held(key),
        update: vec![doc! { "$set": { OWNER: Bson::Null, EXPIRES_AT: NOW } }],
    }
}

/// Conditional force release: [`force_release`]'s `findOneAndUpdate` and filter, whose
/// update frees the lock only when its `fencing_token` is `fencing_token` and otherwise
/// sets every field to what it was. The document before (returned) tells the caller which
/// happened: it is the holder, and it was freed if and only if its token is the one given,
/// both read and written in the one atomic update. A token above `i64::MAX` is no token
/// this backend stores, so it frees nothing.
pub(crate) fn force_release_if(key: &LockName, fencing_token: u64) -> Plan {
    let same = match i64::try_from(fencing_token) {
        Ok(token) => Bson::Document(doc! { "$eq": [ path::FENCING_TOKEN, token ] }),
        Err(_) => Bson::Boolean(false),
    };
    Plan {
        filter: held(key),
        update: vec![doc! { "$set": {
            OWNER: { "$cond": [ same.clone(), Bson::Null, path::OWNER ] },
            EXPIRES_AT: { "$cond": [ same, NOW, path::EXPIRES_AT ] },
        } }],
    }
}

/// The lock `key` while anyone holds it: a well-formed document with an owner (a
/// [`RELEASED`] one included), unexpired on the server's clock.
fn held(key: &LockName) -> Document {
    doc! {
        ID: key.as_str(),
        OWNER: { "$type": "string" },
        "$expr": { "$and": [ well_formed(), unexpired() ] },
    }
}

/// True while the lease runs on the server's clock (`expires_at > $$NOW`).
pub(crate) fn unexpired() -> Document {
    doc! { "$gt": [ path::EXPIRES_AT, NOW ] }
}

/// State: an aggregation returning the lock document with the server's time in [`SERVER_NOW`].
pub(crate) fn state(key: &LockName) -> Vec<Document> {
    vec![
        doc! { "$match": by_name(key) },
        doc! { "$limit": 1 },
        doc! { "$set": { SERVER_NOW: "$$NOW" } },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> LockName {
        LockName::new("nightly").unwrap()
    }

    /// The `$let` chain of the acquire pipeline: (ok, free/ours vars, the taken document).
    fn parts(plan: &Plan) -> (&Document, &Document, &Document) {
        assert_eq!(plan.update.len(), 1, "one stage");
        let outer = plan.update[0]
            .get_document("$replaceWith")
            .unwrap()
            .get_document("$let")
            .unwrap();
        let ok = outer.get_document("vars").unwrap();
        let inner = outer
            .get_document("in")
            .unwrap()
            .get_document("$let")
            .unwrap();
        let cond = inner
            .get_document("in")
            .unwrap()
            .get_array("$cond")
            .unwrap();
        let Bson::Document(taken) = &cond[1] else {
            panic!("{cond:?}")
        };
        assert_eq!(cond[2], Bson::from("$$ROOT"), "otherwise unchanged");
        (ok, inner.get_document("vars").unwrap(), taken)
    }

    #[test]
    fn acquire_takes_every_time_from_the_server_and_quotes_the_node_id() {
        let owner = OwnerToken::from_u128(1);
        let plan = acquire(&key(), owner, "$node", Duration::from_millis(1500));
        assert_eq!(plan.filter, doc! { "_id": "nightly" });
        let (ok, vars, taken) = parts(&plan);
        assert!(ok.contains_key("ok"));
        assert!(vars.contains_key("free") && vars.contains_key("ours"));
        assert_eq!(
            taken.get(EXPIRES_AT),
            Some(&Bson::Document(
                doc! { "$toDate": { "$add": [ { "$toLong": "$$NOW" }, 1500_i64 ] } }
            ))
        );
        let leader = taken
            .get_document(LEADER_ID)
            .unwrap()
            .get_array("$cond")
            .unwrap();
        assert_eq!(leader[1], Bson::Document(doc! { "$literal": "$node" }));
        assert_eq!(
            taken.get_document(OWNER).unwrap(),
            &doc! { "$literal": owner.to_string() }
        );
        let text = format!("{:?}", plan.update);
        assert!(!text.contains("$dateAdd"), "{text}");
        assert!(!text.contains("DateTime"), "no node clock: {text}");
    }

    #[test]
    fn the_next_token_is_never_below_the_server_clock_in_microseconds() {
        let plan = acquire(
            &key(),
            OwnerToken::from_u128(1),
            "n",
            Duration::from_secs(1),
        );
        let (_, _, taken) = parts(&plan);
        let token = taken
            .get_document(FENCING_TOKEN)
            .unwrap()
            .get_array("$cond")
            .unwrap();
        assert_eq!(token[1], Bson::Document(next_token()));
        let text = format!("{:?}", next_token());
        assert!(text.contains("$max") && text.contains("$$NOW"), "{text}");
    }

    #[test]
    fn extend_checks_owner_and_expiry_on_the_server_clock() {
        let owner = OwnerToken::from_u128(0xabc);
        let plan = extend(&key(), owner, Duration::from_secs(2));
        assert_eq!(
            plan.filter,
            doc! {
                "_id": "nightly",
                "owner": owner.to_string(),
                "$expr": { "$gt": [ "$expires_at", "$$NOW" ] },
            }
        );
        assert_eq!(
            plan.update,
            vec![doc! { "$set": { "expires_at": {
                "$toDate": { "$add": [ { "$toLong": "$$NOW" }, 2000_i64 ] }
            } } }]
        );
    }

    #[test]
    fn release_clears_the_owner_or_marks_the_lock_released_while_the_minimum_lease_runs() {
        let owner = OwnerToken::from_u128(5);
        let plain = release(&key(), owner, Duration::ZERO);
        assert_eq!(
            plain.update,
            vec![doc! { "$set": {
                "expires_at": { "$min": [ "$expires_at", "$acquired_at" ] },
                "owner": Bson::Null,
            } }]
        );
        let min = release(&key(), owner, Duration::from_secs(1));
        assert_eq!(
            min.update,
            vec![
                doc! { "$set": { "expires_at": { "$min": [ "$expires_at", {
                    "$toDate": { "$add": [ { "$toLong": "$acquired_at" }, 1000_i64 ] }
                } ] } } },
                // Decided on the expiry the first stage wrote: freed once it has passed.
                doc! { "$set": { "owner": { "$cond": [
                    { "$gt": [ "$expires_at", "$$NOW" ] }, RELEASED, Bson::Null,
                ] } } },
            ]
        );
        assert_eq!(
            min.filter,
            doc! { "_id": "nightly", "owner": owner.to_string() }
        );
        assert_eq!(plain.filter, min.filter);
    }

    #[test]
    fn force_release_matches_any_live_holder_and_frees_it_on_the_server_clock() {
        let plan = force_release(&key());
        assert_eq!(plan.filter.get_str(ID), Ok("nightly"));
        assert_eq!(
            plan.filter.get_document(OWNER).unwrap(),
            &doc! { "$type": "string" }
        );
        let checks = plan
            .filter
            .get_document("$expr")
            .unwrap()
            .get_array("$and")
            .unwrap();
        assert_eq!(checks[0], Bson::Document(well_formed()));
        assert_eq!(
            checks[1],
            Bson::Document(doc! { "$gt": [ "$expires_at", "$$NOW" ] })
        );
        assert_eq!(
            plan.update,
            vec![doc! { "$set": { "owner": Bson::Null, "expires_at": "$$NOW" } }]
        );
    }

    #[test]
    fn force_release_if_frees_only_the_token_given_and_keeps_the_rest() {
        let plan = force_release_if(&key(), 42);
        assert_eq!(
            plan.filter,
            force_release(&key()).filter,
            "the same live holder"
        );
        let same = Bson::Document(doc! { "$eq": [ "$fencing_token", 42_i64 ] });
        assert_eq!(
            plan.update,
            vec![doc! { "$set": {
                "owner": { "$cond": [ same.clone(), Bson::Null, "$owner" ] },
                "expires_at": { "$cond": [ same, "$$NOW", "$expires_at" ] },
            } }]
        );
        let never = force_release_if(&key(), u64::MAX);
        let set = never.update[0].get_document("$set").unwrap();
        let cond = set.get_document(OWNER).unwrap().get_array("$cond").unwrap();
        assert_eq!(
            cond[0],
            Bson::Boolean(false),
            "no stored token is above i64::MAX"
        );
    }

    #[test]
    fn paths_name_the_fields() {
        for (path, field) in [
            (path::ID, ID),
            (path::OWNER, OWNER),
            (path::LEADER_ID, LEADER_ID),
            (path::FENCING_TOKEN, FENCING_TOKEN),
            (path::ACQUIRED_AT, ACQUIRED_AT),
            (path::EXPIRES_AT, EXPIRES_AT),
        ] {
            assert_eq!(path, format!("${field}"));
        }
    }

    #[test]
    fn state_adds_the_server_time() {
        let stages = state(&key());
        assert_eq!(stages[0], doc! { "$match": { "_id": "nightly" } });
        assert_eq!(stages[2], doc! { "$set": { SERVER_NOW: "$$NOW" } });
    }
}
