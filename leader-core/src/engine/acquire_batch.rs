//! One try of many locks at once, without waiting, shared by the blocking and the async
//! electors: the requests to send, and what each answer means. The electors only do the I/O
//! (one `try_acquire_batch` call) and release the owner tokens of failed requests.

use std::time::Instant;

use crate::config::options::LeaderElectionOptions;
use crate::engine::attempts::request;
use crate::engine::batch_answers::answers_in_order;
use crate::engine::late::{answered_late, is_late};
use crate::engine::orphan::Orphan;
use crate::error::{BackendError, BackendErrorKind, Error};
use crate::name::LockName;
use crate::spi::lease::Lease;
use crate::spi::outcome::AcquireOutcome;
use crate::spi::request::{AcquireRequest, SlotRequest};
use crate::spi::state::LeaderLease;
use crate::telemetry::{AcquireEnd, AcquireProbe};
use crate::tenant::TenantId;

/// The requests of one batch, one per key, each with a fresh owner token and the options'
/// lease, node id and clock; `wait_time` does not apply (each lock is tried once).
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use leader_core::__private::{AcquireBatch, BatchAnswer};
/// use leader_core::{Backend, InMemoryBackend, LeaderElectionOptions, LockBackend, LockName};
///
/// let backend = InMemoryBackend::new();
/// let options = LeaderElectionOptions::default();
/// let keys = [LockName::new("a")?, LockName::new("b")?];
/// let batch = AcquireBatch::new(backend.name(), &keys, &options);
/// let sent_at = Instant::now();
/// let answers = backend.try_acquire_batch(batch.requests());
/// let (answers, orphans) = batch.finish(answers, sent_at, Instant::now());
/// assert!(answers.iter().all(|a| matches!(a, BatchAnswer::Acquired(..))));
/// assert!(orphans.is_empty());
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug)]
pub struct AcquireBatch<'a> {
    backend: &'static str,
    requests: Vec<AcquireRequest<'a>>,
    probes: Vec<AcquireProbe<'a>>,
}

/// What one request of an [`AcquireBatch`] came to.
#[derive(Debug)]
pub enum BatchAnswer {
    /// Acquired; with the instant the batch was sent (the lease's monotonic start).
    Acquired(Lease, Instant),
    /// Held by another owner; the holder, when the backend could tell.
    Held(Option<LeaderLease>),
    /// The request failed; its owner token is among the batch's orphans. An acquisition
    /// answered after its lease's deadline is [`Error::LeaseLost`] here, its lease among
    /// the orphans too: no action may start on it.
    Failed(Error),
}

impl<'a> AcquireBatch<'a> {
    /// One request per key of `keys`, on the backend named `backend`.
    pub fn new(
        backend: &'static str,
        keys: &'a [LockName],
        options: &'a LeaderElectionOptions,
    ) -> Self {
        let requests: Vec<_> = keys.iter().map(|key| request(key, options)).collect();
        let probes = requests
            .iter()
            .map(|request| AcquireProbe::start(backend, &SlotRequest::single(*request)))
            .collect();
        AcquireBatch {
            backend,
            requests,
            probes,
        }
    }

    /// The requests to pass to `try_acquire_batch`.
    pub fn requests(&self) -> &[AcquireRequest<'a>] {
        &self.requests
    }

    /// What the requests (sent at `sent_at`, answered at `answered_at`, both read by the
    /// caller) came to, one per request in their order, and the possible acquisitions of
    /// the failed ones, for the caller to release in the background. A backend that
    /// answers short fails the unanswered requests. A lock acquired but answered at or
    /// after its deadline (`sent_at + lease_time`: the batch came back too late) fails
    /// with [`Error::LeaseLost`], its lease to release with the orphans (counted in
    /// `leader_lease_lost_total`). The batch's answers all came back at once: the one
    /// instant judges every lease.
    pub fn finish(
        self,
        answers: Vec<Result<AcquireOutcome, Error>>,
        sent_at: Instant,
        answered_at: Instant,
    ) -> (Vec<BatchAnswer>, Vec<Orphan>) {
        let keys = self.requests.iter().map(|request| request.key);
        let answers = answers_in_order(self.backend, keys, answers);
        let mut orphans = Vec::new();
        let results = self
            .requests
            .iter()
            .zip(&self.probes)
            .zip(answers)
            .map(|((request, probe), answer)| {
                let result = match answer {
                    Ok(AcquireOutcome::Acquired(lease))
                        if is_late(sent_at, request.lease_time, answered_at) =>
                    {
                        probe.answered(sent_at);
                        let error = answered_late(self.backend, &lease.key, lease.fencing_token);
                        orphans.push(Orphan::new(
                            lease.key,
                            lease.owner,
                            sent_at,
                            request.lease_time,
                        ));
                        BatchAnswer::Failed(error)
                    }
                    Ok(AcquireOutcome::Acquired(lease)) => {
                        probe.answered(sent_at);
                        BatchAnswer::Acquired(lease, sent_at)
                    }
                    Ok(AcquireOutcome::Held(holder)) => {
                        probe.answered(sent_at);
                        BatchAnswer::Held(holder)
                    }
                    Err(error) => {
                        orphans.push(Orphan::of_request(&SlotRequest::single(*request), sent_at));
                        BatchAnswer::Failed(error)
                    }
                };
                probe.finish_batched(&result);
                result
            })
            .collect();
        (results, orphans)
    }
}

