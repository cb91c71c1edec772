//! The faults: which kinds a run draws from, the seeded schedule, and injecting one.
//!
//! One fault at a time: the schedule draws a gap (1–3 s), then a kind, then its target and
//! duration, all from one RNG seeded by `--seed`. The first kinds are every chosen kind
//! once, in a random order (so a short run sees each of them), the rest by weight. The
//! times at which faults land still depend on the machine, so a seed fixes the sequence,
//! not the interleaving.

use std::io;
use std::thread;
use std::time::Duration;

use leader_rig::fixtures::{EtcdCluster, EtcdMember};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::backend::Backend;
use crate::event::{FaultKind, describe, now_us};
use crate::orchestrator::Lab;
use crate::read_write;
use crate::worker::{lock_name, worker_of};
use crate::workers::signal;
use leader::ReadWriteLocks;
use leader_history::{FaultSpan, LOSS_AFTERMATH_US};

/// How long the `row-lock` fault keeps the rows locked each time, in ms: under a third of
/// the lease (1 s by default; etcd, 2 s, has no rows), so a renewal that waits for the
/// rows is answered with a third of its lease left at the least.
const ROW_LOCK_MS: std::ops::Range<u64> = 150..300;
/// How many times the `row-lock` fault locks the rows, [`ROW_LOCK_GAP`] apart: a renewal
/// comes every third of a lease, so each lock meets a held lease's renewal about two
/// times in three, and five of them (some two seconds in all) one almost surely.
const ROW_LOCKS: usize = 5;
/// The pause between two of the `row-lock` fault's locks.
const ROW_LOCK_GAP: Duration = Duration::from_millis(200);

/// A kind of fault a run may inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// kill -9 a worker, start it again after a moment.
    Kill,
    /// SIGSTOP the current holder for longer than the lease, then SIGCONT.
    Pause,
    /// Restart the lock server (Redis loses its data, MongoDB, etcd and PostgreSQL keep
    /// it).
    Restart,
    /// Drop all traffic at the proxy for a while, then heal.
    Blackhole,
    /// Reset every connection through the proxy.
    Reset,
    /// etcd: kill -9 one member (the raft leader half the time), start it again 1–3 s
    /// later on its data.
    MemberKill,
    /// etcd: SIGSTOP one member (the raft leader half the time) for 1–4 s, then SIGCONT.
    MemberPause,
    /// etcd: drop all traffic at one member's proxy for 1–4 s, then heal; the member
    /// itself stays in the cluster.
    MemberCut,
    /// SQLite, PostgreSQL: delete every lock row by hand (**loses data**: the holders'
    /// rows, and on PostgreSQL the fencing counters kept in them).
    Wipe,
    /// SQLite: another connection holds an exclusive transaction for 1–3 s, longer than
    /// the workers' busy timeout: the store is busy, calls fail with typed errors.
    Busy,
    /// PostgreSQL: kill -9 every process of the server, start it again 1–3 s later on
    /// its data directory (crash recovery keeps every committed row).
    ServerKill,
    /// PostgreSQL: `pg_terminate_backend` every client session but the orchestrator's.
    Terminate,
    /// PostgreSQL (and with a standby): another session locks every lock row
    /// (`SELECT … FOR UPDATE`) for 150–300 ms, under a third of the lease, then rolls
    /// back, five times 200 ms apart, as a slow contender would (a refused acquire locks
    /// the holder's row until it commits, a tenant batch hundreds of rows). The store
    /// stays up and no lease is gone: a renewal that meets the locked row must wait or
    /// try again, not fail.
    RowLock,
    /// Redis with Sentinels: kill -9 the master, wait until the Sentinels promote the
    /// replica, then start the old master, empty, as the new master's replica (**loses
    /// data**: replication is asynchronous, so the replica may lack the last grants).
    /// PostgreSQL with a synchronous standby: kill -9 the primary, promote the standby
    /// (keeps every acknowledged commit), rebuild the old primary as its standby.
    Failover,
}

