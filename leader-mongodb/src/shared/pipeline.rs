//! The filters and update pipelines of the read/write lock calls: plain functions, no I/O.
//!
//! They write `SharedRecord`'s rules (`leader_core::kit`) as aggregation expressions, on
//! the server's clock (`$$NOW`) as the exclusive pipelines (`crate::pipeline`) do, with
//! the same operators only (`$toLong`/`$toDate` for date arithmetic, `$literal` around
//! node ids) and the array operators `$filter`, `$map`, `$in`, `$size`,
//! `$concatArrays` and `$mergeObjects`, which MongoDB 4.4+ and the test server accept.
//!
//! Every update is gated by [`well_formed`]: a document in a shape this backend never
//! writes is left as it is (the acquire returns it and decoding reports it; extend and
//! release match nothing).

use std::time::Duration;

use leader_core::{LockName, OwnerToken, Role};
use mongodb::bson::{Bson, Document, doc};

use crate::pipeline::{Plan, by_name, plus_millis, token_after, type_is};
use crate::shared::document::field::{
    ACQUIRED_AT, COUNTER, EXPIRES_AT, FENCING_TOKEN, ID, INTENT, LEADER_ID, OWNER, READERS,
    RELEASED, RELEASES, WRITER,
};
use crate::time::millis;

/// The server's clock, as an expression.
const NOW: &str = "$$NOW";

/// The document's fields as expression paths.
mod path {
    pub(super) const ID: &str = "$_id";
    pub(super) const COUNTER: &str = "$counter";
    pub(super) const WRITER: &str = "$writer";
    pub(super) const READERS: &str = "$readers";
    pub(super) const INTENT: &str = "$intent";
    pub(super) const RELEASES: &str = "$releases";
}

/// `<var>.<field>` as an expression path (`$$r.owner`, `$writer.expires_at`).
fn at(base: &str, field: &str) -> String {
    format!("{base}.{field}")
}

/// True when the holder at `base` (a `$path` or `$$var`) has every field this backend
/// writes, of its type.
fn holder_ok(base: &str) -> Document {
    doc! { "$and": [
        type_is(base, &["object"]),
        type_is(&at(base, OWNER), &["string"]),
        type_is(&at(base, LEADER_ID), &["string"]),
        type_is(&at(base, FENCING_TOKEN), &["long", "int"]),
        { "$gte": [ at(base, FENCING_TOKEN), 0_i64 ] },
        type_is(&at(base, ACQUIRED_AT), &["date"]),
        type_is(&at(base, EXPIRES_AT), &["date"]),
        type_is(&at(base, RELEASED), &["bool"]),
    ] }
}

/// True when the document has every field this backend writes, of its type and range:
/// the counter, the writer (or null), the readers (an array of holders), the intent (or
/// null) and the count of releases.
pub(crate) fn well_formed() -> Document {
    // `$cond` rather than `$and` where the second test reads into the first's subject: a
    // `$map` over a field that is no array would fail the whole command.
    let readers_ok = doc! { "$cond": [
        { "$isArray": path::READERS },
        { "$not": [ { "$in": [ false, { "$map": {
            "input": path::READERS, "as": "h", "in": holder_ok("$$h"),
        } } ] } ] },
        false,
    ] };
    let intent_ok = doc! { "$or": [
        type_is(path::INTENT, &["null"]),
        { "$and": [
            type_is(path::INTENT, &["object"]),
            type_is(&at(path::INTENT, OWNER), &["string"]),
            type_is(&at(path::INTENT, LEADER_ID), &["string"]),
            type_is(&at(path::INTENT, EXPIRES_AT), &["date"]),
        ] },
    ] };
    doc! { "$and": [
        type_is(path::COUNTER, &["long", "int"]),
        { "$gte": [ path::COUNTER, 0_i64 ] },
        type_is(path::RELEASES, &["long", "int"]),
        { "$or": [ type_is(path::WRITER, &["null"]), holder_ok(path::WRITER) ] },
        readers_ok,
        intent_ok,
    ] }
}

/// True when the holder at `base` is `owner`'s and not released (kept for its minimum
/// lease): the hold its owner may renew or release.
fn is_for(base: &str, owner: &str) -> Document {
    doc! { "$and": [
        { "$eq": [ at(base, OWNER), { "$literal": owner } ] },
        { "$eq": [ at(base, RELEASED), false ] },
    ] }
}

/// True while the hold (or intent) at `base` runs on the server's clock.
fn live(base: &str) -> Document {
    doc! { "$gt": [ at(base, EXPIRES_AT), NOW ] }
}

