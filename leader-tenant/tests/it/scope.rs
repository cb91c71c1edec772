//! `for_tenant` on the three electors: isolation between tenants, the physical prefix,
//! typed errors for bad ids, over-long names and nesting.

use std::sync::mpsc;
use std::time::Duration;

use leader_async::AsyncLeaderElector;
use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::{
    Error, InMemoryBackend, LeaderElectionOptions, LeaderRunResult, LockBackend, LockName,
    LockStatus, NameError,
};
use leader_tenant::{TenantError, TenantId, TenantIdError};

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(Duration::ZERO)
}

#[test]
fn two_tenants_with_the_same_job_name_never_contend() {
    let backend = InMemoryBackend::new();
    let node_a = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let node_b = LeaderElector::new(backend, options("b")).unwrap();
    let acme = node_a.for_tenant("acme").unwrap();
    let globex = node_b.for_tenant("globex").unwrap();
    let acme_again = node_b.for_tenant("acme").unwrap();

    // While acme's job runs, globex's same-named job runs too; acme on another node skips.
    let outcome = acme
        .run_if_leader("sync", || {
            let other_tenant = globex.run_if_leader("sync", || "globex ran").unwrap();
            let same_tenant = acme_again.run_if_leader("sync", || "twice").unwrap();
            (other_tenant, same_tenant)
        })
        .unwrap();
    assert_eq!(outcome, Some((Some("globex ran"), None)));
}

#[test]
fn an_unscoped_elector_cannot_reach_into_a_tenants_namespace() {
    let backend = InMemoryBackend::new();
    let node_a = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let node_b = LeaderElector::new(backend, options("b")).unwrap();
    let acme = node_a.for_tenant("acme").unwrap();
    acme.run_if_leader("sync", || {
        // Without the rule this was acme's very lock: a skip here, a second holder after.
        let reached = node_b.run_if_leader("tenant:acme:sync", || unreachable!());
        assert!(
            matches!(
                reached,
                Err(Error::InvalidName(NameError::Reserved {
                    namespace: "tenant:",
                    ..
                }))
            ),
            "{reached:?}"
        );
        assert!(node_b.state("tenant:acme:sync").is_err());
        assert!(node_b.with_name_prefix("tenant:acme:").is_err());
    })
    .unwrap();
}

#[test]
fn the_prefix_is_physical_and_state_strips_it() {
    let backend = InMemoryBackend::new();
    let elector = LeaderElector::new(backend.clone(), options("node-a")).unwrap();
    let acme = elector.for_tenant("acme").unwrap();
    acme.run_if_leader("sync", || {
        let key = LockName::new("tenant:acme:sync").unwrap();
        let physical = LockBackend::state(&backend, &key).unwrap();
        assert_eq!(physical.status(), LockStatus::Occupied);
        assert_eq!(physical.lock_name(), "tenant:acme:sync");
        assert_eq!(physical.leader().unwrap().leader_id, "node-a");

        let scoped = acme.state("sync").unwrap();
        assert_eq!(scoped.lock_name(), "sync");
        assert_eq!(scoped.status(), LockStatus::Occupied);

        // The unscoped name is a different lock.
        assert_eq!(elector.state("sync").unwrap().status(), LockStatus::Empty);
    })
    .unwrap();
    assert_eq!(acme.lock_key("sync").unwrap().as_str(), "tenant:acme:sync");
    assert_eq!(acme.tenant(), Some(TenantId::new("acme").unwrap()));
    assert_eq!(elector.tenant(), None);
}

#[test]
fn the_thread_pool_elector_scopes_and_shares_its_pool() {
    let backend = InMemoryBackend::new();
    let pool = ThreadPoolLeaderElector::new(backend.clone(), options("pool"), 2).unwrap();
    let unscoped = LeaderElector::new(backend, options("other")).unwrap();
    let acme = pool.for_tenant("acme").unwrap();
    assert_eq!(acme.tenant().unwrap().as_str(), "acme");

    let (started_tx, started_rx) = mpsc::channel();
    let (finish_tx, finish_rx) = mpsc::channel::<()>();
    let task = acme
        .run_async_if_leader_result("sync", move || {
            started_tx.send(()).unwrap();
            finish_rx.recv().unwrap();
            Ok::<_, String>(7)
        })
        .unwrap();
    started_rx.recv().unwrap();
    let physical = LockName::new("tenant:acme:sync").unwrap();
    let state = LockBackend::state(unscoped.backend().as_ref(), &physical).unwrap();
    assert_eq!(state.leader().unwrap().leader_id, "pool");
    assert_eq!(acme.state("sync").unwrap().lock_name(), "sync");
    // Another tenant on the same pool runs beside it.
    let globex = pool.for_tenant("globex").unwrap();
    let other = globex.run_async_if_leader("sync", || 1).unwrap().wait();
    assert_eq!(other.unwrap(), Some(1));
    finish_tx.send(()).unwrap();
    assert!(matches!(
        task.wait().unwrap(),
        LeaderRunResult::Elected { value: 7, .. }
    ));
}