impl Class {
    /// Every kind.
    pub const ALL: [Class; 14] = [
        Class::Kill,
        Class::Pause,
        Class::Restart,
        Class::Blackhole,
        Class::Reset,
        Class::MemberKill,
        Class::MemberPause,
        Class::MemberCut,
        Class::Wipe,
        Class::Busy,
        Class::ServerKill,
        Class::Terminate,
        Class::RowLock,
        Class::Failover,
    ];

    /// Every kind `backend` supports ([`Backend::faults`]).
    pub fn of(backend: Backend) -> Vec<Class> {
        backend.faults().to_vec()
    }

    /// The backends it applies to, for a usage error.
    pub fn backends(self) -> Vec<&'static str> {
        Backend::ALL
            .into_iter()
            .filter(|b| b.faults().contains(&self))
            .map(Backend::name)
            .collect()
    }

    /// The kind a `--faults` name means.
    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its `--faults` name.
    pub fn name(self) -> &'static str {
        match self {
            Class::Kill => "kill",
            Class::Pause => "pause",
            Class::Restart => "restart",
            Class::Blackhole => "blackhole",
            Class::Reset => "reset",
            Class::MemberKill => "member-kill",
            Class::MemberPause => "member-pause",
            Class::MemberCut => "member-cut",
            Class::Wipe => "wipe",
            Class::Busy => "busy",
            Class::ServerKill => "server-kill",
            Class::Terminate => "terminate",
            Class::RowLock => "row-lock",
            Class::Failover => "failover",
        }
    }

    /// How often it is drawn, relative to the others.
    fn weight(self) -> u32 {
        match self {
            // A failover is what a Sentinel set is run for, and the slowest fault (some
            // seven seconds): drawn as often as a pause, so a 45 s run sees a few.
            Class::Pause | Class::Failover => 3,
            Class::Kill
            | Class::Restart
            | Class::Blackhole
            | Class::MemberKill
            | Class::MemberPause
            | Class::MemberCut
            | Class::Wipe
            | Class::Busy
            | Class::ServerKill
            | Class::RowLock => 2,
            Class::Reset | Class::Terminate => 1,
        }
    }
}

/// The seeded fault schedule.
#[derive(Debug)]
pub struct Schedule {
    rng: StdRng,
    classes: Vec<Class>,
    /// Kinds not drawn yet: drawn first, in a random order.
    unseen: Vec<Class>,
}

impl Schedule {
    /// A schedule drawing from `classes`, seeded by `seed`.
    pub fn new(seed: u64, classes: Vec<Class>) -> Self {
        Schedule {
            rng: StdRng::seed_from_u64(seed),
            unseen: classes.clone(),
            classes,
        }
    }

    /// How long to wait before the next fault.
    pub fn gap(&mut self) -> Duration {
        Duration::from_millis(self.rng.random_range(1000..3000))
    }

    /// The next kind of fault, `None` when the run injects none: each kind once, in a
    /// random order, then by weight.
    pub fn next_class(&mut self) -> Option<Class> {
        if !self.unseen.is_empty() {
            let index = self.rng.random_range(0..self.unseen.len());
            return Some(self.unseen.swap_remove(index));
        }
        let total: u32 = self.classes.iter().map(|c| c.weight()).sum();
        if total == 0 {
            return None;
        }
        let mut pick = self.rng.random_range(0..total);
        for class in &self.classes {
            if pick < class.weight() {
                return Some(*class);
            }
            pick -= class.weight();
        }
        None
    }

