//! The naming and scoping methods of every elector, written once.
//!
//! Both electors (`leader_blocking::LeaderElector`, `leader_async::AsyncLeaderElector`)
//! hold a [`Scope`](crate::__private::Scope) and hand their naming and scoping methods to
//! it. Those methods are the same text on both but for the elector's name and the backend
//! trait, and none of them waits on the backend, so they are generated here from one
//! source rather than kept twice in step (as `redis` generates its sync and async command
//! methods). What differs between the electors — how they wait — stays in each crate.

/// Generates, for an elector struct `$elector<B>` with one field `scope: Scope<B>`:
/// `Clone`, `Debug`, crate-private `from_scope` and `scope`, and the public naming and scoping
/// methods (`new`, `with_shared_backend`, `options`, `backend`, `name_prefix`,
/// `with_name_prefix`, `for_tenant`, `tenant`, `storage_key`, `lock_key`,
/// `observed_key`), each a delegation to the scope, for backends of `$backend`. `$krate`
/// names the elector's crate in the examples; `for_tenant_example` adds lines to the
/// `for_tenant` example.
///
/// Not public API: for `leader-blocking` and `leader-async`.
#[doc(hidden)]
#[macro_export]
macro_rules! __elector_scope {
    (
        $elector:ident,
        $backend:path,
        $krate:literal,
        for_tenant_example: [$($for_tenant:literal),* $(,)?] $(,)?
    ) => {
        impl<B> ::std::clone::Clone for $elector<B> {
            fn clone(&self) -> Self {
                Self::from_scope(self.scope.clone())
            }
        }

        impl<B: ::std::fmt::Debug> ::std::fmt::Debug for $elector<B> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.scope.debug_as(::std::stringify!($elector), f)
            }
        }

        impl<B> $elector<B> {
            /// The elector over `scope`.
            pub(crate) fn from_scope(scope: $crate::__private::Scope<B>) -> Self {
                $elector { scope }
            }

            /// Its backend, options and name scope.
            pub(crate) fn scope(&self) -> &$crate::__private::Scope<B> {
                &self.scope
            }
        }

        impl<B: $backend + 'static> $elector<B> {
            /// An elector over `backend`.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) when `options`
            /// do not validate.
            pub fn new(
                backend: B,
                options: $crate::LeaderElectionOptions,
            ) -> ::std::result::Result<Self, $crate::Error> {
                ::std::result::Result::Ok(Self::from_scope($crate::__private::Scope::new(
                    backend, options,
                )?))
            }

            /// An elector over a backend shared with other electors.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) when `options`
            /// do not validate.
            pub fn with_shared_backend(
                backend: ::std::sync::Arc<B>,
                options: $crate::LeaderElectionOptions,
            ) -> ::std::result::Result<Self, $crate::Error> {
                ::std::result::Result::Ok(Self::from_scope(
                    $crate::__private::Scope::with_shared_backend(backend, options)?,
                ))
            }

            /// The options this elector runs with.
            pub fn options(&self) -> &$crate::LeaderElectionOptions {
                self.scope.options()
            }

            /// The options and name prefix, as one value. Not public API (the type is
            /// internal).
            #[doc(hidden)]
            pub fn settings(&self) -> &$crate::__private::ElectorSettings {
                self.scope.settings()
            }

            /// The backend.
            pub fn backend(&self) -> &::std::sync::Arc<B> {
                self.scope.backend()
            }

            /// The prefix put in front of every lock name (set by tenant scoping), if any.
            pub fn name_prefix(&self) -> ::std::option::Option<&str> {
                self.scope.name_prefix()
            }

            /// A clone whose lock names all start with `prefix` (an application's own
            /// namespace, such as `billing:`). For tenants use
            /// [`for_tenant`](Self::for_tenant): the `tenant:` namespace is reserved for it.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidName`](leader_core::Error::InvalidName) for an empty prefix,
            /// a forbidden character, whitespace at either end, or a prefix in the tenant
            /// namespace ([`LockName::check_prefix`](leader_core::LockName::check_prefix)).
            pub fn with_name_prefix(
                &self,
                prefix: impl ::std::convert::Into<::std::sync::Arc<str>>,
            ) -> ::std::result::Result<Self, $crate::Error> {
                ::std::result::Result::Ok(Self::from_scope(self.scope.with_name_prefix(prefix)?))
            }

            /// A clone scoped to `tenant`: every lock name it is given becomes
            /// `tenant:<id>:<name>` in the backend, so two tenants running the same job
            /// never contend. It shares the backend; its results and errors are the usual
            /// ones, and its `state` snapshots carry the name as the caller gave it. Scopes
            /// do not nest: scope the unscoped elector once per tenant (cheap: a few `Arc`
            /// clones).
            ///
            /// # Errors
            ///
            /// [`Error::InvalidTenant`](leader_core::Error::InvalidTenant) naming the
            /// problem with the id, or
            /// [`Error::AlreadyScoped`](leader_core::Error::AlreadyScoped).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = ::std::concat!("use ", $krate, "::", ::std::stringify!($elector), ";")]
            /// use leader_core::{Error, InMemoryBackend, LeaderElectionOptions};
            ///
            #[doc = ::std::concat!(
                "let elector = ", ::std::stringify!($elector),
                "::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;"
            )]
            /// let acme = elector.for_tenant("acme")?;
            /// assert_eq!(acme.lock_key("sync-invoices")?.as_str(), "tenant:acme:sync-invoices");
            $(#[doc = $for_tenant])*
            /// assert!(matches!(elector.for_tenant("acme:eu"), Err(Error::InvalidTenant(_))));
            /// assert!(matches!(acme.for_tenant("globex"), Err(Error::AlreadyScoped { .. })));
            /// # Ok::<(), Error>(())
            /// ```
            pub fn for_tenant(
                &self,
                tenant: impl $crate::IntoTenantId,
            ) -> ::std::result::Result<Self, $crate::Error> {
                ::std::result::Result::Ok(Self::from_scope(self.scope.for_tenant(tenant)?))
            }

            /// The tenant this elector is scoped to, if any.
            pub fn tenant(&self) -> ::std::option::Option<$crate::TenantId> {
                self.scope.tenant()
            }

            /// Where the lock `name` lives in the backend's store (a Redis key, a MongoDB
            /// document id), tenant prefix included: one call from a job name to what an
            /// operator looks up.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidName`](leader_core::Error::InvalidName) naming the problem.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = ::std::concat!("use ", $krate, "::", ::std::stringify!($elector), ";")]
            /// use leader_core::{InMemoryBackend, LeaderElectionOptions};
            ///
            #[doc = ::std::concat!(
                "let elector = ", ::std::stringify!($elector),
                "::new(InMemoryBackend::new(), LeaderElectionOptions::default())?;"
            )]
            /// // A Redis backend answers `leader:{tenant:acme:sync-invoices}` here.
            /// assert_eq!(elector.for_tenant("acme")?.storage_key("sync-invoices")?, "tenant:acme:sync-invoices");
            /// # Ok::<(), leader_core::Error>(())
            /// ```
            pub fn storage_key(&self, name: &str) -> ::std::result::Result<String, $crate::Error> {
                self.scope.storage_key(name)
            }

            /// The full lock key for `name`, prefix included.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidName`](leader_core::Error::InvalidName) naming the problem.
            pub fn lock_key(
                &self,
                name: &str,
            ) -> ::std::result::Result<$crate::LockName, $crate::Error> {
                self.scope.lock_key(name)
            }

            /// The full key of a lock that [`state`](Self::state),
            /// [`force_release`](Self::force_release) and
            /// [`storage_key`](Self::storage_key) take: a name as
            /// [`lock_key`](Self::lock_key) takes it, or one derived from it, a group's slot
            /// (`job#2`) or a ranked candidate's record (`job#rank:…`), so that an operator
            /// can look at or free what a listing shows.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidName`](leader_core::Error::InvalidName) naming the problem.
            pub fn observed_key(
                &self,
                name: &str,
            ) -> ::std::result::Result<$crate::LockName, $crate::Error> {
                self.scope.observed_key(name)
            }
        }
    };
}

