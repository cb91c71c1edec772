//! [`TenantJob`] and [`AsyncTenantJob`]: what a poller runs for each tenant.

use std::fmt::Debug;
use std::future::Future;

use crate::tenant_id::TenantId;

/// A blocking job run for one tenant, under that tenant's lock, on a pool worker.
///
/// Any `Fn(TenantId) -> Result<T, E> + Send + Sync + 'static` is one. Its error and its
/// panics are caught and reported for that tenant only.
///
/// # Examples
///
/// ```
/// use leader_tenant::{TenantId, TenantJob};
///
/// let job = |tenant: TenantId| -> Result<usize, String> { Ok(tenant.as_str().len()) };
/// assert_eq!(job.run(TenantId::new("acme")?), Ok(4));
/// # Ok::<(), leader_tenant::TenantError>(())
/// ```
pub trait TenantJob: Send + Sync + 'static {
    /// What a successful run returns.
    type Output: Send + 'static;
    /// What a failed run returns.
    type Error: Debug + Send + 'static;

    /// Runs the job for `tenant`.
    ///
    /// # Errors
    ///
    /// The job's own failure; it is reported for this tenant only.
    fn run(&self, tenant: TenantId) -> Result<Self::Output, Self::Error>;
}

impl<F, T, E> TenantJob for F
where
    F: Fn(TenantId) -> Result<T, E> + Send + Sync + 'static,
    T: Send + 'static,
    E: Debug + Send + 'static,
{
    type Output = T;
    type Error = E;

    fn run(&self, tenant: TenantId) -> Result<T, E> {
        self(tenant)
    }
}

/// An async job run for one tenant, under that tenant's lock.
///
/// Any `Fn(TenantId) -> impl Future<Output = Result<T, E>> + Send` that is `Send + Sync` is
/// one. Its error and its panics are caught and reported for that tenant only.
///
/// # Examples
///
/// ```
/// use leader_tenant::{AsyncTenantJob, TenantId};
///
/// let job = |tenant: TenantId| async move { Ok::<_, String>(tenant.as_str().len()) };
/// let ran = futures_lite::future::block_on(job.run(TenantId::new("acme")?));
/// assert_eq!(ran, Ok(4));
/// # Ok::<(), leader_tenant::TenantError>(())
/// ```
pub trait AsyncTenantJob: Send + Sync {
    /// What a successful run returns.
    type Output: Send;
    /// What a failed run returns.
    type Error: Debug + Send;

    /// Runs the job for `tenant`.
    fn run(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

impl<F, Fut, T, E> AsyncTenantJob for F
where
    F: Fn(TenantId) -> Fut + Send + Sync,
    Fut: Future<Output = Result<T, E>> + Send,
    T: Send,
    E: Debug + Send,
{
    type Output = T;
    type Error = E;

    fn run(&self, tenant: TenantId) -> impl Future<Output = Result<T, E>> + Send {
        self(tenant)
    }
}
