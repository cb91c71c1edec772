//! [`ForTenant`]: `for_tenant(id)` on every elector.

use std::sync::Arc;

use leader_blocking::{LeaderElector, ThreadPoolLeaderElector};
use leader_core::LockBackend;

use crate::error::TenantError;
use crate::tenant_id::{IntoTenantId, TenantId};

/// Scopes an elector to one tenant: `elector.for_tenant("acme")?`.
///
/// The scoped elector is of the same kind and shares the backend (and, for the thread-pool
/// elector, the pool). Every lock name it is given becomes `tenant:<id>:<name>` in the
/// backend, so two tenants running the same job never contend; its results are the usual
/// [`LeaderRunResult`](leader_core::LeaderRunResult)s, and its `state` snapshots carry the
/// name as the caller gave it (the prefix stripped). The full name is checked against the
/// 255-byte limit when it is built, on every call.
///
/// Scopes do not nest: calling `for_tenant` on an elector that already has a name prefix
/// (from `for_tenant` or a manual `with_name_prefix`) is [`TenantError::AlreadyScoped`].
/// Scope the unscoped elector once per tenant instead; that is cheap (a few `Arc` clones
/// and one short string).
///
/// Implemented for [`LeaderElector`], [`ThreadPoolLeaderElector`] and, with a runtime
/// feature, `AsyncLeaderElector`.
///
/// # Errors
///
/// [`ForTenant::for_tenant`]: an invalid tenant id (a [`TenantError`] naming the problem),
/// or [`TenantError::AlreadyScoped`].
///
/// # Examples
///
/// ```
/// use leader_blocking::LeaderElector;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions};
/// use leader_tenant::{ForTenant, TenantError};
///
/// let elector = LeaderElector::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let acme = elector.for_tenant("acme")?;
/// assert_eq!(acme.lock_key("sync-invoices")?.as_str(), "tenant:acme:sync-invoices");
/// assert_eq!(acme.tenant().map(|t| t.to_string()).as_deref(), Some("acme"));
///
/// let ran = acme.run_if_leader("sync-invoices", || "synced")?;
/// assert_eq!(ran, Some("synced"));
///
/// // Scopes do not nest.
/// assert!(matches!(acme.for_tenant("globex"), Err(TenantError::AlreadyScoped { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ForTenant: Sized {
    /// A clone of this elector scoped to `tenant`.
    ///
    /// # Errors
    ///
    /// An invalid tenant id, or [`TenantError::AlreadyScoped`].
    fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, TenantError>;

    /// The tenant this elector is scoped to, if any.
    fn tenant(&self) -> Option<TenantId>;
}

/// The prefix for `tenant`, unless the elector already has one.
pub(crate) fn tenant_prefix(
    current: Option<&str>,
    tenant: impl IntoTenantId,
) -> Result<Arc<str>, TenantError> {
    let tenant = tenant.into_tenant_id()?;
    match current {
        Some(prefix) => Err(TenantError::AlreadyScoped {
            prefix: prefix.to_owned(),
        }),
        None => Ok(tenant.lock_prefix().into()),
    }
}

impl<B: LockBackend + 'static> ForTenant for LeaderElector<B> {
    fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, TenantError> {
        let prefix = tenant_prefix(self.name_prefix(), tenant)?;
        Ok(self.with_tenant_prefix(prefix))
    }

    fn tenant(&self) -> Option<TenantId> {
        self.name_prefix().and_then(TenantId::from_prefix)
    }
}

impl<B: LockBackend + 'static> ForTenant for ThreadPoolLeaderElector<B> {
    fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, TenantError> {
        Ok(self.with_elector(self.elector().for_tenant(tenant)?))
    }

    fn tenant(&self) -> Option<TenantId> {
        self.elector().tenant()
    }
}

#[cfg(any(feature = "tokio", feature = "smol", feature = "async-std"))]
impl<B: leader_core::AsyncLockBackend + 'static> ForTenant for leader_async::AsyncLeaderElector<B> {
    fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, TenantError> {
        let prefix = tenant_prefix(self.name_prefix(), tenant)?;
        Ok(self.with_tenant_prefix(prefix))
    }

    fn tenant(&self) -> Option<TenantId> {
        self.name_prefix().and_then(TenantId::from_prefix)
    }
}
