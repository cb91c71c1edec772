//! The read-only views the blocking and async shells give of what they hold, written once:
//! a held lease's token and context, and a campaign handle's watcher and callbacks. They
//! wait on nothing, so they are the same text in both shells and generated here (see
//! `shell_scope.rs` for why a macro).

/// Generates `fencing_token`, `context` and `is_lost` for `$held<B>` (over backends of
/// `$backend`), a type whose field `held` has `lease()` and `context()` (the shells'
/// held leases): lock guards and the tenant batch's acquired locks.
///
/// Not public API: for `leader-blocking` and `leader-async`.
#[doc(hidden)]
#[macro_export]
macro_rules! __held_view {
    ($held:ident, $backend:path $(,)?) => {
        impl<B: $backend + 'static> $held<B> {
            /// The fencing token of this acquisition.
            pub fn fencing_token(&self) -> u64 {
                self.held.lease().fencing_token
            }

            /// The lease's context: deadline, lost flag, lost signal.
            pub fn context(&self) -> &$crate::LeaseContext {
                self.held.context()
            }

            /// `true` once the lease was lost or ran out.
            pub fn is_lost(&self) -> bool {
                self.held.context().is_lost()
            }
        }
    };
}

/// Generates `Deref` to the [`LeadershipWatcher`](crate::LeadershipWatcher) and the
/// methods `watcher`, `on_event` and (hidden) `state` for a campaign handle `$handle`
/// with the fields `watcher: LeadershipWatcher` and `state: Arc<LeadershipState>`.
///
/// Not public API: for `leader-blocking` and `leader-async`.
#[doc(hidden)]
#[macro_export]
macro_rules! __leadership_handle_view {
    ($handle:ident $(,)?) => {
        impl ::std::ops::Deref for $handle {
            type Target = $crate::LeadershipWatcher;

            fn deref(&self) -> &$crate::LeadershipWatcher {
                &self.watcher
            }
        }

        impl $handle {
            /// A read-only, cloneable view of this campaign for the code doing the
            /// leader's work; dropping it does not stop the campaign (dropping the handle
            /// does).
            pub fn watcher(&self) -> $crate::LeadershipWatcher {
                self.watcher.clone()
            }

            /// Calls `callback` on every event from now on, on the campaign's loop (keep
            /// it short).
            pub fn on_event(&self, callback: $crate::EventCallback) {
                self.state.on_event(callback);
            }

            /// The shared state. Not public API: for the project's own test kit.
            #[doc(hidden)]
            pub fn state(&self) -> &::std::sync::Arc<$crate::__private::LeadershipState> {
                &self.state
            }
        }
    };
}
