//! [`ThreadPoolLeaderElector`]: run elected actions on a fixed pool of worker threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use leader_core::{
    Error, ForceReleaseOutcome, IntoTenantId, LeaderElectionOptions, LeaderRunResult, LeaderState,
    LeaseContext, ListPage, ListRequest, LockBackend, TenantId,
};
use parking_lot::Mutex;

use crate::elector::LeaderElector;
use crate::task::{Slot, TaskHandle};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A [`LeaderElector`] whose actions run on a fixed pool of worker threads.
///
/// `run_async_if_leader` returns at once with a [`TaskHandle`]; a worker then competes for
/// the lock, runs the action if elected, and releases the lease when the action completes.
/// The lock name is validated before the task is queued.
///
/// Clones share the pool. When the last clone is dropped (or [`shutdown`](Self::shutdown)
/// is called) the pool stops taking tasks, finishes the queued ones and joins its workers;
/// submitting afterwards is [`Error::ShutDown`].
///
/// # Examples
///
/// ```
/// use leader_blocking::ThreadPoolLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions};
///
/// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 4)?;
/// let handles: Vec<_> = ["a", "b", "c"]
///     .into_iter()
///     .map(|job| pool.run_async_if_leader(job, move || job.len()))
///     .collect::<Result<_, _>>()?;
/// for handle in handles {
///     assert_eq!(handle.wait()?, Some(1));
/// }
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
pub struct ThreadPoolLeaderElector<B> {
    elector: LeaderElector<B>,
    pool: Arc<WorkerPool>,
}

impl<B> Clone for ThreadPoolLeaderElector<B> {
    fn clone(&self) -> Self {
        ThreadPoolLeaderElector {
            elector: self.elector.clone(),
            pool: Arc::clone(&self.pool),
        }
    }
}