    /// Injects one fault of `class` and waits until it is over.
    ///
    /// # Errors
    ///
    /// When a worker or the lock server cannot be started again, or a signal cannot be
    /// sent: the run cannot go on.
    pub fn inject(&mut self, class: Class, lab: &mut Lab) -> io::Result<FaultSpan> {
        let lease = lab.lease;
        let rng = &mut self.rng;
        let kind = match class {
            Class::Kill => FaultKind::Kill {
                worker: rng.random_range(1..=lab.workers.count()),
            },
            Class::Pause => FaultKind::Pause {
                worker: holder(lab, rng)
                    .unwrap_or_else(|| rng.random_range(1..=lab.workers.count())),
            },
            Class::Restart => FaultKind::Restart {
                data_lost: lab.restart_loses_data,
            },
            Class::Blackhole => FaultKind::Blackhole,
            Class::Reset => FaultKind::Reset,
            Class::MemberKill => {
                let (member, leader) = pick_member(rng, lab)?;
                FaultKind::MemberKill { member, leader }
            }
            Class::MemberPause => {
                let (member, leader) = pick_member(rng, lab)?;
                FaultKind::MemberPause { member, leader }
            }
            Class::MemberCut => FaultKind::MemberCut {
                member: rng.random_range(0..lab.proxies.len()),
            },
            // The counts are filled in below, once the fault is done.
            Class::Wipe => FaultKind::Wipe { rows: 0 },
            Class::Busy => FaultKind::Busy,
            Class::ServerKill => FaultKind::ServerKill,
            Class::Terminate => FaultKind::Terminate { sessions: 0 },
            Class::RowLock => FaultKind::RowLock { rows: 0 },
            Class::Failover => FaultKind::Failover {
                data_lost: lab.failover_loses_data,
            },
        };
        if class == Class::RowLock {
            wait_until_quiet(lab);
        }
        lab.journal.say(&format!("fault: {}", describe(kind)));
        let start = now_us();
        let mut kind = kind;
        match &mut kind {
            FaultKind::Kill { worker } => {
                lab.workers.kill(*worker, &mut lab.journal);
                thread::sleep(Duration::from_millis(rng.random_range(300..1500)));
                lab.workers.spawn(*worker, &mut lab.journal)?;
            }
            FaultKind::Pause { worker } => {
                if let Some(pid) = lab.workers.pid(*worker) {
                    signal(pid, "STOP")?;
                    thread::sleep(lease + Duration::from_millis(rng.random_range(500..2000)));
                    signal(pid, "CONT")?;
                }
            }
            FaultKind::Restart { .. } => {
                lab.server.restart()?;
            }
            FaultKind::Blackhole => {
                lab.blackhole();
                thread::sleep(Duration::from_millis(rng.random_range(1000..4000)));
                lab.heal();
            }
            FaultKind::Reset => lab.reset(),
            FaultKind::MemberKill { member, .. } => {
                let down = Duration::from_millis(rng.random_range(1000..3000));
                let cluster = etcd(lab)?;
                let target = member_mut(cluster, *member)?;
                target.kill();
                thread::sleep(down);
                target.restart()?;
                cluster.wait_until_healthy()?;
            }
            FaultKind::MemberPause { member, .. } => {
                let stopped = Duration::from_millis(rng.random_range(1000..4000));
                let cluster = etcd(lab)?;
                let pid = member_mut(cluster, *member)?
                    .pid()
                    .ok_or_else(|| io::Error::other(format!("etcd member m{member} is down")))?;
                signal(pid, "STOP")?;
                thread::sleep(stopped);
                signal(pid, "CONT")?;
                cluster.wait_until_healthy()?;
            }
            FaultKind::MemberCut { member } => {
                let cut = Duration::from_millis(rng.random_range(1000..4000));
                if let Some(proxy) = lab.proxies.get(*member) {
                    proxy.blackhole();
                    thread::sleep(cut);
                    proxy.heal();
                }
            }
            FaultKind::Wipe { rows } => *rows = lab.server.wipe()?,
            FaultKind::Busy => {
                let held = Duration::from_millis(rng.random_range(1000..3000));
                lab.server.hold_exclusive(held)?;
            }
            FaultKind::ServerKill => {
                let down = Duration::from_millis(rng.random_range(1000..3000));
                lab.server.kill_and_restart(down)?;
            }
            FaultKind::Terminate { sessions } => *sessions = lab.server.terminate_sessions()?,
            FaultKind::RowLock { rows } => {
                for time in 0..ROW_LOCKS {
                    if time > 0 {
                        thread::sleep(ROW_LOCK_GAP);
                    }
                    let held = Duration::from_millis(rng.random_range(ROW_LOCK_MS));
                    *rows = (*rows).max(lab.server.lock_rows(held)?);
                }
            }
            // Over once the new master serves and the old one is its replica again.
            FaultKind::Failover { .. } => lab.server.failover()?,
        }
        let span = FaultSpan {
            kind,
            start,
            end: now_us(),
        };
        lab.journal.fault(span)?;
        Ok(span)
    }
}

