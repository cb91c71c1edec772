//! [`TenantSource`]: where a poller gets its tenants, re-read every cycle.

use leader_core::BoxError;

/// The list of tenants a poller serves, asked for again at the start of every cycle, so
/// tenants can come and go without restarting anything.
///
/// Any `Fn() -> impl IntoIterator<Item = impl Into<String>>` is a source. Ids are validated
/// each cycle: an invalid one shows up in the cycle's report as an error for that tenant
/// and does not stop the others. Repeated ids are served once. A source that can fail
/// implements the trait itself, or wraps a closure in [`FallibleSource`]; a failure yields a
/// cycle report with [`source_error`](crate::CycleReport::source_error) set and no tenants.
///
/// The async poller calls the source on its task: keep it quick (serve a list that is
/// refreshed elsewhere, for instance behind an `RwLock`).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, RwLock};
/// use leader_tenant::TenantSource;
///
/// let fixed = || ["acme", "globex"];
/// assert_eq!(fixed.tenants()?, ["acme", "globex"]);
///
/// let live = Arc::new(RwLock::new(vec!["acme".to_owned()]));
/// let source = {
///     let live = Arc::clone(&live);
///     move || live.read().map(|l| l.clone()).unwrap_or_default()
/// };
/// live.write().unwrap().push("initech".into());
/// assert_eq!(source.tenants()?, ["acme", "initech"]);
/// # Ok::<(), leader_core::BoxError>(())
/// ```
pub trait TenantSource: Send + Sync {
    /// The tenant ids for this cycle.
    ///
    /// # Errors
    ///
    /// Whatever kept the source from listing the tenants.
    fn tenants(&self) -> Result<Vec<String>, BoxError>;
}

impl<F, I> TenantSource for F
where
    F: Fn() -> I + Send + Sync,
    I: IntoIterator,
    I::Item: Into<String>,
{
    fn tenants(&self) -> Result<Vec<String>, BoxError> {
        Ok(self().into_iter().map(Into::into).collect())
    }
}

/// A source from a closure that may fail: `FallibleSource(|| load_tenants())`.
///
/// # Examples
///
/// ```
/// use leader_tenant::{FallibleSource, TenantSource};
///
/// let source = FallibleSource(|| "acme,globex".parse::<String>().map(|s| {
///     s.split(',').map(str::to_owned).collect::<Vec<_>>()
/// }));
/// assert_eq!(source.tenants()?, ["acme", "globex"]);
/// # Ok::<(), leader_core::BoxError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FallibleSource<F>(pub F);

impl<F, I, E> TenantSource for FallibleSource<F>
where
    F: Fn() -> Result<I, E> + Send + Sync,
    I: IntoIterator,
    I::Item: Into<String>,
    E: Into<BoxError>,
{
    fn tenants(&self) -> Result<Vec<String>, BoxError> {
        Ok((self.0)()
            .map_err(Into::into)?
            .into_iter()
            .map(Into::into)
            .collect())
    }
}