/// True when some element of the array `input` satisfies `cond` (over `$$h`).
fn any(input: impl Into<Bson>, cond: Document) -> Document {
    doc! { "$in": [ true, { "$map": { "input": input.into(), "as": "h", "in": cond } } ] }
}

/// The `$filter` of the readers whose hold runs past now.
fn live_readers() -> Document {
    doc! { "$filter": {
        "input": { "$ifNull": [ path::READERS, [] ] },
        "as": "h",
        "cond": live("$$h"),
    } }
}

/// The holder or intent at `path`, or null once it ran out.
fn unless_expired(path: &str) -> Document {
    doc! { "$cond": [ live(path), path, Bson::Null ] }
}

/// `holder` with its expiry moved to `expires`.
fn renewed(holder: &str, expires: &Bson) -> Document {
    doc! { "$mergeObjects": [ holder, { EXPIRES_AT: expires.clone() } ] }
}

/// Acquire: one `findOneAndUpdate` (upsert, return the new document) on [`by_name`].
///
/// One `$replaceWith` stage. Unless the document is the bare `{_id}` the upsert just made
/// or [`well_formed`], it is written back as it was. Otherwise (`SharedRecord::acquire`):
/// the holds and the intent that ran out are dropped (`$$w`, `$$rs`, `$$it`), then
/// - a read renews the owner's live reader; else it is refused (written back pruned)
///   while a writer holds the lock, another owner's intent is live or `max_readers`
///   readers hold it; else it joins the readers with the next token;
/// - a write renews the owner's writer; is refused beside another writer or another
///   owner's live intent; records (or renews) its intent while readers remain; else takes
///   the lock with the next token and clears the intent.
///
/// The document written holds exactly the six fields, and tells the caller the answer:
/// its live unreleased hold in the role is a grant, its intent (a write) a queue, else
/// refused (see `shared::answer`).
pub(crate) fn acquire(
    key: &LockName,
    role: Role,
    owner: OwnerToken,
    leader_id: &str,
    lease_time: Duration,
    max_readers: u32,
) -> Plan {
    let owner = owner.to_string();
    let expires = plus_millis(NOW, millis(lease_time));
    let fresh = doc! { "$eq": [ "$$ROOT", { "$literal": { ID: key.as_str() } } ] };
    let other_intent = doc! { "$and": [
        { "$ne": [ "$$it", Bson::Null ] },
        { "$ne": [ "$$it.owner", { "$literal": &owner } ] },
    ] };
    let grant = doc! {
        OWNER: { "$literal": &owner },
        LEADER_ID: { "$literal": leader_id },
        FENCING_TOKEN: "$$token",
        ACQUIRED_AT: NOW,
        EXPIRES_AT: expires.clone(),
        RELEASED: false,
    };
    // The decisions on the pruned record, and the document they write.
    let (decide, written) = match role {
        Role::Read => {
            let blocked = doc! { "$or": [
                { "$ne": [ "$$w", Bson::Null ] },
                other_intent,
                { "$gte": [ { "$size": "$$rs" }, i64::from(max_readers) ] },
            ] };
            let renew = doc! { "$map": { "input": "$$rs", "as": "h", "in": { "$cond": [
                is_for("$$h", &owner), renewed("$$h", &expires), "$$h",
            ] } } };
            let readers = doc! { "$cond": [
                "$$mine",
                renew,
                { "$cond": [ "$$blocked", "$$rs", { "$concatArrays": [ "$$rs", [ grant ] ] } ] },
            ] };
            let counter = doc! { "$cond": [
                { "$or": [ "$$mine", "$$blocked" ] }, "$$counter", "$$token",
            ] };
            (
                doc! { "mine": any("$$rs", is_for("$$h", &owner)), "blocked": blocked },
                doc! {
                    ID: path::ID,
                    COUNTER: counter,
                    WRITER: "$$w",
                    READERS: readers,
                    INTENT: "$$it",
                    RELEASES: "$$releases",
                },
            )
        }
        Role::Write => {
            let free_of_others = doc! { "$and": [
                { "$eq": [ "$$w", Bson::Null ] },
                { "$not": [ other_intent ] },
            ] };
            let queue = doc! { "$and": [
                free_of_others.clone(),
                { "$gt": [ { "$size": "$$rs" }, 0 ] },
            ] };
            let take = doc! { "$and": [
                free_of_others,
                { "$eq": [ { "$size": "$$rs" }, 0 ] },
            ] };
            let mine = doc! { "$and": [
                { "$ne": [ "$$w", Bson::Null ] },
                is_for("$$w", &owner),
            ] };
            let intent = doc! {
                OWNER: { "$literal": &owner },
                LEADER_ID: { "$literal": leader_id },
                EXPIRES_AT: expires.clone(),
            };
            (
                doc! { "mine": mine, "queue": queue, "take": take },
                doc! {
                    ID: path::ID,
                    COUNTER: { "$cond": [ "$$take", "$$token", "$$counter" ] },
                    WRITER: { "$cond": [
                        "$$mine",
                        renewed("$$w", &expires),
                        { "$cond": [ "$$take", grant, "$$w" ] },
                    ] },
                    READERS: "$$rs",
                    INTENT: { "$cond": [
                        "$$queue",
                        intent,
                        { "$cond": [ "$$take", Bson::Null, "$$it" ] },
                    ] },
                    RELEASES: "$$releases",
                },
            )
        }
    };
    let pruned = doc! {
        "w": unless_expired(path::WRITER),
        "rs": live_readers(),
        "it": unless_expired(path::INTENT),
        "counter": { "$toLong": { "$ifNull": [ path::COUNTER, 0_i64 ] } },
        "releases": { "$ifNull": [ path::RELEASES, 0_i64 ] },
        "token": token_after(path::COUNTER),
    };
    let update = vec![doc! { "$replaceWith": { "$cond": [
        { "$or": [ fresh, well_formed() ] },
        { "$let": {
            "vars": pruned,
            "in": { "$let": { "vars": decide, "in": written } },
        } },
        "$$ROOT",
    ] } }];
    Plan {
        filter: by_name(key),
        update,
    }
}

