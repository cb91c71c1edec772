//! Failing closed, then recovering, after a network partition heals: the backend works again within two seconds
//! of the network coming back, through a proxy that drops every byte while partitioned.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::{config, uri};
use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken};
use leader_mongodb::MongoBackend;
use leader_rig::FaultProxy;
use leader_testkit::fresh_name;

/// The shared server's address, from its URI (`mongodb://host:port/...`).
fn server_addr(uri: &str) -> SocketAddr {
    let rest = uri.strip_prefix("mongodb://").expect("a mongodb:// URI");
    let authority = rest.split(['/', '?']).next().unwrap();
    authority.parse().expect("host:port")
}

fn acquire(backend: &MongoBackend, key: &LockName) -> Result<AcquireOutcome, leader_core::Error> {
    let request = AcquireRequest::new(key, OwnerToken::random(), "node", Duration::from_secs(30));
    LockBackend::try_acquire(backend, request)
}

#[test]
fn the_backend_recovers_within_two_seconds_of_a_healed_partition() {
    let Some(uri) = uri() else { return };
    let proxy = FaultProxy::start(server_addr(&uri)).unwrap();
    let config = config("partition").with_operation_timeout(Duration::from_secs(2));
    let through_proxy = format!("mongodb://{}/?directConnection=true", proxy.addr());
    let backend = MongoBackend::connect_with(&through_proxy, config).unwrap();
    let key = fresh_name("partition");
    assert!(matches!(
        acquire(&backend, &key),
        Ok(AcquireOutcome::Acquired(_))
    ));

    proxy.blackhole();
    // Calls during the partition fail (closed), each within the operation timeout; their
    // requests and connections are lost in the blackhole: more of them than the driver's
    // pool has connections.
    let during: Vec<_> = (0..12)
        .map(|_| {
            let (backend, key) = (backend.clone(), key.clone());
            std::thread::spawn(move || LockBackend::state(&backend, &key))
        })
        .collect();
    for call in during {
        let err = call
            .join()
            .unwrap()
            .expect_err("no answer through a partition");
        assert!(err.is_transient(), "{err}");
    }

    proxy.heal();
    let healed = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match LockBackend::state(&backend, &key) {
            Ok(state) => {
                assert!(state.leader().is_some());
                break;
            }
            Err(err) => {
                eprintln!("{:?} after the heal: {err}", healed.elapsed());
                assert!(
                    healed.elapsed() < Duration::from_secs(30),
                    "no recovery: {err}"
                );
            }
        }
    }
    let took = healed.elapsed();
    eprintln!("recovered {took:?} after the heal, in {attempts} calls");
    assert!(
        took <= Duration::from_secs(2),
        "recovered only {took:?} after the heal"
    );
}

#[test]
fn calls_after_a_short_partition_succeed_while_calls_caught_in_it_still_hang() {
    let Some(uri) = uri() else { return };
    let proxy = FaultProxy::start(server_addr(&uri)).unwrap();
    let config = config("partition").with_operation_timeout(Duration::from_secs(4));
    let through_proxy = format!("mongodb://{}/?directConnection=true", proxy.addr());
    let backend = MongoBackend::connect_with(&through_proxy, config).unwrap();
    let key = fresh_name("short-partition");
    assert!(matches!(
        acquire(&backend, &key),
        Ok(AcquireOutcome::Acquired(_))
    ));

    proxy.blackhole();
    let caught: Vec<_> = (0..4)
        .map(|_| {
            let (backend, key) = (backend.clone(), key.clone());
            std::thread::spawn(move || LockBackend::state(&backend, &key))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    proxy.heal();
    let healed = Instant::now();
    let state = LockBackend::state(&backend, &key);
    let took = healed.elapsed();
    eprintln!("a call after the heal answered {state:?} in {took:?}");
    assert!(state.is_ok(), "{state:?}");
    assert!(
        took <= Duration::from_secs(2),
        "answered only {took:?} after the heal"
    );
    for call in caught {
        let _ = call.join().unwrap();
    }
}
