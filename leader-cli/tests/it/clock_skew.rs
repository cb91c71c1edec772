//! The `leader` binary against etcd with the lock held by a `leader acquire --hold` whose
//! wall clock is 30 s behind this one (libfaketime, `leader_rig::fixtures::
//! faketime_library`): its holder record's times are on its clock, so by this one its
//! lease looks 20 s over; `state`, `list` and `release --force` see it held all the same
//! (etcd keeps its keys while its lease lives), and the release frees it.

use crate::common;

use crate::common::{Running, fresh, leader, run};
use leader_rig::fixtures;

#[test]
fn etcd_a_holder_30_s_behind_is_held_to_state_list_and_release() {
    let Some(server) = fixtures::shared_etcd() else {
        return;
    };
    let Some(faketime) = fixtures::faketime_library() else {
        return;
    };
    let url = format!("{}/cli-skew", server.url());
    let name = fresh("skewed");
    let args = [
        "--json",
        "acquire",
        &name,
        "--hold",
        "60s",
        "--lease",
        "10s",
        "--node-id",
        "behind",
    ];
    let mut command = leader(&url, &args);
    command
        .env("LD_PRELOAD", &faketime)
        .env("FAKETIME", "-30s")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    let mut holder = Running::spawn(command);
    let acquired = holder.json_line();
    assert_eq!(acquired["event"], "acquired", "{acquired}");
    let token = acquired["fencing_token"].as_u64().expect("a token");

    let state = run(leader(&url, &["--json", "state", &name]))
        .expect_code(0)
        .json();
    assert_eq!(state["status"], "held", "{state}");
    assert_eq!(state["leader"]["leader_id"], "behind", "{state}");
    assert_eq!(state["leader"]["fencing_token"], token, "{state}");

    let listed = run(leader(&url, &["--json", "list", "--prefix", &name]))
        .expect_code(0)
        .json();
    assert_eq!(listed[0]["leader"]["fencing_token"], token, "{listed}");

    let released = run(leader(
        &url,
        &["--json", "release", "--force", "--yes", &name],
    ))
    .expect_code(0)
    .json();
    assert_eq!(released["released"], true, "{released}");
    assert_eq!(released["leader"]["fencing_token"], token, "{released}");

    // The holder finds out at its next renewal.
    let lost = holder.finish(common::DEADLINE).expect_code(1);
    assert!(lost.stderr.contains("lost the lock"), "{lost:#?}");
}
