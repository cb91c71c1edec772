//! [`TenantJob`] and [`AsyncTenantJob`]: what a poller runs for each tenant.

use std::fmt::Debug;
use std::future::Future;

use leader_core::LeaseContext;

use leader_core::TenantId;

/// A blocking job run for one tenant, under that tenant's lock, on a pool worker.
///
/// Any `Fn(TenantId, &LeaseContext) -> Result<T, E> + Send + Sync + 'static` is one. Its
/// error and its panics are caught and reported for that tenant only.
///
/// The [`LeaseContext`] is the lease the job runs under. Pass its
/// [`fencing_token`](LeaseContext::fencing_token) with every write the job makes for the
/// tenant, so the store can refuse a paused instance whose lease already ran out; a long
/// job checks [`is_lost`](LeaseContext::is_lost) (or [`check`](LeaseContext::check))
/// between steps.
///
/// # Examples
///
/// ```
/// use leader_core::LeaseContext;
/// use leader_tenant::{TenantId, TenantJob};
///
/// let job = |tenant: TenantId, lease: &LeaseContext| -> Result<String, String> {
///     lease.check().map_err(|e| e.to_string())?;
///     Ok(format!("invoices of {tenant} written under token {}", lease.fencing_token()))
/// };
/// fn accepts(_job: impl TenantJob) {}
/// accepts(job);
/// ```
pub trait TenantJob: Send + Sync + 'static {
    /// What a successful run returns.
    type Output: Send + 'static;
    /// What a failed run returns.
    type Error: Debug + Send + 'static;

    /// Runs the job for `tenant`, under `lease`.
    ///
    /// # Errors
    ///
    /// The job's own failure; it is reported for this tenant only.
    fn run(&self, tenant: TenantId, lease: &LeaseContext) -> Result<Self::Output, Self::Error>;
}

impl<F, T, E> TenantJob for F
where
    F: Fn(TenantId, &LeaseContext) -> Result<T, E> + Send + Sync + 'static,
    T: Send + 'static,
    E: Debug + Send + 'static,
{
    type Output = T;
    type Error = E;

    fn run(&self, tenant: TenantId, lease: &LeaseContext) -> Result<T, E> {
        self(tenant, lease)
    }
}

/// An async job run for one tenant, under that tenant's lock.
///
/// Any `Fn(TenantId, LeaseContext) -> impl Future<Output = Result<T, E>> + Send` that is
/// `Send + Sync` is one. Its error and its panics are caught and reported for that tenant
/// only.
///
/// The [`LeaseContext`] is the lease the job runs under, as for [`TenantJob`]: fence the
/// job's writes with its [`fencing_token`](LeaseContext::fencing_token), and select on
/// [`lost`](LeaseContext::lost) to stop when the lease is gone.
///
/// # Examples
///
/// ```
/// use leader_core::LeaseContext;
/// use leader_tenant::{AsyncTenantJob, TenantId};
///
/// let job = |tenant: TenantId, lease: LeaseContext| async move {
///     lease.check().map_err(|e| e.to_string())?;
///     Ok::<_, String>(format!("{tenant} under token {}", lease.fencing_token()))
/// };
/// fn accepts(_job: impl AsyncTenantJob) {}
/// accepts(job);
/// ```
pub trait AsyncTenantJob: Send + Sync {
    /// What a successful run returns.
    type Output: Send;
    /// What a failed run returns.
    type Error: Debug + Send;

    /// Runs the job for `tenant`, under `lease`.
    fn run(
        &self,
        tenant: TenantId,
        lease: LeaseContext,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

impl<F, Fut, T, E> AsyncTenantJob for F
where
    F: Fn(TenantId, LeaseContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<T, E>> + Send,
    T: Send,
    E: Debug + Send,
{
    type Output = T;
    type Error = E;

    fn run(
        &self,
        tenant: TenantId,
        lease: LeaseContext,
    ) -> impl Future<Output = Result<T, E>> + Send {
        self(tenant, lease)
    }
}
