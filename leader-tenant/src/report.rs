//! [`CycleReport`]: what one poller cycle did for each tenant, with timings.

use std::any::Any;
use std::fmt;
use std::time::{Duration, SystemTime};

use leader_core::LeaderRunResult;

use crate::error::TenantError;

/// Why a job that ran under its tenant's lock did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobFailure<E> {
    /// The job returned this error.
    Error(E),
    /// The job panicked with this message; the lease was released and the other tenants
    /// were not affected.
    Panicked(String),
}

/// What happened to one tenant in one cycle.
#[derive(Debug)]
#[non_exhaustive]
pub enum TenantOutcome<T, E> {
    /// This instance held the tenant's lock and the job succeeded.
    Elected {
        /// What the job returned.
        value: T,
        /// This instance's node id, as recorded in the lock.
        leader_id: String,
        /// The fencing token the job ran under.
        fencing_token: u64,
        /// `true` when the lease was lost before the job returned (see
        /// `LeaderRunResult::Elected::lease_lost`): another instance may have run this
        /// tenant's job meanwhile.
        lease_lost: bool,
    },
    /// Another instance held the tenant's lock (it runs, or already ran, this cycle's job).
    Skipped,
    /// This instance held the lock and the job failed or panicked.
    Failed(JobFailure<E>),
    /// The job could not be attempted: an invalid tenant id or lock name, or backend
    /// trouble (the electors fail closed, so the job did not run).
    Error(TenantError),
    /// The job was in flight when the poller shut down with
    /// [`ShutdownMode::Abandon`](crate::ShutdownMode::Abandon); its outcome is unknown. Its
    /// lease is still released: when an async job's future is dropped, or when a blocking
    /// job returns on its worker.
    Abandoned,
    /// The poller shut down before this tenant's job was started.
    NotStarted,
}

/// The kind of a [`TenantOutcome`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutcomeKind {
    /// [`TenantOutcome::Elected`].
    Elected,
    /// [`TenantOutcome::Skipped`].
    Skipped,
    /// [`TenantOutcome::Failed`].
    Failed,
    /// [`TenantOutcome::Error`].
    Error,
    /// [`TenantOutcome::Abandoned`].
    Abandoned,
    /// [`TenantOutcome::NotStarted`].
    NotStarted,
}

impl<T, E> TenantOutcome<T, E> {
    /// The outcome's kind.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            TenantOutcome::Elected { .. } => OutcomeKind::Elected,
            TenantOutcome::Skipped => OutcomeKind::Skipped,
            TenantOutcome::Failed(_) => OutcomeKind::Failed,
            TenantOutcome::Error(_) => OutcomeKind::Error,
            TenantOutcome::Abandoned => OutcomeKind::Abandoned,
            TenantOutcome::NotStarted => OutcomeKind::NotStarted,
        }
    }

    /// The outcome of one tenant's run: the elector's answer, or the panic that escaped it.
    pub(crate) fn from_run(
        run: Result<Result<LeaderRunResult<T, E>, TenantError>, Box<dyn Any + Send>>,
    ) -> Self {
        match run {
            Ok(Ok(LeaderRunResult::Elected {
                value,
                leader_id,
                fencing_token,
                lease_lost,
                ..
            })) => TenantOutcome::Elected {
                value,
                leader_id,
                fencing_token,
                lease_lost,
            },
            Ok(Ok(LeaderRunResult::Skipped)) => TenantOutcome::Skipped,
            Ok(Ok(LeaderRunResult::ActionFailed(error))) => {
                TenantOutcome::Failed(JobFailure::Error(error))
            }
            Ok(Err(error)) => TenantOutcome::Error(error),
            Err(panic) => TenantOutcome::Failed(JobFailure::Panicked(panic_message(&*panic))),
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(message), _) => (*message).to_owned(),
        (None, Some(message)) => message.clone(),
        (None, None) => "<panic payload is not a string>".to_owned(),
    }
}

/// One tenant's line in a [`CycleReport`].
#[derive(Debug)]
#[non_exhaustive]
pub struct TenantReport<T, E> {
    /// The tenant id, as the source gave it (it may be invalid: see the outcome).
    pub tenant: String,
    /// What happened.
    pub outcome: TenantOutcome<T, E>,
    /// When the tenant's run started, counted from the start of the cycle.
    pub started_after: Duration,
    /// How long the run took: the lock attempt, the job, the release.
    pub elapsed: Duration,
}