#[test]
fn the_async_elector_scopes_the_same_way() {
    smol::block_on(async {
        let backend = InMemoryBackend::new();
        let elector = AsyncLeaderElector::new(backend.clone(), options("async")).unwrap();
        let unscoped = LeaderElector::new(backend, options("other")).unwrap();
        let acme = elector.for_tenant("acme").unwrap();
        let globex = elector.for_tenant("globex").unwrap();
        let ran = acme
            .run_if_leader("sync", || async {
                let physical = LockName::new("tenant:acme:sync").unwrap();
                assert_eq!(
                    LockBackend::state(unscoped.backend().as_ref(), &physical)
                        .unwrap()
                        .status(),
                    LockStatus::Occupied
                );
                assert_eq!(acme.state("sync").await.unwrap().lock_name(), "sync");
                globex
                    .run_if_leader("sync", || async { "globex" })
                    .await
                    .unwrap()
            })
            .await
            .unwrap();
        assert_eq!(ran, Some(Some("globex")));
        assert!(matches!(
            acme.for_tenant("x"),
            Err(Error::AlreadyScoped { .. })
        ));
        assert_eq!(acme.tenant().unwrap().as_str(), "acme");
    });
}

#[test]
fn invalid_tenant_ids_are_typed_errors_on_every_elector() {
    let backend = InMemoryBackend::new();
    let blocking = LeaderElector::new(backend.clone(), options("a")).unwrap();
    let pool = ThreadPoolLeaderElector::from_elector(blocking.clone(), 1);
    let asynchronous = AsyncLeaderElector::new(backend, options("a")).unwrap();
    let long = "x".repeat(TenantId::MAX_LEN + 1);
    type Expect = fn(&TenantIdError) -> bool;
    let cases: [(&str, Expect); 6] = [
        ("", |e| matches!(e, TenantIdError::Empty)),
        ("eu:acme", |e| {
            matches!(e, TenantIdError::Colon { index: 2 })
        }),
        ("ac\tme", |e| {
            matches!(e, TenantIdError::ControlCharacter { ch: '\t', index: 2 })
        }),
        ("{acme}", |e| {
            matches!(e, TenantIdError::Brace { ch: '{', index: 0 })
        }),
        ("acme#2", |e| matches!(e, TenantIdError::Hash { index: 4 })),
        (&long, |e| {
            matches!(
                e,
                TenantIdError::TooLong {
                    len: 129,
                    max: 128,
                    ..
                }
            )
        }),
    ];
    for (id, expected) in cases {
        let errors = [
            blocking.for_tenant(id).err().unwrap(),
            pool.for_tenant(id).err().unwrap(),
            asynchronous.for_tenant(id).err().unwrap(),
        ];
        for err in errors {
            let Error::InvalidTenant(id_error) = &err else {
                panic!("{id:?}: expected InvalidTenant, got {err:?}");
            };
            assert!(expected(id_error), "{id:?}: unexpected {err:?}");
            assert!(!err.to_string().is_empty());
        }
    }
}

#[test]
fn over_long_prefixed_names_are_typed_errors_and_the_limit_is_exact() {
    let elector = LeaderElector::new(InMemoryBackend::new(), options("a")).unwrap();
    let acme = elector.for_tenant("acme").unwrap();
    let room = 255 - "tenant:acme:".len();
    let fits = "n".repeat(room);
    assert_eq!(acme.run_if_leader(&fits, || ()).unwrap(), Some(()));
    let physical = LockName::new(format!("tenant:acme:{fits}")).unwrap();
    let state = LockBackend::state(elector.backend().as_ref(), &physical).unwrap();
    assert_eq!(state.lock_name().len(), 255);
    assert_eq!(state.status(), LockStatus::Empty);

    let too_long = "n".repeat(room + 1);
    let err = acme.run_if_leader(&too_long, || ()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidName(NameError::TooLong {
                len: 256,
                max: 255,
                ..
            })
        ),
        "{err:?}"
    );
    // The same problem from the tenant id, and through the pollers' error type.
    let tenant = TenantId::new("acme").unwrap();
    assert!(matches!(
        tenant.lock_name(&too_long),
        Err(NameError::TooLong { len: 256, .. })
    ));
    assert!(matches!(
        TenantError::from(err),
        TenantError::Name(NameError::TooLong { .. })
    ));
    // Bad characters in the job name are reported at their offset in the whole name.
    assert!(matches!(
        acme.state("a}b"),
        Err(Error::InvalidName(NameError::Brace { ch: '}', index: 13 }))
    ));
}

#[test]
fn scoping_twice_is_an_error_whatever_the_prefix() {
    let elector = LeaderElector::new(InMemoryBackend::new(), options("a")).unwrap();
    let acme = elector.for_tenant("acme").unwrap();
    match acme.for_tenant("acme") {
        Err(Error::AlreadyScoped { prefix }) => assert_eq!(prefix, "tenant:acme:"),
        other => panic!("expected AlreadyScoped, got {other:?}"),
    }
    let manual = elector.with_name_prefix("team-x:").unwrap();
    assert!(matches!(
        manual.for_tenant("acme"),
        Err(Error::AlreadyScoped { .. })
    ));
    assert_eq!(manual.tenant(), None);
    let pool = ThreadPoolLeaderElector::from_elector(acme, 1);
    assert!(matches!(
        pool.for_tenant("globex"),
        Err(Error::AlreadyScoped { .. })
    ));
}