/// Generates, for a group elector struct `$group<B>` with the fields
/// `elector: $elector<B>` and `slots: GroupSlots`: `Clone`, `$elector::group`, and the
/// group's naming and scoping methods (`new`, `slots`, `elector`, `for_tenant`,
/// `tenant`), for backends of `$backend`.
///
/// Not public API: for `leader-blocking` and `leader-async`.
#[doc(hidden)]
#[macro_export]
macro_rules! __group_scope {
    ($group:ident, $elector:ident, $backend:path $(,)?) => {
        impl<B> ::std::clone::Clone for $group<B> {
            fn clone(&self) -> Self {
                $group {
                    elector: self.elector.clone(),
                    slots: self.slots,
                }
            }
        }

        impl<B: $backend + 'static> $elector<B> {
            /// A group elector on this elector's backend and options: up to `slots` nodes
            /// lead each name at once.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) unless
            /// `1 ≤ slots ≤` [`GroupSlots::MAX`](leader_core::GroupSlots::MAX).
            pub fn group(&self, slots: u32) -> ::std::result::Result<$group<B>, $crate::Error> {
                ::std::result::Result::Ok($group {
                    elector: self.clone(),
                    slots: $crate::GroupSlots::new(slots)?,
                })
            }
        }

        impl<B: $backend + 'static> $group<B> {
            /// A group elector over `backend`: up to `slots` nodes lead each name at once.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidOptions`](leader_core::Error::InvalidOptions) when `options`
            /// do not validate, or unless `1 ≤ slots ≤`
            /// [`GroupSlots::MAX`](leader_core::GroupSlots::MAX).
            pub fn new(
                backend: B,
                options: $crate::LeaderElectionOptions,
                slots: u32,
            ) -> ::std::result::Result<Self, $crate::Error> {
                $elector::new(backend, options)?.group(slots)
            }

            /// How many nodes may lead a name at once.
            pub fn slots(&self) -> $crate::GroupSlots {
                self.slots
            }

            /// The single-lock elector underneath (same backend, options and scope).
            pub fn elector(&self) -> &$elector<B> {
                &self.elector
            }

            #[doc = ::std::concat!(
                                "A clone scoped to `tenant` (see [`", ::std::stringify!($elector),
                                "::for_tenant`]).",
                            )]
            ///
            /// # Errors
            ///
            /// [`Error::InvalidTenant`](leader_core::Error::InvalidTenant) or
            /// [`Error::AlreadyScoped`](leader_core::Error::AlreadyScoped).
            pub fn for_tenant(
                &self,
                tenant: impl $crate::IntoTenantId,
            ) -> ::std::result::Result<Self, $crate::Error> {
                ::std::result::Result::Ok($group {
                    elector: self.elector.for_tenant(tenant)?,
                    slots: self.slots,
                })
            }

            /// The tenant this elector is scoped to, if any.
            pub fn tenant(&self) -> ::std::option::Option<$crate::TenantId> {
                self.elector.tenant()
            }
        }
    };
}