/// The filter of an extend or a release: the well-formed document of `key` where
/// `owner` holds a live, unreleased hold in `role` (for a write's release, or a live
/// intent). A document of another shape matches nothing and is never written.
fn holding(key: &LockName, role: Role, owner: &str, or_intent: bool) -> Document {
    let holds = match role {
        Role::Read => any(
            path::READERS,
            doc! { "$and": [ is_for("$$h", owner), live("$$h") ] },
        ),
        Role::Write => {
            let writer = doc! { "$and": [
                { "$ne": [ path::WRITER, Bson::Null ] },
                is_for(path::WRITER, owner),
                live(path::WRITER),
            ] };
            if or_intent {
                doc! { "$or": [ writer, { "$and": [
                    { "$ne": [ path::INTENT, Bson::Null ] },
                    { "$eq": [ at(path::INTENT, OWNER), { "$literal": owner } ] },
                    live(path::INTENT),
                ] } ] }
            } else {
                writer
            }
        }
    };
    doc! {
        ID: key.as_str(),
        "$expr": { "$cond": [ well_formed(), holds, false ] },
    }
}

/// Extend: one `findOneAndUpdate` (no upsert, return the new document) matching
/// `owner`'s live unreleased hold in `role` ([`holding`]), moving its expiry to now +
/// `lease_time`.
pub(crate) fn extend(key: &LockName, role: Role, owner: OwnerToken, lease_time: Duration) -> Plan {
    let owner = owner.to_string();
    let expires = plus_millis(NOW, millis(lease_time));
    let set = match role {
        Role::Read => doc! { READERS: { "$map": { "input": path::READERS, "as": "h", "in": {
            "$cond": [ is_for("$$h", &owner), renewed("$$h", &expires), "$$h" ],
        } } } },
        Role::Write => doc! { WRITER: renewed(path::WRITER, &expires) },
    };
    Plan {
        filter: holding(key, role, &owner, false),
        update: vec![doc! { "$set": set }],
    }
}

