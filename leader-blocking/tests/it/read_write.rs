//! Read/write locks on the blocking elector (`ReadWriteLocks`): the elector's side of the
//! rules (waiting, the writer's intent withdrawn when it gives up, renewals, tenants); the
//! store's side is the contract suite's `shared_contract_tests!`.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use leader_blocking::{LeaderElector, ReadWriteLocks};
use leader_core::{
    Error, Hold, InMemoryBackend, LeaderElectionOptions, LeaseMode, MaxReaders, OptionsError,
};
use leader_testkit::wait_until;

fn locks(backend: &InMemoryBackend, node: &str, wait: Duration) -> ReadWriteLocks<InMemoryBackend> {
    let options = LeaderElectionOptions::default()
        .with_node_id(node)
        .with_wait_time(wait);
    ReadWriteLocks::new(&LeaderElector::new(backend.clone(), options).unwrap())
}

#[test]
fn a_waiting_writer_gets_in_when_the_readers_leave_and_holds_new_readers_out_meanwhile() {
    let backend = InMemoryBackend::new();
    let readers = locks(&backend, "reader", Duration::ZERO);
    let first = readers.read("report", LeaseMode::watchdog()).unwrap();
    let second = readers.read("report", LeaseMode::watchdog()).unwrap();

    let writers = locks(&backend, "writer", Duration::from_secs(30));
    let (done, writer_in) = mpsc::channel();
    let writer = thread::spawn(move || {
        let guard = writers.write("report", LeaseMode::watchdog()).unwrap();
        done.send(guard.fencing_token()).unwrap();
        thread::sleep(Duration::from_millis(50));
        guard.release().unwrap();
    });
    wait_until("the writer's intent", Duration::from_secs(10), || {
        readers.state("report").unwrap().intent.is_some()
    });
    let late = readers.read("report", LeaseMode::watchdog());
    assert!(
        matches!(late, Err(Error::NotAcquired { .. })),
        "a new reader queues behind the waiting writer: {late:?}"
    );
    assert!(
        writer_in.try_recv().is_err(),
        "the writer waits for the readers"
    );
    let highest = first.fencing_token().max(second.fencing_token());
    first.release().unwrap();
    drop(second);
    let token = writer_in.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        token > highest,
        "writer {token} after readers up to {highest}"
    );
    writer.join().unwrap();
    let after = locks(&backend, "reader", Duration::from_secs(10));
    assert!(
        after
            .read("report", LeaseMode::watchdog())
            .unwrap()
            .fencing_token()
            > token
    );
}

#[test]
fn a_writer_that_gives_up_withdraws_its_intent_so_readers_are_not_held_out() {
    let backend = InMemoryBackend::new();
    let readers = locks(&backend, "reader", Duration::ZERO);
    let _reading = readers.read("cache", LeaseMode::watchdog()).unwrap();
    let writer = locks(&backend, "writer", Duration::from_millis(100));
    let gave_up = writer.write("cache", LeaseMode::watchdog());
    assert!(
        matches!(gave_up, Err(Error::NotAcquired { .. })),
        "{gave_up:?}"
    );
    // Withdrawn before `write` returned (a process that exits right after leaves nothing
    // behind), not left to lapse with its lease (30 s).
    let state = readers.state("cache").unwrap();
    assert!(state.intent.is_none(), "{state:?}");
    let again = readers.read("cache", LeaseMode::watchdog()).unwrap();
    assert!(!again.is_lost());
}

#[test]
fn holds_are_renewed_while_their_guards_live_and_expire_when_fixed() {
    let backend = InMemoryBackend::new();
    let options = LeaderElectionOptions::default()
        .with_wait_time(Duration::ZERO)
        .with_lease_time(Duration::from_millis(600));
    let rw = ReadWriteLocks::new(&LeaderElector::new(backend.clone(), options).unwrap());
    let reader = rw.read("renewed", LeaseMode::watchdog()).unwrap();
    let context = reader.context().clone();
    // Two leases later the watchdog has renewed it, every lease / 3.
    assert!(!context.wait_lost_timeout(Duration::from_millis(1_500)));
    assert_eq!(rw.state("renewed").unwrap().readers.len(), 1);
    drop(reader);
    let fixed = rw
        .write("fixed", LeaseMode::Fixed(Duration::from_millis(200)))
        .unwrap();
    assert!(fixed.context().wait_lost_timeout(Duration::from_secs(10)));
    assert!(fixed.is_lost());
    wait_until("the fixed hold to run out", Duration::from_secs(10), || {
        rw.state("fixed").unwrap().is_free()
    });
}

#[test]
fn tenants_have_their_own_read_write_locks_and_state_names_them_unscoped() {
    let backend = InMemoryBackend::new();
    let elector = LeaderElector::new(
        backend,
        LeaderElectionOptions::default().with_wait_time(Duration::ZERO),
    )
    .unwrap();
    let acme = ReadWriteLocks::new(&elector.for_tenant("acme").unwrap());
    let globex = ReadWriteLocks::new(&elector.for_tenant("globex").unwrap());
    let w = acme.write("schema", LeaseMode::watchdog()).unwrap();
    let r = globex.read("schema", LeaseMode::watchdog()).unwrap();
    assert_eq!((w.fencing_token(), r.fencing_token()), (1, 1));
    let state = acme.state("schema").unwrap();
    assert_eq!(state.lock_name, "schema");
    assert!(state.writer.is_some() && state.readers.is_empty());
    assert!(w.reenter().fencing_token() == 1);
}

#[test]
fn reader_limits_out_of_range_are_typed_errors_and_a_full_lock_refuses_readers() {
    let backend = InMemoryBackend::new();
    let rw = locks(&backend, "n", Duration::ZERO);
    for readers in [0, MaxReaders::LIMIT + 1] {
        let refused = rw.clone().with_max_readers(readers);
        assert!(
            matches!(
                refused,
                Err(Error::InvalidOptions(
                    OptionsError::ReadersOutOfRange { .. }
                ))
            ),
            "{refused:?}"
        );
    }
    let two = rw.with_max_readers(2).unwrap();
    let _a = two.read("pool", LeaseMode::watchdog()).unwrap();
    let _b = two.read("pool", LeaseMode::watchdog()).unwrap();
    assert!(matches!(
        two.read("pool", LeaseMode::watchdog()),
        Err(Error::NotAcquired { .. })
    ));
    assert!(matches!(
        two.read("bad\0name", LeaseMode::watchdog()),
        Err(Error::InvalidName(_))
    ));
}