impl<B: LockBackend + 'static> ThreadPoolLeaderElector<B> {
    /// An elector with `workers` threads (at least one).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate.
    pub fn new(backend: B, options: LeaderElectionOptions, workers: usize) -> Result<Self, Error> {
        Ok(ThreadPoolLeaderElector::from_elector(
            LeaderElector::new(backend, options)?,
            workers,
        ))
    }

    /// A pool of `workers` threads (at least one) running `elector`'s actions.
    pub fn from_elector(elector: LeaderElector<B>, workers: usize) -> Self {
        ThreadPoolLeaderElector {
            elector,
            pool: Arc::new(WorkerPool::start(workers.max(1))),
        }
    }

    /// How many worker threads run actions: the number asked for, less any the system
    /// refused to start (each refusal is logged). Zero means none could be started, and
    /// every submission fails with [`Error::ShutDown`].
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::ThreadPoolLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 3)?;
    /// assert_eq!(pool.workers(), 3);
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn workers(&self) -> usize {
        self.pool.size
    }

    /// The elector the workers use.
    pub fn elector(&self) -> &LeaderElector<B> {
        &self.elector
    }

    /// Where the lock `name` lives in the backend's store; see
    /// [`LeaderElector::storage_key`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem.
    pub fn storage_key(&self, name: &str) -> Result<String, Error> {
        self.elector.storage_key(name)
    }

    /// A clone sharing this pool and scoped to `tenant`; see [`LeaderElector::for_tenant`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTenant`] or [`Error::AlreadyScoped`].
    pub fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, Error> {
        Ok(self.with_elector(self.elector.for_tenant(tenant)?))
    }

    /// The tenant this elector is scoped to, if any.
    pub fn tenant(&self) -> Option<TenantId> {
        self.elector.tenant()
    }

    /// A clone sharing this pool, with `elector` in place of the current one.
    pub fn with_elector(&self, elector: LeaderElector<B>) -> Self {
        ThreadPoolLeaderElector {
            elector,
            pool: Arc::clone(&self.pool),
        }
    }

    /// Queues `action` to run on a worker if this node wins the lock; the handle yields
    /// `Some(value)` or `None` (skipped).
    ///
    /// # Errors
    ///
    /// An invalid name, or [`Error::ShutDown`]. Backend failures, and [`Error::LeaseLost`]
    /// for a lease lost before the action started, come through the handle, as
    /// [`LeaderElector::run_if_leader_with`] gives them.
    pub fn run_async_if_leader<T, F>(
        &self,
        name: &str,
        action: F,
    ) -> Result<TaskHandle<Option<T>>, Error>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.submit(name, move |elector, name| {
            elector.run_if_leader(name, action)
        })
    }

    /// Queues a fallible `action`; the handle yields the shared [`LeaderRunResult`].
    ///
    /// # Errors
    ///
    /// An invalid name, or [`Error::ShutDown`]. Backend failures, and [`Error::LeaseLost`]
    /// for a lease lost before the action started, come through the handle, as
    /// [`LeaderElector::run_if_leader_with`] gives them.
    pub fn run_async_if_leader_result<T, E, F>(
        &self,
        name: &str,
        action: F,
    ) -> Result<TaskHandle<LeaderRunResult<T, E>>, Error>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnOnce() -> Result<T, E> + Send + 'static,
    {
        self.submit(name, move |elector, name| {
            elector.run_if_leader_result(name, action)
        })
    }

    /// Queues an `action` that sees its [`LeaseContext`].
    ///
    /// # Errors
    ///
    /// An invalid name, or [`Error::ShutDown`]. Backend failures, and [`Error::LeaseLost`]
    /// for a lease lost before the action started, come through the handle, as
    /// [`LeaderElector::run_if_leader_with`] gives them.
    pub fn run_async_if_leader_with<T, E, F>(
        &self,
        name: &str,
        action: F,
    ) -> Result<TaskHandle<LeaderRunResult<T, E>>, Error>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnOnce(&LeaseContext) -> Result<T, E> + Send + 'static,
    {
        self.submit(name, move |elector, name| {
            elector.run_if_leader_with(name, action)
        })
    }

    /// Submits `action` to run if this node wins one of the `slots` slots of the group
    /// `name` (see [`LeaderGroupElector`](crate::LeaderGroupElector)); the outcome carries
    /// the slot.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] for a bad slot count, or [`Error::ShutDown`] if the pool
    /// is shut down. An invalid name, or backend trouble, comes back through the handle.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::ThreadPoolLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 2)?;
    /// let task = pool.run_async_in_group_with("orders", 3, |lease| Ok::<_, String>(lease.slot()))?;
    /// assert!(task.wait()?.into_value().is_some_and(|slot| slot < 3));
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn run_async_in_group_with<T, E, F>(
        &self,
        name: &str,
        slots: u32,
        action: F,
    ) -> Result<TaskHandle<LeaderRunResult<T, E>>, Error>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnOnce(&LeaseContext) -> Result<T, E> + Send + 'static,
    {
        let group = self.elector.group(slots)?;
        let name = name.to_owned();
        self.spawn_with_elector(move |_| group.run_if_leader_with(&name, action))
    }

    /// Queues `work` to run on a worker with this pool's elector; the handle yields what it
    /// returns. For work that must decide something when a worker starts it rather than
    /// when it is queued — the blocking tenant poller builds each tenant's elector there,
    /// so that a minimum lease counted to the end of a cycle is counted from the moment of
    /// acquiring, however long the task waited for a worker.
    ///
    /// # Errors
    ///
    /// [`Error::ShutDown`]. What `work` returns, and a panic in it, come through the handle.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::ThreadPoolLeaderElector;
    /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
    ///
    /// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 1)?;
    /// let task = pool.spawn_with_elector(|elector| elector.run_if_leader("job", || 7))?;
    /// assert_eq!(task.wait()?, Some(7));
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn spawn_with_elector<T, F>(&self, work: F) -> Result<TaskHandle<T>, Error>
    where
        T: Send + 'static,
        F: FnOnce(&LeaderElector<B>) -> Result<T, Error> + Send + 'static,
    {
        let slot = Slot::new();
        let handle = TaskHandle::new(Arc::clone(&slot));
        let elector = self.elector.clone();
        self.pool.submit(Box::new(move || {
            slot.finish(catch_unwind(AssertUnwindSafe(|| work(&elector))));
        }))?;
        Ok(handle)
    }

    /// A best-effort snapshot of who leads `name`, read on the calling thread.
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub fn state(&self, name: &str) -> Result<LeaderState, Error> {
        self.elector.state(name)
    }

    /// One page of the locks held under `request.prefix`, read on the calling thread (see
    /// [`LeaderElector::list`]).
    ///
    /// # Errors
    ///
    /// A backend failure, or a cursor the backend did not make.
    pub fn list(&self, request: ListRequest) -> Result<ListPage, Error> {
        self.elector.list(request)
    }

    /// Frees the lock `name` whoever holds it, on the calling thread (see
    /// [`LeaderElector::force_release`]).
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    pub fn force_release(&self, name: &str) -> Result<ForceReleaseOutcome, Error> {
        self.elector.force_release(name)
    }

    /// Frees the lock `name` only if its holder still has `fencing_token`, on the calling
    /// thread (see [`LeaderElector::force_release_if`]).
    ///
    /// # Errors
    ///
    /// An invalid name, or a backend failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_blocking::ThreadPoolLeaderElector;
    /// use leader_core::{ForceReleaseOutcome, InMemoryBackend, LeaderElectionOptions, LeaseMode};
    ///
    /// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 1)?;
    /// let held = pool.elector().acquire("nightly", LeaseMode::watchdog())?;
    /// let outcome = pool.force_release_if("nightly", held.fencing_token())?;
    /// assert!(matches!(outcome, ForceReleaseOutcome::Released(freed) if freed.fencing_token == held.fencing_token()));
    /// # pool.shutdown();
    /// # Ok::<(), leader_core::Error>(())
    /// ```
    pub fn force_release_if(
        &self,
        name: &str,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.elector.force_release_if(name, fencing_token)
    }

    /// Stops taking tasks, lets the queued ones finish and joins the workers. Later
    /// submissions fail with [`Error::ShutDown`].
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }

    fn submit<T, F>(&self, name: &str, run: F) -> Result<TaskHandle<T>, Error>
    where
        T: Send + 'static,
        F: FnOnce(&LeaderElector<B>, &str) -> Result<T, Error> + Send + 'static,
    {
        self.elector.lock_key(name)?;
        let name = name.to_owned();
        self.spawn_with_elector(move |elector| run(elector, &name))
    }
}