/// Release: one `updateOne` matching `owner`'s live unreleased hold in `role` (a
/// writer's: or its live intent) ([`holding`]).
///
/// Without a minimum lease the hold is removed. With one, it is kept, marked `released`
/// and its expiry moved to `min(expires_at, acquired_at + min_lease_time)`, while that is
/// ahead on the server's clock; once it has passed, it is removed as by a plain release.
/// A writer without a hold withdraws its intent. Every release that removes a hold or an
/// intent adds one to `releases`, the change the change stream watches for (see
/// `listener`), so waiters on every node wake at once.
pub(crate) fn release(
    key: &LockName,
    role: Role,
    owner: OwnerToken,
    min_lease_time: Duration,
) -> Plan {
    let owner = owner.to_string();
    // Whether the holder at `base` stays for its minimum lease.
    let keeps = |base: &str| -> Bson {
        if min_lease_time.is_zero() {
            return Bson::Boolean(false);
        }
        let until = plus_millis(at(base, ACQUIRED_AT), millis(min_lease_time));
        Bson::Document(doc! { "$gt": [ until, NOW ] })
    };
    // What the release leaves of the holder at `base`: null (removed), or, while its
    // minimum lease runs, the holder marked released with its expiry cut to that lease's end.
    let left = |base: &str| -> Bson {
        if min_lease_time.is_zero() {
            return Bson::Null;
        }
        let until = plus_millis(at(base, ACQUIRED_AT), millis(min_lease_time));
        let kept = doc! { "$mergeObjects": [ base, {
            RELEASED: true,
            EXPIRES_AT: { "$min": [ at(base, EXPIRES_AT), until ] },
        } ] };
        Bson::Document(doc! { "$cond": [ keeps(base), kept, Bson::Null ] })
    };
    let one_more = doc! { "$add": [ path::RELEASES, 1_i64 ] };
    let set = match role {
        Role::Read => {
            let frees = any(
                path::READERS,
                doc! { "$and": [ is_for("$$h", &owner), { "$not": [ keeps("$$h") ] } ] },
            );
            let marked = doc! { "$map": { "input": path::READERS, "as": "h", "in": {
                "$cond": [
                    is_for("$$h", &owner),
                    left("$$h"),
                    "$$h",
                ],
            } } };
            doc! {
                READERS: { "$filter": {
                    "input": marked, "as": "h", "cond": { "$ne": [ "$$h", Bson::Null ] },
                } },
                RELEASES: { "$cond": [ frees, one_more, path::RELEASES ] },
            }
        }
        Role::Write => {
            let mine = doc! { "$and": [
                { "$ne": [ path::WRITER, Bson::Null ] },
                is_for(path::WRITER, &owner),
            ] };
            let stays = doc! { "$and": [ mine.clone(), keeps(path::WRITER) ] };
            doc! {
                WRITER: { "$cond": [
                    mine.clone(),
                    left(path::WRITER),
                    path::WRITER,
                ] },
                // The filter matched the writer's hold or, failing that, its intent.
                INTENT: { "$cond": [ mine, path::INTENT, Bson::Null ] },
                RELEASES: { "$cond": [ stays, path::RELEASES, one_more ] },
            }
        }
    };
    Plan {
        filter: holding(key, role, &owner, true),
        update: vec![doc! { "$set": set }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> LockName {
        LockName::new("reports").unwrap()
    }

    #[test]
    fn every_time_is_the_servers_and_node_ids_are_quoted() {
        for role in [Role::Read, Role::Write] {
            let plan = acquire(
                &key(),
                role,
                OwnerToken::from_u128(1),
                "$node",
                Duration::from_millis(1500),
                8,
            );
            assert_eq!(plan.filter, doc! { "_id": "reports" });
            let text = format!("{:?}", plan.update);
            assert!(text.contains("\"$$NOW\""), "{text}");
            assert!(!text.contains("DateTime"), "no node clock: {text}");
            assert!(!text.contains("$dateAdd"), "{text}");
            assert!(text.contains("$literal\": String(\"$node\")"), "{text}");
            assert!(text.contains("1500"), "{text}");
        }
    }

    #[test]
    fn tokens_are_floored_by_the_server_clock_as_the_exclusive_ones() {
        let plan = acquire(
            &key(),
            Role::Write,
            OwnerToken::from_u128(1),
            "n",
            Duration::from_secs(1),
            8,
        );
        let text = format!("{:?}", plan.update);
        let token = format!("{:?}", token_after(path::COUNTER));
        assert!(text.contains(&token), "{text}");
        assert!(token.contains("$max") && token.contains("1000"), "{token}");
    }

    #[test]
    fn extend_and_release_match_only_a_well_formed_document_the_owner_holds() {
        let owner = OwnerToken::from_u128(7);
        for role in [Role::Read, Role::Write] {
            for plan in [
                extend(&key(), role, owner, Duration::from_secs(1)),
                release(&key(), role, owner, Duration::ZERO),
            ] {
                assert_eq!(plan.filter.get_str(ID), Ok("reports"));
                let cond = plan
                    .filter
                    .get_document("$expr")
                    .unwrap()
                    .get_array("$cond")
                    .unwrap();
                assert_eq!(cond[0], Bson::Document(well_formed()));
                assert_eq!(cond[2], Bson::Boolean(false));
                assert!(format!("{cond:?}").contains(&owner.to_string()));
            }
        }
    }

    #[test]
    fn a_plain_release_never_keeps_and_a_minimum_lease_keeps_until_its_end() {
        let owner = OwnerToken::from_u128(7);
        let plain = format!(
            "{:?}",
            release(&key(), Role::Read, owner, Duration::ZERO).update
        );
        assert!(!plain.contains("acquired_at"), "{plain}");
        let min = format!(
            "{:?}",
            release(&key(), Role::Write, owner, Duration::from_millis(250)).update
        );
        assert!(
            min.contains("acquired_at") && min.contains("250") && min.contains("$min"),
            "{min}"
        );
    }
}
