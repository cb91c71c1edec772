//! TLS (`etcds://`): a server that speaks only TLS, with a CA of its own. The backend
//! trusts that CA when told to, refuses the server otherwise, and speaks plain to nobody.

use std::time::{Duration, Instant};

use crate::common::{assert_backend_error, config, must_acquire};
use leader_core::{LockBackend, ReleaseOutcome, ReleaseRequest};
use leader_etcd::EtcdBackend;
use leader_rig::fixtures::{self, EtcdServer};
use leader_testkit::fresh_name;

fn tls_server() -> Option<EtcdServer> {
    fixtures::require("etcd (TLS)", EtcdServer::start_tls())
}

#[test]
fn a_backend_that_trusts_the_ca_takes_and_releases_locks_over_tls() {
    let Some(server) = tls_server() else {
        return;
    };
    assert!(server.url().starts_with("etcds://"), "{}", server.url());
    let pem = server.ca_certificate_pem().unwrap().to_vec();
    let backend =
        EtcdBackend::connect_with(&server.url(), config("tls").with_tls_root_certificate(pem))
            .unwrap();
    let key = fresh_name("tls");
    // A one-member cluster elects itself within moments of answering `endpoint health`.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lease = loop {
        match LockBackend::state(&backend, &key) {
            Ok(_) => break must_acquire(&backend, &key, "node-a", Duration::from_secs(5)),
            Err(err) if Instant::now() < deadline && err.is_transient() => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(err) => panic!("no answer over TLS: {err}"),
        }
    };
    assert!(lease.fencing_token > 0);
    assert_eq!(
        LockBackend::release(&backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap(),
        ReleaseOutcome::Released
    );
}

#[test]
fn a_server_whose_certificate_is_not_trusted_is_refused_for_good() {
    let Some(server) = tls_server() else {
        return;
    };
    // The platform's roots do not hold the test CA.
    let backend = EtcdBackend::connect_with(&server.url(), config("tls-untrusted")).unwrap();
    let key = fresh_name("tls-untrusted");
    let started = Instant::now();
    let result = LockBackend::state(&backend, &key);
    // A certificate no retry will make trusted: permanent.
    assert_backend_error(result, &key, false);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn plain_etcd_urls_do_not_reach_a_tls_server() {
    let Some(server) = tls_server() else {
        return;
    };
    let plain = server.url().replacen("etcds://", "etcd://", 1);
    let backend = EtcdBackend::connect_with(&plain, config("tls-plain")).unwrap();
    let key = fresh_name("tls-plain");
    assert_backend_error(LockBackend::state(&backend, &key), &key, true);
}
