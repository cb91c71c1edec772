//! [`Scope`]: what an elector is besides how it waits: its backend, options and name scope.

use std::fmt;
use std::sync::Arc;

use crate::config::campaign::CampaignConfig;
use crate::config::options::LeaderElectionOptions;
use crate::engine::campaign::CampaignRun;
use crate::engine::settings::ElectorSettings;
use crate::error::Error;
use crate::leadership::event::EventCallback;
use crate::name::LockName;
use crate::spi::backend::Backend;
use crate::spi::group::GroupSlots;
use crate::spi::listing::{ListPage, ListRequest};
use crate::tenant::{IntoTenantId, TenantId};

/// The naming and scoping half of every elector, blocking or async: the shared backend,
/// the validated options, and the lock-name prefix (an application's namespace or a
/// tenant's), with the key derivation an elector's public methods delegate to. An elector
/// is a `Scope` plus the way it waits for its backend.
///
/// Cloning is cheap (two `Arc`s) and needs no `B: Clone`.
///
/// # Examples
///
/// ```
/// use leader_core::__private::Scope;
/// use leader_core::{InMemoryBackend, LeaderElectionOptions};
///
/// let scope = Scope::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;
/// let acme = scope.for_tenant("acme")?;
/// assert_eq!(acme.lock_key("sync")?.as_str(), "tenant:acme:sync");
/// assert_eq!(acme.storage_key("sync#2")?, "tenant:acme:sync#2");
/// assert_eq!(acme.tenant().map(|t| t.to_string()).as_deref(), Some("acme"));
/// assert!(acme.for_tenant("globex").is_err()); // scopes do not nest
/// # Ok::<(), leader_core::Error>(())
/// ```
pub struct Scope<B> {
    backend: Arc<B>,
    settings: ElectorSettings,
}

impl<B> Clone for Scope<B> {
    fn clone(&self) -> Self {
        Scope {
            backend: Arc::clone(&self.backend),
            settings: self.settings.clone(),
        }
    }
}

impl<B: fmt::Debug> fmt::Debug for Scope<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.debug_as("Scope", f)
    }
}

impl<B> Scope<B> {
    /// A scope over `backend`, with no prefix.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate.
    pub fn new(backend: B, options: LeaderElectionOptions) -> Result<Self, Error> {
        Scope::with_shared_backend(Arc::new(backend), options)
    }

    /// A scope over a backend shared with other electors.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate.
    pub fn with_shared_backend(
        backend: Arc<B>,
        options: LeaderElectionOptions,
    ) -> Result<Self, Error> {
        Ok(Scope {
            backend,
            settings: ElectorSettings::new(options)?,
        })
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<B> {
        &self.backend
    }

    /// The options and name prefix, as one value.
    pub fn settings(&self) -> &ElectorSettings {
        &self.settings
    }

    /// The options.
    pub fn options(&self) -> &LeaderElectionOptions {
        self.settings.options()
    }

    /// The prefix put in front of every lock name, if any.
    pub fn name_prefix(&self) -> Option<&str> {
        self.settings.name_prefix()
    }

    /// The same backend and name scope with other options.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] when `options` do not validate.
    pub fn with_options(&self, options: LeaderElectionOptions) -> Result<Self, Error> {
        Ok(self.with_settings(self.settings.with_options(options)?))
    }

    /// The same scope with every lock name prefixed by `prefix`
    /// (see [`ElectorSettings::with_name_prefix`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem with `prefix`.
    pub fn with_name_prefix(&self, prefix: impl Into<Arc<str>>) -> Result<Self, Error> {
        Ok(self.with_settings(self.settings.with_name_prefix(prefix)?))
    }

    /// The same scope for `tenant` (see [`ElectorSettings::for_tenant`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTenant`] or [`Error::AlreadyScoped`].
    pub fn for_tenant(&self, tenant: impl IntoTenantId) -> Result<Self, Error> {
        Ok(self.with_settings(self.settings.for_tenant(tenant)?))
    }

    /// The tenant this scope is for, if any.
    pub fn tenant(&self) -> Option<TenantId> {
        self.settings.tenant()
    }

    /// The full lock key for `name`, prefix included.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem.
    pub fn lock_key(&self, name: &str) -> Result<LockName, Error> {
        self.settings.lock_key(name)
    }

    /// The full key of a lock an operator may look at or free, derived names included
    /// (see [`ElectorSettings::observed_key`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem.
    pub fn observed_key(&self, name: &str) -> Result<LockName, Error> {
        self.settings.observed_key(name)
    }

    /// `request` with this scope's prefix in front of its own.
    pub fn scoped_list(&self, request: ListRequest) -> ListRequest {
        self.settings.scoped_list(request)
    }

    /// `page` with this scope's prefix taken off every lock name.
    pub fn unscoped_page(&self, page: ListPage) -> ListPage {
        self.settings.unscoped_page(page)
    }

    /// Writes this scope as the struct `name` with its `backend` and `settings` fields, as
    /// the electors' `Debug` always has.
    ///
    /// # Errors
    ///
    /// The formatter's.
    pub fn debug_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result
    where
        B: fmt::Debug,
    {
        f.debug_struct(name)
            .field("backend", &self.backend)
            .field("settings", &self.settings)
            .finish()
    }

    fn with_settings(&self, settings: ElectorSettings) -> Self {
        Scope {
            backend: Arc::clone(&self.backend),
            settings,
        }
    }
}

impl<B: Backend> Scope<B> {
    /// A campaign for one slot of the group `name` (with [`GroupSlots::ONE`], for the lock
    /// `name` itself) in this scope, its loop yet to start.
    ///
    /// # Errors
    ///
    /// An invalid name or config ([`CampaignRun::for_group`]).
    pub fn campaign(
        &self,
        slots: GroupSlots,
        name: &str,
        config: CampaignConfig,
        callbacks: Vec<EventCallback>,
    ) -> Result<CampaignRun, Error> {
        let backend = self.backend.name();
        CampaignRun::for_group(&self.settings, name, slots, config, callbacks, backend)
    }

    /// Where the lock `name` (derived names included) lives in the backend's store.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] naming the problem.
    pub fn storage_key(&self, name: &str) -> Result<String, Error> {
        Ok(self.backend.storage_key(&self.observed_key(name)?))
    }
}
