//! [`ElectorSettings`]: what every elector knows besides its backend.

use std::sync::Arc;

use crate::config::options::LeaderElectionOptions;
use crate::error::Error;
use crate::name::LockName;
use crate::spi::listing::{ListPage, ListRequest};
use crate::tenant::{IntoTenantId, TenantId};

/// Validated options plus the lock-name prefix (tenant scoping) shared by every elector.
///
/// # Examples
///
/// ```
/// use leader_core::__private::ElectorSettings;
/// use leader_core::LeaderElectionOptions;
///
/// let settings = ElectorSettings::new(LeaderElectionOptions::default())?;
/// let scoped = settings.with_name_prefix("billing:")?;
/// assert_eq!(scoped.lock_key("sync")?.as_str(), "billing:sync");
/// assert!(settings.with_name_prefix("tenant:acme:").is_err()); // for_tenant's namespace
/// assert!(settings.lock_key("tenant:acme:sync").is_err());
/// # Ok::<(), leader_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ElectorSettings {
    options: Arc<LeaderElectionOptions>,
    name_prefix: Option<Arc<str>>,
}

impl ElectorSettings {
    /// Validates `options`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] naming the bad value.
    pub fn new(options: LeaderElectionOptions) -> Result<Self, Error> {
        options.validate()?;
        Ok(ElectorSettings {
            options: Arc::new(options),
            name_prefix: None,
        })
    }

    /// The options.
    pub fn options(&self) -> &LeaderElectionOptions {
        &self.options
    }

    /// The prefix put in front of every lock name, if any.
    pub fn name_prefix(&self) -> Option<&str> {
        self.name_prefix.as_deref()
    }

    /// The same name prefix with other options.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate.
    pub fn with_options(&self, options: LeaderElectionOptions) -> Result<Self, Error> {
        options.validate()?;
        Ok(ElectorSettings {
            options: Arc::new(options),
            name_prefix: self.name_prefix.clone(),
        })
    }

    /// The same settings with every lock name prefixed by `prefix`, a prefix chosen by hand
    /// (see [`LockName::check_prefix`]: never one in the tenant namespace).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem with `prefix`.
    pub fn with_name_prefix(&self, prefix: impl Into<Arc<str>>) -> Result<Self, Error> {
        let prefix = prefix.into();
        LockName::check_prefix(&prefix)?;
        Ok(self.with_tenant_prefix(prefix))
    }

    /// The same settings scoped to `tenant`: every lock name becomes `tenant:<id>:<name>`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTenant`] for an invalid id, [`Error::AlreadyScoped`] when these
    /// settings already have a prefix (scopes do not nest).
    pub fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, Error> {
        let tenant = tenant.into_tenant_id()?;
        if let Some(prefix) = &self.name_prefix {
            return Err(Error::AlreadyScoped {
                prefix: prefix.to_string(),
            });
        }
        Ok(self.with_tenant_prefix(tenant.lock_prefix()))
    }

    /// The tenant these settings are scoped to, if any.
    pub fn tenant(&self) -> Option<TenantId> {
        self.name_prefix.as_deref().and_then(TenantId::from_prefix)
    }

    fn with_tenant_prefix(&self, prefix: impl Into<Arc<str>>) -> Self {
        ElectorSettings {
            options: Arc::clone(&self.options),
            name_prefix: Some(prefix.into()),
        }
    }

    /// The full lock key for `name`, prefix included. Without a prefix, `name` must not be
    /// in the tenant namespace ([`LockName::unscoped`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem.
    pub fn lock_key(&self, name: &str) -> Result<LockName, Error> {
        Ok(match &self.name_prefix {
            Some(prefix) => LockName::prefixed(prefix, name)?,
            None => LockName::unscoped(name)?,
        })
    }

    /// The full key of a lock an operator may look at or free: a caller's name (as
    /// [`lock_key`](Self::lock_key)), or a name derived from one, a group's slot
    /// (`job#2`) or a ranked candidate's record (`job#rank:…`; see [`LockName::derive`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem.
    pub fn observed_key(&self, name: &str) -> Result<LockName, Error> {
        Ok(match name.split_once(LockName::DERIVED_SEPARATOR) {
            Some((base, suffix)) => self.lock_key(base)?.derive(suffix)?,
            None => self.lock_key(name)?,
        })
    }

    /// `request` with this scope's prefix in front of its own.
    pub fn scoped_list(&self, request: ListRequest) -> ListRequest {
        match &self.name_prefix {
            Some(scope) => {
                let prefix = format!("{scope}{}", request.prefix);
                request.with_prefix(prefix)
            }
            None => request,
        }
    }

    /// `page` with this scope's prefix taken off every lock name, as `state` reports them.
    pub fn unscoped_page(&self, mut page: ListPage) -> ListPage {
        if let Some(scope) = &self.name_prefix {
            page.locks = std::mem::take(&mut page.locks)
                .into_iter()
                .map(|state| {
                    let name = state.lock_name();
                    let name = name.strip_prefix(&**scope).unwrap_or(name).to_owned();
                    state.with_lock_name(name)
                })
                .collect();
        }
        page
    }
}
