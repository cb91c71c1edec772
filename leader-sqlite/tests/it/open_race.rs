//! Many connections opening one new file at the same moment all succeed: the first
//! creates the tables and turns on WAL while the others wait for it within their busy
//! timeout, as a fleet of processes started together does. (SQLite answers some of the
//! steps of such an open "database is locked" at once, without waiting on its busy
//! handler; `open` tried once, and a node of a three-process test failed to start with
//! `ConnectError::Locked`. Tables read one statement at a time while another connection
//! created them looked like somebody else's: `ConnectError::ForeignTable`.)

use std::sync::{Arc, Barrier};

use crate::common::TempDir;
use leader_core::{AcquireOutcome, AcquireRequest, LockBackend, LockName, OwnerToken};
use leader_sqlite::SqliteBackend;

const OPENERS: usize = 8;
const ROUNDS: usize = 100;

#[test]
fn connections_opening_a_new_file_together_all_succeed() {
    for round in 0..ROUNDS {
        let dir = TempDir::new("open-race");
        let path = dir.file("locks.db");
        let start = Arc::new(Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let path = path.clone();
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    SqliteBackend::open(&path)
                })
            })
            .collect();
        let backends: Vec<SqliteBackend> = openers
            .into_iter()
            .map(|opener| {
                opener
                    .join()
                    .unwrap()
                    .unwrap_or_else(|err| panic!("round {round}: an open failed: {err:?}"))
            })
            .collect();
        // Every one of them works on the same tables.
        let name = LockName::new("open-race").unwrap();
        let mut holders = 0;
        for backend in &backends {
            let request = AcquireRequest::new(
                &name,
                OwnerToken::random(),
                "opener",
                std::time::Duration::from_secs(30),
            );
            if let AcquireOutcome::Acquired(_) = backend.try_acquire(request).unwrap() {
                holders += 1;
            }
        }
        assert_eq!(holders, 1, "round {round}: one holder among the openers");
    }
}