/// Waits until no earlier fault can explain a lost lease any more (a lease and
/// [`LOSS_AFTERMATH_US`] after the last one ended): the `row-lock` fault explains no loss,
/// and a lease it made the product lose must not pass for the earlier fault's doing.
fn wait_until_quiet(lab: &Lab) {
    let Some(last) = lab.journal.faults().last() else {
        return;
    };
    let lease_us = u64::try_from(lab.lease.as_micros()).unwrap_or(u64::MAX);
    let quiet_at = last
        .end
        .saturating_add(lease_us)
        .saturating_add(LOSS_AFTERMATH_US);
    let now = now_us();
    if quiet_at > now {
        thread::sleep(Duration::from_micros(quiet_at - now));
    }
}

/// A member to act on: the raft leader half the time, else a random one (both choices
/// drawn whatever the cluster's state, so the sequence stays the seed's), and whether it
/// leads now.
fn pick_member(rng: &mut StdRng, lab: &mut Lab) -> io::Result<(usize, bool)> {
    let to_leader = rng.random_bool(0.5);
    let cluster = etcd(lab)?;
    let any = rng.random_range(0..cluster.members().len());
    let leader = cluster.leader()?;
    let member = if to_leader { leader } else { any };
    Ok((member, member == leader))
}

/// The run's etcd cluster; an error for another backend (the command line refuses
/// member faults there).
fn etcd(lab: &mut Lab) -> io::Result<&mut EtcdCluster> {
    lab.server
        .etcd_mut()
        .ok_or_else(|| io::Error::other("a member fault needs the etcd backend"))
}

fn member_mut(cluster: &mut EtcdCluster, member: usize) -> io::Result<&mut EtcdMember> {
    cluster
        .members_mut()
        .get_mut(member)
        .ok_or_else(|| io::Error::other(format!("no etcd member m{member}")))
}

/// A worker holding a lock now (of a lock drawn at random, then the others in turn; the
/// two read/write locks count among them, their writer or a reader drawn at random),
/// asked of the lock server directly (not through the proxy), retried for about a second
/// while every lock is free.
fn holder(lab: &Lab, rng: &mut StdRng) -> Option<u32> {
    let locks = lab.locks.max(1);
    let candidates = locks + 2;
    let first = rng.random_range(0..candidates);
    for attempt in 0..10 {
        let drawn = (first + attempt) % candidates;
        let holder = if drawn < locks {
            let state = lab.observer.state(&lock_name(drawn)).ok();
            state.and_then(|s| s.leader().cloned())
        } else {
            let name = read_write::lock_name(drawn - locks);
            let state = ReadWriteLocks::new(&lab.observer).state(&name).ok();
            state.and_then(|s| {
                s.writer.or_else(|| {
                    let at = rng.random_range(0..s.readers.len().max(1));
                    s.readers.into_iter().nth(at)
                })
            })
        };
        if let Some(worker) = holder.and_then(|h| worker_of(&h.leader_id)) {
            return Some(worker);
        }
        thread::sleep(Duration::from_millis(100));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_draws_every_kind_once_first() {
        for seed in 0..20 {
            let mut schedule = Schedule::new(seed, Class::ALL.to_vec());
            let mut first: Vec<Class> = (0..Class::ALL.len())
                .map(|_| schedule.next_class().unwrap())
                .collect();
            first.sort_by_key(|c| c.name());
            let mut all = Class::ALL.to_vec();
            all.sort_by_key(|c| c.name());
            assert_eq!(first, all, "seed {seed}");
            assert!(schedule.next_class().is_some());
        }
        assert_eq!(Schedule::new(1, Vec::new()).next_class(), None);
    }

    #[test]
    fn names_round_trip_and_member_faults_are_etcd_only() {
        for class in Class::ALL {
            assert_eq!(Class::from_name(class.name()), Some(class));
            assert!(!class.backends().is_empty(), "{class:?} applies nowhere");
        }
        assert_eq!(Class::MemberCut.backends(), vec!["etcd"]);
        for backend in [Backend::Redis, Backend::Mongodb] {
            let classes = Class::of(backend);
            assert_eq!(classes.len(), 5, "{backend:?}");
        }
    }
}
