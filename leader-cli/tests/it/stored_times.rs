//! What a store returns never stops a command: a lock record whose times are out of the
//! range RFC 3339 can write (here the year 294,247: a hand-edited record, or a lease of
//! millennia, which Redis keeps as asked), written straight into the Redis hash, and then
//! read by `state`, `list`, `watch` and `release --force`.

use crate::common;

use crate::common::{Running, fresh, leader, run};
use leader::redis::redis;
use leader_rig::fixtures;

/// `i64::MAX` microseconds after the epoch: the latest time a record may hold.
const FAR_FUTURE_US: &str = "9223372036854775807";

/// The lock `name` held by `node-x` with fencing token 7, acquired and expiring at
/// [`FAR_FUTURE_US`], the key alive for a minute: the hash `acquire.lua` writes.
fn write_far_future_lock(url: &str, name: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let key = format!("leader:{{{name}}}");
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg(&[
            "owner",
            "0123456789abcdef0123456789abcdef",
            "leader",
            "node-x",
        ])
        .arg(&["fence", "7", "acq", FAR_FUTURE_US, "exp", FAR_FUTURE_US])
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("PEXPIRE")
        .arg(&key)
        .arg(60_000)
        .query(&mut conn)
        .unwrap();
}

fn assert_no_panic(what: &str, ran: &common::Ran) {
    assert!(
        ran.code != 101 && !ran.stderr.contains("panicked"),
        "`{what}` panicked: {ran:#?}"
    );
}

#[test]
fn far_future_times_are_shown_not_panicked_on() {
    let Some(server) = fixtures::shared_redis() else {
        return;
    };
    let url = server.url();
    let name = fresh("far");
    write_far_future_lock(&url, &name);

    let state = run(leader(&url, &["state", &name]));
    assert_no_panic("state", &state);
    let state = state.expect_code(0);
    assert!(
        state.stdout.contains("node-x") && state.stdout.contains("after the year 9999"),
        "{state:#?}"
    );
    let json = run(leader(&url, &["--json", "state", &name]));
    assert_no_panic("state --json", &json);
    let json = json.expect_code(0).json();
    assert_eq!(json["leader"]["fencing_token"], 7, "{json}");
    assert!(
        json["leader"]["expires_at"]
            .as_str()
            .is_some_and(|text| text.contains("after the year 9999")),
        "{json}"
    );

    for args in [
        &["list", "--prefix"][..],
        &["--json", "list", "--prefix"][..],
    ] {
        let mut args = args.to_vec();
        args.push(&name);
        let listed = run(leader(&url, &args));
        assert_no_panic("list", &listed);
        let listed = listed.expect_code(0);
        assert!(listed.stdout.contains(&name), "{listed:#?}");
    }

    // A bounded watch: its first line, then SIGTERM.
    for json in [false, true] {
        let mut args = vec!["watch", name.as_str(), "--interval", "100ms"];
        if json {
            args.insert(0, "--json");
        }
        let mut watch = Running::spawn(leader(&url, &args));
        let first = watch.line();
        assert!(first.contains("node-x"), "{first}");
        watch.terminate();
        let watched = watch.finish(common::DEADLINE);
        assert_no_panic("watch", &watched);
        watched.expect_code(0);
    }

    let released = run(leader(
        &url,
        &["--json", "release", "--force", "--yes", &name],
    ));
    assert_no_panic("release --force", &released);
    let released = released.expect_code(0).json();
    assert_eq!(released["released"], true, "{released}");
    assert_eq!(released["leader"]["fencing_token"], 7, "{released}");
    let free = run(leader(&url, &["state", &name])).expect_code(0);
    assert!(free.stdout.contains("free"), "{free:#?}");
}
