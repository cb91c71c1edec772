//! The page state machine against scripted replies: masters in turn, pages that keep
//! scanning until they hold `limit` locks, cursors that resume where a page stopped.

use std::time::SystemTime;

use leader_core::{ListCursor, ListRequest};
use redis::Value;

use super::io::Io;
use super::page::{Listing, Step};
use crate::error::OpError;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn scan_reply(next: u64, keys: &[&str]) -> Value {
    Value::Array(vec![
        bulk(&next.to_string()),
        Value::Array(keys.iter().map(|key| bulk(key)).collect()),
    ])
}

fn held_records(count: usize) -> Value {
    let mut replies = Vec::new();
    for _ in 0..count {
        replies.push(Value::Int(30_000));
        replies.push(Value::Array(vec![
            bulk("owner"),
            bulk("node"),
            bulk("7"),
            bulk("1"),
            bulk("2"),
        ]));
    }
    Value::Array(replies)
}

fn slots_reply() -> Value {
    let range = |start: i64, end: i64, port: i64| {
        Value::Array(vec![
            Value::Int(start),
            Value::Int(end),
            Value::Array(vec![bulk("127.0.0.1"), Value::Int(port), bulk("id")]),
        ])
    };
    Value::Array(vec![range(8192, 16383, 7001), range(0, 8191, 7000)])
}

/// The step must be a command; returns its name, first argument and slot.
fn command(step: Step) -> (String, String, Option<u16>) {
    let Step::Send(Io::Command { cmd, slot }) = step else {
        panic!("a command, got {step:?}")
    };
    let args: Vec<String> = cmd
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            _ => "<cursor>".to_owned(),
        })
        .collect();
    (
        args[0].clone(),
        args.get(1).cloned().unwrap_or_default(),
        slot,
    )
}

#[test]
fn a_cluster_page_scans_masters_in_address_order_until_it_holds_the_limit() {
    let request = ListRequest::new("job:").with_limit(3);
    let mut listing = Listing::new("leader", &request, true, SystemTime::now()).unwrap();
    assert_eq!(command(listing.next()).0, "CLUSTER");
    listing.feed(slots_reply()).unwrap();

    // Master 0 (port 7000, slot 0): a batch without matches, then two locks and the end.
    assert_eq!(
        command(listing.next()),
        ("SCAN".into(), "0".into(), Some(0))
    );
    listing.feed(scan_reply(17, &[])).unwrap();
    assert_eq!(
        command(listing.next()),
        ("SCAN".into(), "17".into(), Some(0))
    );
    listing
        .feed(scan_reply(
            0,
            &["leader:{job:a}", "leader:{job:b}", "leader:{job:b}"],
        ))
        .unwrap();
    let Step::Send(Io::Pipeline { cmds, slot }) = listing.next() else {
        panic!("reads")
    };
    assert_eq!(
        (cmds.len(), slot),
        (4, Some(0)),
        "a repeated key is read once"
    );
    listing.feed(held_records(2)).unwrap();

    // Two locks are fewer than three: the page goes on with master 1 (slot 8192).
    assert_eq!(
        command(listing.next()),
        ("SCAN".into(), "0".into(), Some(8192))
    );
    listing
        .feed(scan_reply(5, &["leader:{job:c}", "leader:{job:d}"]))
        .unwrap();
    let Step::Send(Io::Pipeline { slot, .. }) = listing.next() else {
        panic!("reads")
    };
    assert_eq!(slot, Some(8192));
    listing.feed(held_records(2)).unwrap();
    let Step::Done(page) = listing.next() else {
        panic!("done")
    };
    assert_eq!(
        page.locks.len(),
        4,
        "a page may exceed the limit by one batch"
    );
    let resumed = request
        .clone()
        .after(page.next.clone().expect("a next page"));
    assert!(page.next.unwrap().as_str().ends_with(":1:5"));
    assert_eq!(listing.round_trips(), 6);

    // The next page resumes on master 1 at cursor 5 and ends with its scan.
    let mut listing = Listing::new("leader", &resumed, true, SystemTime::now()).unwrap();
    let _ = listing.next();
    listing.feed(slots_reply()).unwrap();
    assert_eq!(
        command(listing.next()),
        ("SCAN".into(), "5".into(), Some(8192))
    );
    listing.feed(scan_reply(0, &[])).unwrap();
    let Step::Done(page) = listing.next() else {
        panic!("done")
    };
    assert!(page.locks.is_empty());
    assert_eq!(page.next, None);
}

#[test]
fn a_single_server_page_ends_with_its_scan_and_hides_free_locks() {
    let request = ListRequest::new("").with_limit(10);
    let mut listing = Listing::new("leader", &request, false, SystemTime::now()).unwrap();
    assert_eq!(command(listing.next()), ("SCAN".into(), "0".into(), None));
    listing
        .feed(scan_reply(
            0,
            &["leader:{a}", "leader:{a}:fence", "leader:{gone}"],
        ))
        .unwrap();
    let Step::Send(Io::Pipeline { cmds, .. }) = listing.next() else {
        panic!("reads")
    };
    assert_eq!(cmds.len(), 4, "the fence counter is not read");
    let mut replies = held_records(1);
    if let Value::Array(items) = &mut replies {
        items.push(Value::Int(-2));
        items.push(Value::Array(vec![Value::Nil; 5]));
    }
    listing.feed(replies).unwrap();
    let Step::Done(page) = listing.next() else {
        panic!("done")
    };
    assert_eq!(page.locks.len(), 1);
    assert_eq!(page.locks[0].lock_name(), "a");
    assert_eq!(page.next, None);
}

#[test]
fn a_cursor_past_the_last_master_ends_the_listing_and_garbage_is_an_error() {
    let all = ListRequest::new("");
    let request = all.clone().after(ListCursor::tagged("redis", &all, "9:0"));
    let mut listing = Listing::new("leader", &request, true, SystemTime::now()).unwrap();
    let _ = listing.next();
    listing.feed(slots_reply()).unwrap();
    assert!(matches!(listing.next(), Step::Done(page) if page.next.is_none()));

    let bad = ListRequest::new("").after(ListCursor::new("not a cursor"));
    let failed = Listing::new("leader", &bad, false, SystemTime::now()).unwrap_err();
    assert!(matches!(failed.failure, OpError::BadCursor { .. }));

    let mut listing =
        Listing::new("leader", &ListRequest::new(""), false, SystemTime::now()).unwrap();
    let _ = listing.next();
    let failed = listing.feed(Value::Okay).unwrap_err();
    assert!(matches!(failed.failure, OpError::BadReply { .. }));
}
