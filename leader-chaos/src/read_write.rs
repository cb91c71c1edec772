//! The read/write mode: inside every run, one section in `--rw-share` (3) of the
//! contending loop, and one hold in `--rw-share` of the async hold loop, takes a
//! read/write lock instead, as a reader three times in four and as a writer otherwise:
//!
//! - the contending loops, through [`leader::ReadWriteLocks`] (the blocking elector's), on
//!   `chaos-rw-0` (lock index `--locks + 2`, after the hold loops' two);
//! - the async hold loops, through [`leader::AsyncReadWriteLocks`], on `chaos-rw-1` (index
//!   `--locks + 3`), holding it 2–4 leases as the hold loops do.
//!
//! Both hold their side with [`LeaseMode::Watchdog`] of the run's lease (renewed every
//! third of it), so, as for every section, a lease is lost only to a fault. A writer
//! writes to the resource fenced by its token, as an exclusive holder does; a reader
//! reads the token of the last write the resource accepted for the lock and logs it
//! (`read … seen=`), and the checker holds it below the reader's own token (a stale read:
//! a writer that came after the reader, or an earlier one with a larger token, wrote
//! while the reader read). The `start` line says the role (`role=read|write`), so the
//! checker applies the read/write rules: readers share, a writer overlaps nobody, a
//! writer's token is above every section begun before it asked, a reader's above every
//! earlier writer's.
//!
//! The two loops of one worker never share a read/write lock, so every pair of sections
//! of such a lock is of two workers, which the checker compares.

use std::io;

use leader::{
    AnyBackend, AsyncReadGuard, AsyncWriteGuard, Error, LeaseContext, LeaseMode, ReadGuard,
    ReadWriteLocks, WriteGuard,
};
use rand::Rng;

use crate::cli::WorkerArgs;
use crate::event::{Role, now_us};
use crate::worker::{Worker, extends, lease_end, lease_left};

/// The read/write lock of the contending loops (`chaos-rw-0`).
pub const CONTENDED: u32 = 0;
/// The read/write lock of the async hold loops (`chaos-rw-1`).
pub const HELD: u32 = 1;

/// The name of read/write lock `rw`: `chaos-rw-0`, `chaos-rw-1`.
pub fn lock_name(rw: u32) -> String {
    format!("chaos-rw-{rw}")
}

/// The log's lock index of read/write lock `rw` in a run of `locks` contended locks:
/// after the contended ones and the hold loops' two.
pub fn lock(locks: u32, rw: u32) -> u32 {
    locks.saturating_add(2).saturating_add(rw)
}

/// Draws whether the next section takes a read/write lock (one in `share`; never for
/// 0) and in which role (three reads to one write).
pub(crate) fn draw(worker: &mut Worker, share: u32) -> Option<Role> {
    if share == 0 || !worker.rng.random_ratio(1, share) {
        return None;
    }
    Some(if worker.rng.random_ratio(1, 4) {
        Role::Write
    } else {
        Role::Read
    })
}

/// The guards' lease: the run's, renewed by the watchdog; fixed (never renewed) in the
/// broken `no-extend` mode.
pub(crate) fn lease_mode(args: &WorkerArgs) -> LeaseMode {
    if extends(args) {
        LeaseMode::Watchdog {
            timeout: args.lease,
        }
    } else {
        LeaseMode::Fixed(args.lease)
    }
}

/// One section of the contending loop on `chaos-rw-0` in `role` (the worker's `lock` is
/// its index): acquire (waiting the elector's wait time), log and work as any section,
/// release.
///
/// # Errors
///
/// When the log cannot be written.
pub(crate) fn section(
    worker: &mut Worker,
    locks: &ReadWriteLocks<AnyBackend>,
    mode: LeaseMode,
    role: Role,
) -> io::Result<()> {
    let name = lock_name(CONTENDED);
    worker.role = Some(role);
    let requested = now_us();
    let done = match role {
        Role::Read => held(
            worker,
            requested,
            locks.read(&name, mode),
            ReadGuard::context,
            ReadGuard::release,
        ),
        Role::Write => held(
            worker,
            requested,
            locks.write(&name, mode),
            WriteGuard::context,
            WriteGuard::release,
        ),
    };
    worker.role = None;
    done?;
    worker.pause_between();
    Ok(())
}

/// The section of a guard acquired (or not) at `requested`, then its release (a failed
/// release is retried in the background by the elector's orphan release).
fn held<G>(
    worker: &mut Worker,
    requested: u64,
    got: Result<G, Error>,
    context: fn(&G) -> &LeaseContext,
    release: fn(G) -> Result<(), Error>,
) -> io::Result<()> {
    let guard = match got {
        Ok(guard) => guard,
        Err(err) => return worker.failed(&err, requested),
    };
    let lease = context(&guard);
    let done = worker.section(
        lease.fencing_token(),
        requested,
        Some(lease_left(lease)),
        |work| lease.wait_lost_timeout(work).then(|| lease_end(lease)),
    );
    let _ = release(guard);
    done
}

/// A read or write hold of the async read/write locks.
pub(crate) enum AsyncHeld {
    /// A read.
    Read(AsyncReadGuard<AnyBackend>),
    /// A write.
    Write(AsyncWriteGuard<AnyBackend>),
}

impl AsyncHeld {
    /// Acquires `chaos-rw-1` in `role`.
    pub(crate) async fn acquire(
        locks: &leader::AsyncReadWriteLocks<AnyBackend>,
        role: Role,
        mode: LeaseMode,
    ) -> Result<Self, Error> {
        let name = lock_name(HELD);
        Ok(match role {
            Role::Read => AsyncHeld::Read(locks.read(&name, mode).await?),
            Role::Write => AsyncHeld::Write(locks.write(&name, mode).await?),
        })
    }

    /// The lease's context.
    pub(crate) fn context(&self) -> &LeaseContext {
        match self {
            AsyncHeld::Read(guard) => guard.context(),
            AsyncHeld::Write(guard) => guard.context(),
        }
    }

    /// Releases the hold.
    pub(crate) async fn release(self) {
        match self {
            AsyncHeld::Read(guard) => guard.release().await,
            AsyncHeld::Write(guard) => guard.release().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_locks_follow_the_hold_locks() {
        assert_eq!(lock_name(CONTENDED), "chaos-rw-0");
        assert_eq!(lock(4, CONTENDED), 6);
        assert_eq!(lock(4, HELD), 7);
        assert_eq!(crate::hold::Hold::Async.lock(4) + 1, lock(4, CONTENDED));
    }
}