/// The lock `name` of each of a batch's tenants (`tenant:<id>:<name>`): the valid keys to
/// try, and the answers put back in the tenants' order beside the tenants whose key was
/// invalid.
///
/// # Examples
///
/// ```
/// use leader_core::__private::TenantKeys;
/// use leader_core::TenantId;
///
/// let tenants = [TenantId::new("acme")?, TenantId::new("globex")?];
/// let keys = TenantKeys::new("sync", &tenants);
/// assert_eq!(keys.valid()[1].as_str(), "tenant:globex:sync");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TenantKeys {
    /// Per tenant, whether its key is valid (then it is the next of `valid`).
    named: Vec<Result<(), Error>>,
    valid: Vec<LockName>,
}

impl TenantKeys {
    /// The keys of `name` for `tenants`.
    pub fn new(name: &str, tenants: &[TenantId]) -> Self {
        let mut valid = Vec::with_capacity(tenants.len());
        let named = tenants
            .iter()
            .map(|tenant| {
                let key = tenant.lock_name(name)?;
                valid.push(key);
                Ok(())
            })
            .collect();
        TenantKeys { named, valid }
    }

    /// The valid keys, for [`AcquireBatch::new`].
    pub fn valid(&self) -> &[LockName] {
        &self.valid
    }

    /// One answer per tenant, in the tenants' order: its key's error, or the answer of the
    /// batch (whose answers are the valid keys', in order) to its key.
    pub fn merge(self, answers: Vec<BatchAnswer>) -> Vec<Result<BatchAnswer, Error>> {
        let mut answers = answers.into_iter();
        self.named
            .into_iter()
            .map(|named| {
                named?;
                // `AcquireBatch::finish` answers every request, so this never runs short.
                Ok(answers
                    .next()
                    .unwrap_or_else(|| BatchAnswer::Failed(unanswered_tenant())))
            })
            .collect()
    }
}

fn unanswered_tenant() -> Error {
    BackendError::new(
        "batch",
        "",
        BackendErrorKind::Permanent,
        "a tenant of the batch got no answer",
    )
    .into()
}

impl AcquireProbe<'_> {
    /// The request of a batch ended with `answer`.
    pub(crate) fn finish_batched(&self, answer: &BatchAnswer) {
        match answer {
            BatchAnswer::Acquired(lease, _) => self.end(AcquireEnd::Acquired, Some(lease)),
            BatchAnswer::Held(_) => self.end(AcquireEnd::Skipped, None),
            BatchAnswer::Failed(_) => self.end(AcquireEnd::Failed, None),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::embedded::memory::InMemoryBackend;
    use crate::spi::backend::LockBackend;

    #[test]
    fn a_lock_answered_after_its_deadline_fails_as_lost_and_is_released() {
        let backend = InMemoryBackend::new();
        let options = LeaderElectionOptions::default().with_lease_time(Duration::from_millis(50));
        let keys = [LockName::new("late").unwrap()];
        let batch = AcquireBatch::new("memory", &keys, &options);
        let owner = batch.requests()[0].owner;
        let answers = backend.try_acquire_batch(batch.requests());
        // Sent 60 ms ago as far as the deadline goes: the answer came after the lease.
        let sent_at = Instant::now()
            .checked_sub(Duration::from_millis(60))
            .unwrap();
        let (answers, orphans) = batch.finish(answers, sent_at, Instant::now());
        assert!(
            matches!(&answers[0], BatchAnswer::Failed(Error::LeaseLost { key }) if key == "late"),
            "{answers:?}"
        );
        assert_eq!(orphans.len(), 1, "the late lease is released");
        assert_eq!(orphans[0].leases()[0].owner, owner);
    }

    #[test]
    fn a_backend_that_answers_short_fails_the_unanswered_requests_by_name() {
        let options = LeaderElectionOptions::default();
        let keys = [LockName::new("a").unwrap(), LockName::new("b").unwrap()];
        let batch = AcquireBatch::new("short", &keys, &options);
        let now = Instant::now();
        let (answers, orphans) = batch.finish(Vec::new(), now, now);
        assert_eq!(orphans.len(), 2, "either may have been taken");
        for (answer, key) in answers.iter().zip(&keys) {
            let BatchAnswer::Failed(err) = answer else {
                panic!("{answer:?}");
            };
            assert_eq!(err.lock_key(), Some(key.as_str()));
            assert!(err.to_string().contains("short backend"), "{err}");
        }
    }

    #[test]
    fn lateness_is_judged_at_the_given_answered_at_not_the_machines_clock() {
        let lease_time = Duration::from_secs(30);
        let options = LeaderElectionOptions::default().with_lease_time(lease_time);
        // Sent an hour from now as the machine's clock goes: the real clock is far from
        // every deadline here.
        let sent_at = Instant::now() + Duration::from_secs(3600);
        let deadline = crate::engine::late::lease_deadline(sent_at, lease_time).unwrap();
        for (answered_at, late) in [
            (deadline + Duration::from_millis(1), true),
            (deadline - Duration::from_millis(1), false),
        ] {
            let backend = InMemoryBackend::new();
            let keys = [LockName::new("job").unwrap()];
            let batch = AcquireBatch::new("memory", &keys, &options);
            let answers = backend.try_acquire_batch(batch.requests());
            let (answers, orphans) = batch.finish(answers, sent_at, answered_at);
            match &answers[0] {
                BatchAnswer::Failed(Error::LeaseLost { .. }) => {
                    assert!(late, "answered in time at {answered_at:?}");
                    assert_eq!(orphans.len(), 1, "the late lease is released");
                }
                BatchAnswer::Acquired(_, at) => {
                    assert!(!late, "answered late at {answered_at:?}");
                    assert_eq!(*at, sent_at);
                    assert!(orphans.is_empty());
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
