//! The scope methods every elector shell has, written once: construction, options, name
//! prefix and tenant scoping, and the keys a name maps to.

/// The scope methods of an elector shell: `elector_scope_methods!(Elector, its_crate);`
/// inside the elector's `impl` block, whose backend type parameter is `B`, for an elector
/// that holds its [`Scope`](crate::engine::Scope) in a field named `scope` and has
/// `from_scope`. The docs' examples name the shell's own crate and type. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! elector_scope_methods {
    ($elector:ident, $krate:ident) => {
        /// An elector over `backend`.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) when `options` do not validate.
        pub fn new(backend: B, options: $crate::LeaderElectionOptions) -> Result<Self, $crate::Error> {
            Ok(Self::from_scope($crate::__private::Scope::new(backend, options)?))
        }

        /// An elector over a backend shared with other electors.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) when `options` do not validate.
        pub fn with_shared_backend(
            backend: ::std::sync::Arc<B>,
            options: $crate::LeaderElectionOptions,
        ) -> Result<Self, $crate::Error> {
            Ok(Self::from_scope($crate::__private::Scope::with_shared_backend(
                backend, options,
            )?))
        }

        /// The options this elector runs with.
        pub fn options(&self) -> &$crate::LeaderElectionOptions {
            self.scope.options()
        }

        /// The options and name prefix, as one value. Not public API (the type is internal).
        #[doc(hidden)]
        pub fn settings(&self) -> &$crate::__private::ElectorSettings {
            self.scope.settings()
        }

        /// The backend.
        pub fn backend(&self) -> &::std::sync::Arc<B> {
            self.scope.backend()
        }

        /// The prefix put in front of every lock name (set by tenant scoping), if any.
        pub fn name_prefix(&self) -> Option<&str> {
            self.scope.name_prefix()
        }

        /// A clone with other options: the same backend and the same name scope (tenant or
        /// prefix). The scheduler runs each job's lock this way, with its own wait and lease.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) when `options` do not validate.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        #[doc = concat!(" use ", stringify!($krate), "::", stringify!($elector), ";")]
        /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
        ///
        #[doc = concat!(" let elector = ", stringify!($elector), "::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;")]
        /// let acme = elector.for_tenant("acme")?;
        /// let patient = acme.with_options(LeaderElectionOptions::default().with_wait_time(Duration::from_secs(1)))?;
        /// assert_eq!(patient.lock_key("sync")?.as_str(), "tenant:acme:sync");
        /// assert_eq!(patient.options().wait_time(), Duration::from_secs(1));
        /// # Ok::<(), leader_core::Error>(())
        /// ```
        pub fn with_options(&self, options: $crate::LeaderElectionOptions) -> Result<Self, $crate::Error> {
            Ok(Self::from_scope(self.scope.with_options(options)?))
        }

        /// A clone whose lock names all start with `prefix` (an application's own namespace,
        /// such as `billing:`). For tenants use [`for_tenant`](Self::for_tenant): the `tenant:`
        /// namespace is reserved for it.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidName`](leader_core::Error::InvalidName) for an empty prefix, a forbidden character, whitespace at
        /// either end, or a prefix in the tenant namespace ([`LockName::check_prefix`](leader_core::LockName::check_prefix)).
        pub fn with_name_prefix(&self, prefix: impl Into<::std::sync::Arc<str>>) -> Result<Self, $crate::Error> {
            Ok(Self::from_scope(self.scope.with_name_prefix(prefix)?))
        }

        /// A clone scoped to `tenant`: every lock name it is given becomes
        /// `tenant:<id>:<name>` in the backend, so two tenants running the same job never
        /// contend. It shares the backend; its results and errors are the usual ones, and its
        /// `state` snapshots carry the name as the caller gave it. Scopes do not nest: scope
        /// the unscoped elector once per tenant (cheap: a few `Arc` clones).
        ///
        /// # Errors
        ///
        /// [`Error::InvalidTenant`](leader_core::Error::InvalidTenant) naming the problem with the id, or [`Error::AlreadyScoped`](leader_core::Error::AlreadyScoped).
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!(" use ", stringify!($krate), "::", stringify!($elector), ";")]
        /// use leader_core::{Error, InMemoryBackend, LeaderElectionOptions};
        ///
        #[doc = concat!(" let elector = ", stringify!($elector), "::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;")]
        /// let acme = elector.for_tenant("acme")?;
        /// assert_eq!(acme.lock_key("sync-invoices")?.as_str(), "tenant:acme:sync-invoices");
        /// assert!(matches!(elector.for_tenant("acme:eu"), Err(Error::InvalidTenant(_))));
        /// assert!(matches!(acme.for_tenant("globex"), Err(Error::AlreadyScoped { .. })));
        /// # Ok::<(), Error>(())
        /// ```
        pub fn for_tenant(&self, tenant: impl $crate::IntoTenantId) -> Result<Self, $crate::Error> {
            Ok(Self::from_scope(self.scope.for_tenant(tenant)?))
        }

        /// The tenant this elector is scoped to, if any.
        pub fn tenant(&self) -> Option<$crate::TenantId> {
            self.scope.tenant()
        }

        /// Where the lock `name` lives in the backend's store (a Redis key, a MongoDB document
        /// id), tenant prefix included: one call from a job name to what an operator looks up.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidName`](leader_core::Error::InvalidName) naming the problem.
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!(" use ", stringify!($krate), "::", stringify!($elector), ";")]
        /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
        ///
        #[doc = concat!(" let elector = ", stringify!($elector), "::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;")]
        /// // A Redis backend answers `leader:{tenant:acme:sync-invoices}` here.
        /// assert_eq!(elector.for_tenant("acme")?.storage_key("sync-invoices")?, "tenant:acme:sync-invoices");
        /// # Ok::<(), leader_core::Error>(())
        /// ```
        pub fn storage_key(&self, name: &str) -> Result<String, $crate::Error> {
            self.scope.storage_key(name)
        }

        /// The full lock key for `name`, prefix included.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidName`](leader_core::Error::InvalidName) naming the problem.
        pub fn lock_key(&self, name: &str) -> Result<$crate::LockName, $crate::Error> {
            self.scope.lock_key(name)
        }

        /// The full key of a lock that [`state`](Self::state),
        /// [`force_release`](Self::force_release) and [`storage_key`](Self::storage_key) take:
        /// a name as [`lock_key`](Self::lock_key) takes it, or one derived from it, a group's
        /// slot (`job#2`) or a ranked candidate's record (`job#rank:…`), so that an operator
        /// can look at or free what a listing shows.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidName`](leader_core::Error::InvalidName) naming the problem.
        pub fn observed_key(&self, name: &str) -> Result<$crate::LockName, $crate::Error> {
            self.scope.observed_key(name)
        }
    };
}