/// What one cycle of a poller did: one [`TenantReport`] per tenant, in the source's order.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_blocking::ThreadPoolLeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LeaseContext};
/// use leader_tenant::{BlockingTenantPoller, OutcomeKind, PollerConfig, TenantId};
///
/// let pool = ThreadPoolLeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default(), 2)?;
/// // A cycle run by hand at any moment: a plain lease, not one kept until the cycle's end
/// // (whose guard skips every tenant in the cycle's last second).
/// let config = PollerConfig::new("sync", Duration::from_secs(60)).with_min_lease_time(Duration::ZERO);
/// let job = |t: TenantId, _lease: &LeaseContext| if t.as_str() == "bad" { Err("no") } else { Ok(()) };
/// let poller = BlockingTenantPoller::new(&pool, config, || ["acme", "bad", "x:y"], job)?;
///
/// let report = poller.run_cycle();
/// assert_eq!(report.count(OutcomeKind::Elected), 1);
/// assert_eq!(report.count(OutcomeKind::Failed), 1);
/// assert_eq!(report.count(OutcomeKind::Error), 1); // `x:y` is not a valid tenant id
/// println!("{report}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct CycleReport<T, E> {
    /// The cycle's number: the count of whole intervals since the Unix epoch at its start,
    /// so every instance numbers a cycle alike.
    pub cycle: u64,
    /// When the cycle started, on the poller's clock (the system clock unless `with_clock`).
    pub started_at: SystemTime,
    /// How long the cycle took.
    pub elapsed: Duration,
    /// One line per tenant.
    pub tenants: Vec<TenantReport<T, E>>,
    /// Why there are no tenants, when the source failed.
    pub source_error: Option<TenantError>,
    /// `true` when the shutdown signal cut the cycle short.
    pub interrupted: bool,
}

impl<T, E> CycleReport<T, E> {
    /// How many tenants had an outcome of `kind`.
    pub fn count(&self, kind: OutcomeKind) -> usize {
        self.tenants
            .iter()
            .filter(|t| t.outcome.kind() == kind)
            .count()
    }

    /// The report of `tenant`, if it was in the cycle.
    pub fn tenant(&self, tenant: &str) -> Option<&TenantReport<T, E>> {
        self.tenants.iter().find(|t| t.tenant == tenant)
    }
}

impl<T, E: fmt::Debug> fmt::Display for CycleReport<T, E> {
    /// A summary line, then one line per tenant that did not simply run or skip.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cycle {}: {} tenants in {:?}: {} elected, {} skipped, {} failed, {} errors",
            self.cycle,
            self.tenants.len(),
            self.elapsed,
            self.count(OutcomeKind::Elected),
            self.count(OutcomeKind::Skipped),
            self.count(OutcomeKind::Failed),
            self.count(OutcomeKind::Error),
        )?;
        if self.interrupted {
            f.write_str(" (interrupted by shutdown)")?;
        }
        if let Some(err) = &self.source_error {
            write!(f, "\n  tenant source failed: {err}")?;
        }
        for line in &self.tenants {
            match &line.outcome {
                TenantOutcome::Failed(JobFailure::Error(e)) => {
                    write!(f, "\n  {}: job failed: {e:?}", line.tenant)?;
                }
                TenantOutcome::Failed(JobFailure::Panicked(msg)) => {
                    write!(f, "\n  {}: job panicked: {msg}", line.tenant)?;
                }
                TenantOutcome::Error(err) => write!(f, "\n  {}: error: {err}", line.tenant)?,
                TenantOutcome::Abandoned => write!(f, "\n  {}: abandoned", line.tenant)?,
                TenantOutcome::NotStarted => write!(f, "\n  {}: not started", line.tenant)?,
                _ => {}
            }
        }
        Ok(())
    }
}

impl<T, E: fmt::Debug> TenantReport<T, E> {
    /// Emits the tracing event for this tenant's outcome.
    pub(crate) fn trace(&self) {
        trace_outcome(&self.tenant, &self.outcome, self.elapsed);
    }
}

/// Emits the tracing event of one tenant's line: its `outcome`, after `elapsed`.
pub(crate) fn trace_outcome<T, E: fmt::Debug>(
    tenant: &str,
    outcome: &TenantOutcome<T, E>,
    elapsed: Duration,
) {
    let elapsed_ms = elapsed.as_secs_f64() * 1e3;
    match outcome {
        TenantOutcome::Elected { fencing_token, .. } => {
            tracing::debug!(tenant, fencing_token, elapsed_ms, "tenant job ran");
        }
        TenantOutcome::Skipped => {
            tracing::debug!(tenant, "tenant job skipped: another instance holds it")
        }
        TenantOutcome::Failed(JobFailure::Error(error)) => {
            tracing::warn!(tenant, ?error, elapsed_ms, "tenant job failed");
        }
        TenantOutcome::Failed(JobFailure::Panicked(message)) => {
            tracing::warn!(tenant, panic = %message, elapsed_ms, "tenant job panicked");
        }
        TenantOutcome::Error(error) => {
            tracing::warn!(tenant, error = %error, "tenant job not attempted");
        }
        TenantOutcome::Abandoned | TenantOutcome::NotStarted => {}
    }
}

impl<T, E> CycleReport<T, E> {
    /// Emits the tracing event summing up the cycle.
    pub(crate) fn trace(&self) {
        let elapsed_ms = self.elapsed.as_secs_f64() * 1e3;
        if let Some(error) = &self.source_error {
            tracing::warn!(cycle = self.cycle, error = %error, "tenant source failed; cycle skipped");
            return;
        }
        tracing::info!(
            cycle = self.cycle,
            tenants = self.tenants.len(),
            elected = self.count(OutcomeKind::Elected),
            skipped = self.count(OutcomeKind::Skipped),
            failed = self.count(OutcomeKind::Failed),
            errors = self.count(OutcomeKind::Error),
            abandoned = self.count(OutcomeKind::Abandoned),
            not_started = self.count(OutcomeKind::NotStarted),
            elapsed_ms,
            "tenant cycle done"
        );
    }
}
