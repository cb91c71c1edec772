//! [`TenantBatch`]: the decisions of one tenant batch (`try_acquire_for_tenants`), once
//! for the blocking and the async elector.

use std::time::Instant;

use crate::engine::acquire_batch::{AcquireBatch, BatchAnswer, TenantKeys};
use crate::engine::keepalive::Keepalive;
use crate::engine::settings::ElectorSettings;
use crate::error::Error;
use crate::spi::lease::Lease;
use crate::tenant::TenantId;

/// One lock `name` tried for many tenants in one backend call: which keys to try, and
/// what each tenant's answer comes to. The shell sends [`requests`](Self::requests),
/// releases the orphans in the background, and wraps each [`Won`] lease in its own held
/// lease.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use leader_core::__private::{ElectorSettings, TenantBatch};
/// use leader_core::{InMemoryBackend, LeaderElectionOptions, LockBackend, TenantId};
///
/// let settings = ElectorSettings::new(LeaderElectionOptions::default())?;
/// let tenants = [TenantId::new("acme")?, TenantId::new("globex")?];
/// let batch = TenantBatch::new(&settings, "memory", "sync", &tenants).expect("unscoped");
/// let backend = InMemoryBackend::new();
/// let requests = batch.requests();
/// let sent_at = Instant::now();
/// let answers = backend.try_acquire_batch(requests.requests());
/// let (answers, orphans) = requests.finish(answers, sent_at, Instant::now());
/// assert!(orphans.is_empty());
/// let won = batch.answers(answers);
/// assert!(won.iter().all(|answer| matches!(answer, Ok(Some(_)))));
///
/// let scoped = settings.for_tenant("acme")?;
/// let refused = TenantBatch::new(&scoped, "memory", "sync", &tenants).unwrap_err();
/// assert_eq!(refused.len(), 2); // one `AlreadyScoped` per tenant
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TenantBatch<'a> {
    settings: &'a ElectorSettings,
    backend: &'static str,
    tenants: &'a [TenantId],
    keys: TenantKeys,
}

/// A tenant's lock the batch took.
#[derive(Debug)]
pub struct Won<'a> {
    /// The lease.
    pub lease: Lease,
    /// When the batch was sent (the lease's monotonic start).
    pub sent_at: Instant,
    /// The tenant it is for.
    pub tenant: &'a TenantId,
    /// How it is kept: the renewals, and the minimum lease a release leaves.
    pub keepalive: Keepalive,
}

impl<'a> TenantBatch<'a> {
    /// The batch of `name` for `tenants`, with the options of `settings`, on the backend
    /// named `backend`.
    ///
    /// # Errors
    ///
    /// One [`Error::AlreadyScoped`] per tenant when `settings` have a prefix: a batch
    /// scopes each name to its tenant itself, and scopes do not nest.
    pub fn new(
        settings: &'a ElectorSettings,
        backend: &'static str,
        name: &str,
        tenants: &'a [TenantId],
    ) -> Result<Self, Vec<Error>> {
        if let Some(prefix) = settings.name_prefix() {
            let scoped = || Error::AlreadyScoped {
                prefix: prefix.to_owned(),
            };
            return Err(tenants.iter().map(|_| scoped()).collect());
        }
        Ok(TenantBatch {
            settings,
            backend,
            tenants,
            keys: TenantKeys::new(name, tenants),
        })
    }

    /// The requests to send, one per tenant with a valid key; their
    /// [`finish`](AcquireBatch::finish) gives the answers and the orphans to release.
    pub fn requests(&self) -> AcquireBatch<'_> {
        AcquireBatch::new(self.backend, self.keys.valid(), self.settings.options())
    }

    /// One answer per tenant, in the tenants' order: the lock it won, `None` when another
    /// node holds it, or its error (an invalid key, a failed or late request).
    pub fn answers(self, answers: Vec<BatchAnswer>) -> Vec<Result<Option<Won<'a>>, Error>> {
        let keepalive = Keepalive::from_options(self.settings.options());
        self.keys
            .merge(answers)
            .into_iter()
            .zip(self.tenants)
            .map(|(answer, tenant)| match answer? {
                BatchAnswer::Acquired(lease, sent_at) => Ok(Some(Won {
                    lease,
                    sent_at,
                    tenant,
                    keepalive,
                })),
                BatchAnswer::Held(_) => Ok(None),
                BatchAnswer::Failed(error) => Err(error),
            })
            .collect()
    }
}