/// The worker threads and the channel that feeds them.
#[derive(Debug)]
struct WorkerPool {
    size: usize,
    jobs: Mutex<Option<Sender<Job>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl WorkerPool {
    fn start(workers: usize) -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded::<Job>();
        let handles = (0..workers)
            .filter_map(|i| {
                let receiver: Receiver<Job> = receiver.clone();
                std::thread::Builder::new()
                    .name(format!("leader-worker-{i}"))
                    .spawn(move || {
                        for job in receiver {
                            job();
                        }
                    })
                    .map_err(|err| tracing::warn!(error = %err, "could not start a worker thread"))
                    .ok()
            })
            .collect::<Vec<_>>();
        let jobs = if handles.is_empty() {
            None
        } else {
            Some(sender)
        };
        WorkerPool {
            size: handles.len(),
            jobs: Mutex::new(jobs),
            workers: Mutex::new(handles),
        }
    }

    fn submit(&self, job: Job) -> Result<(), Error> {
        match self.jobs.lock().as_ref() {
            Some(sender) => sender.send(job).map_err(|_| Error::ShutDown),
            None => Err(Error::ShutDown),
        }
    }

    fn shutdown(&self) {
        drop(self.jobs.lock().take());
        let workers = std::mem::take(&mut *self.workers.lock());
        let current = std::thread::current().id();
        for worker in workers {
            if worker.thread().id() != current {
                let _ = worker.join();
            }
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}
