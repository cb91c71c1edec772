//! `try_acquire_for_tenants`: one answer per tenant, a tenant's own trouble its own, and
//! the won locks run (keeping the minimum lease) or, dropped unrun, freed at once.

use std::time::Duration;

use leader_blocking::LeaderElector;
use leader_core::{Error, InMemoryBackend, LeaderElectionOptions, LockName, LockStatus, TenantId};

fn options(node: &str) -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_node_id(node)
        .with_min_lease_time(Duration::from_secs(30))
}

#[test]
fn each_tenant_gets_its_own_answer_and_unrun_locks_are_freed_without_the_min_lease() {
    let backend = InMemoryBackend::new();
    let a = LeaderElector::new(backend.clone(), options("node-a")).unwrap();
    let b = LeaderElector::with_shared_backend(a.backend().clone(), options("node-b")).unwrap();
    // "held" is node-b's. The name leaves room for ids of up to 7 bytes under the prefix.
    let job = "j".repeat(LockName::MAX_LEN - "tenant::".len() - 7);
    let job = job.as_str();
    let tenants: Vec<TenantId> = ["run", "held", "too-long", "dropped"]
        .into_iter()
        .map(|id| TenantId::new(id).unwrap())
        .collect();
    assert!(
        b.for_tenant("held")
            .unwrap()
            .run_if_leader(job, || ())
            .unwrap()
            .is_some()
    );
    let mut answers = a.try_acquire_for_tenants(job, &tenants).into_iter();

    let run = answers
        .next()
        .unwrap()
        .unwrap()
        .expect("a free lock is won");
    assert_eq!(run.tenant().as_str(), "run");
    let outcome = run
        .run(|lease| Ok::<_, Error>(lease.fencing_token()))
        .unwrap();
    assert!(outcome.is_elected());
    assert!(
        answers.next().unwrap().unwrap().is_none(),
        "held by node-b (its min lease)"
    );
    assert!(matches!(
        answers.next().unwrap(),
        Err(Error::InvalidName(_))
    ));
    let dropped = answers
        .next()
        .unwrap()
        .unwrap()
        .expect("a free lock is won");
    drop(dropped);

    let status = |tenant: &str| a.for_tenant(tenant).unwrap().state(job).unwrap().status();
    assert_eq!(
        status("run"),
        LockStatus::Occupied,
        "a run keeps its minimum lease"
    );
    assert_eq!(
        status("dropped"),
        LockStatus::Empty,
        "never run: freed at once"
    );
}

#[test]
fn a_scoped_elector_answers_every_tenant_with_already_scoped() {
    let elector = LeaderElector::new(InMemoryBackend::new(), options("node"))
        .unwrap()
        .for_tenant("acme")
        .unwrap();
    let tenants = [TenantId::new("a").unwrap(), TenantId::new("b").unwrap()];
    let answers = elector.try_acquire_for_tenants("job", &tenants);
    assert_eq!(answers.len(), 2);
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Err(Error::AlreadyScoped { .. })))
    );
}
