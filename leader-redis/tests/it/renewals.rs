//! Many renewals at once on Redis: a script per chunk of 1,000 leases, each lease answered
//! on its own (foreign data at one key fails that lease only), blocking and async.

use crate::common;

use std::time::Duration;

use crate::common::{RedisHarness, Servers};
use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, ExtendOutcome, Lease, LockBackend,
    OwnerToken, Renewal,
};
use leader_testkit::fresh_name;

const LEASE: Duration = Duration::from_secs(60);

fn acquire_many(backend: &impl LockBackend, n: usize) -> Vec<Lease> {
    (0..n)
        .map(|_| {
            let key = fresh_name("renewals");
            let request = AcquireRequest::new(&key, OwnerToken::random(), "node", LEASE);
            match backend.try_acquire(request).unwrap() {
                AcquireOutcome::Acquired(lease) => lease,
                other => panic!("{other:?}"),
            }
        })
        .collect()
}

#[test]
fn thousands_of_leases_renew_in_a_script_per_thousand() {
    // A server of its own: no other test's scripts count.
    let Some(server) = common::private_server() else {
        return;
    };
    let harness = RedisHarness::new(Servers::Single(server.url()));
    let backend = harness.make();
    let leases = acquire_many(&backend, 2500);
    let renewals: Vec<Renewal<'_>> = leases.iter().map(|l| Renewal::new(l, LEASE * 2)).collect();
    // Once, so the server knows the script (a first EVALSHA is sent again after loading it).
    LockBackend::extend_batch(&backend, &renewals[..1]);
    let mut conn = harness.raw();
    let before = common::scripts_run(&mut conn);
    let answers = LockBackend::extend_batch(&backend, &renewals);
    assert_eq!(
        common::scripts_run(&mut conn) - before,
        3,
        "2,500 leases, chunks of 1,000"
    );
    assert_eq!(answers.len(), leases.len());
    for (lease, answer) in leases.iter().zip(&answers) {
        assert!(
            matches!(answer, Ok(ExtendOutcome::Extended { expires_at }) if *expires_at > lease.expires_at),
            "{answer:?}"
        );
    }
}

#[test]
fn one_broken_key_fails_its_own_renewal_only() {
    let Some(harness) = RedisHarness::standalone() else {
        return;
    };
    let backend = harness.make();
    let leases = acquire_many(&backend, 3);
    let mut conn = harness.raw();
    let broken = backend.lock_key(&leases[1].key);
    let _: () = redis::cmd("DEL").arg(&broken).query(&mut conn).unwrap();
    let _: () = redis::cmd("SET")
        .arg(&broken)
        .arg("not a lock")
        .query(&mut conn)
        .unwrap();
    let renewals: Vec<Renewal<'_>> = leases.iter().map(|l| Renewal::new(l, LEASE)).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let blocking = LockBackend::extend_batch(&backend, &renewals);
    let nonblocking = runtime.block_on(AsyncLockBackend::extend_batch(&backend, &renewals));
    for answers in [blocking, nonblocking] {
        assert!(
            matches!(answers[0], Ok(ExtendOutcome::Extended { .. })),
            "{answers:?}"
        );
        assert!(
            matches!(answers[2], Ok(ExtendOutcome::Extended { .. })),
            "{answers:?}"
        );
        let err = answers[1].as_ref().unwrap_err();
        assert!(!err.is_transient(), "{err}");
        assert_eq!(err.lock_key(), Some(broken.as_str()), "{err}");
        assert!(err.to_string().contains("WRONGTYPE"), "{err}");
    }
}
