//! `leader acquire NAME --hold DURATION`: take a lock with a renewed (watchdog) lease, hold
//! it for DURATION or until Ctrl-C / SIGTERM, release it (exit 0). Held elsewhere after
//! `--wait`, or the lease lost while holding: exit 1. For drills and tests.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use leader::{
    AnyBackend, Error, Hold, LeaderElectionOptions, LeaderElector, LeaseContext, LeaseMode,
    LockGuard, ReadGuard, ReadWriteLocks, Role, WriteGuard,
};
use serde::Serialize;

use crate::error::CliError;
use crate::output::Out;
use crate::session::Session;
use crate::signal::{Wake, Wakeups};

/// The command's options.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) hold: Duration,
    pub(crate) wait: Duration,
    pub(crate) lease: Duration,
    pub(crate) node_id: Option<String>,
    /// A side of the read/write lock of the name, or the exclusive lock.
    pub(crate) side: Option<Role>,
}

impl Plan {
    /// Elector options: how long to wait, and as which node.
    pub(crate) fn options(&self) -> LeaderElectionOptions {
        let options = LeaderElectionOptions::default().with_wait_time(self.wait);
        match &self.node_id {
            Some(node_id) => options.with_node_id(node_id.clone()),
            None => options,
        }
    }
}

/// One line of `acquire --json`.
#[derive(Debug, Serialize)]
struct Event<'a> {
    /// `acquired`, then `released`.
    event: &'static str,
    name: &'a str,
    leader_id: &'a str,
    fencing_token: u64,
}

pub(crate) fn run(
    session: &Session,
    name: &str,
    plan: &Plan,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, lock) = session.lock(name)?;
    // Before the lock is taken, so that Ctrl-C always releases it.
    let wakeups = Wakeups::on_interrupt()?;
    let guard = Held::take(&elector, lock, plan).map_err(|err| session.error(err))?;
    let context = guard.context().clone();
    let event = |event| Event {
        event,
        name,
        leader_id: context.leader_id(),
        fencing_token: context.fencing_token(),
    };
    if json {
        out.json(&event("acquired"))?;
    } else {
        out.text(&format!(
            "acquired `{name}` as `{}` with fencing token {}; holding it for {} (Ctrl-C releases it)",
            context.leader_id(),
            context.fencing_token(),
            humantime::format_duration(plan.hold)
        ))?;
    }
    watch_lease(&context, wakeups.sender());

    let until = Instant::now().checked_add(plan.hold);
    loop {
        let left = until.map_or(Duration::MAX, |until| {
            until.saturating_duration_since(Instant::now())
        });
        match wakeups.wait(left) {
            Wake::Lost => {
                return Err(CliError::LeaseLost {
                    name: name.to_owned(),
                });
            }
            Wake::Stop => break,
            Wake::Timeout if left.is_zero() => break,
            Wake::Timeout => {}
        }
    }
    // Lost at the last moment: say so rather than claim a clean release.
    if guard.is_lost() {
        return Err(CliError::LeaseLost {
            name: name.to_owned(),
        });
    }
    guard.release().map_err(|err| session.error(err))?;
    if json {
        out.json(&event("released"))
    } else {
        out.text(&format!("released `{name}`"))
    }
}

/// A thread that reports the lease's loss (found by the renewals) on the wake-up channel.
fn watch_lease(context: &LeaseContext, wake: Sender<Wake>) {
    let context = context.clone();
    let spawned = std::thread::Builder::new()
        .name("lease-watch".into())
        .spawn(move || {
            while !context.wait_lost_timeout(Duration::from_secs(3600)) {}
            let _ = wake.send(Wake::Lost);
        });
    if spawned.is_err() {
        // Without the thread, the loss is still seen when the hold ends.
    }
}

/// What `acquire` holds: the exclusive lock, or a side of the read/write lock.
enum Held {
    Lock(LockGuard<AnyBackend>),
    Read(ReadGuard<AnyBackend>),
    Write(WriteGuard<AnyBackend>),
}

impl Held {
    fn take(elector: &LeaderElector<AnyBackend>, lock: &str, plan: &Plan) -> Result<Self, Error> {
        let mode = LeaseMode::Watchdog {
            timeout: plan.lease,
        };
        Ok(match plan.side {
            None => Held::Lock(elector.acquire(lock, mode)?),
            Some(Role::Read) => Held::Read(ReadWriteLocks::new(elector).read(lock, mode)?),
            Some(Role::Write) => Held::Write(ReadWriteLocks::new(elector).write(lock, mode)?),
        })
    }

    fn context(&self) -> &LeaseContext {
        match self {
            Held::Lock(guard) => Hold::context(guard),
            Held::Read(guard) => Hold::context(guard),
            Held::Write(guard) => Hold::context(guard),
        }
    }

    fn is_lost(&self) -> bool {
        self.context().is_lost()
    }

    fn release(self) -> Result<(), Error> {
        match self {
            Held::Lock(guard) => guard.release(),
            Held::Read(guard) => guard.release(),
            Held::Write(guard) => guard.release(),
        }
    }
}
