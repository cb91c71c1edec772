//! [`contract_tests!`](crate::contract_tests): one `#[test]` per check.

/// Expands to modules with one `#[test]` per contract check.
///
/// The runtime matrix, one invocation per harness:
/// - `contract_tests!(every_runtime, harness_option)`: the blocking API on plain threads
///   (module `blocking_threads`) and the async API on every runtime (modules
///   `async_tokio_current_thread`, `async_tokio_multi_thread`, `async_async_std`,
///   `async_smol`);
/// - `contract_tests!(every_async_runtime, harness_option)`: the four async modules only;
/// - `contract_tests!(every_runtime, harness_option, behind_features)`: as
///   `every_runtime`, each async module compiled only with the invoking crate's feature
///   of the runtime's name (`tokio`, `async-std`, `smol`), for a backend whose async API
///   is behind such features.
///
/// The runtime matrix needs the testkit's `tokio`, `async-std` and `smol` features.
///
/// One module on one runtime: `contract_tests!(module, blocking | async, harness_option,
/// runner)`:
/// - `blocking` runs the checks on the harness's blocking API (through
///   [`Blocking`](crate::Blocking)), `async` on its async API;
/// - `runner` is an expression giving a [`Runner`](crate::Runner).
///
/// In every form, `harness_option` is an expression giving `Option<impl Harness>`,
/// evaluated once per test; `None` skips (give `None` only when the server is missing and
/// servers are not required, so that CI never skips).
///
/// ```
/// // tests/it/contract.rs of a backend crate, with its own harness in place of this one
/// use leader_testkit::MemoryHarness;
///
/// # #[cfg(all(feature = "tokio", feature = "async-std", feature = "smol"))]
/// leader_testkit::contract_tests!(every_runtime, Some(MemoryHarness::new()));
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! contract_tests {
    (@suite $suite:ident; every_runtime, $harness:expr, behind_features $(,)?) => {
        $crate::contract_tests!(@suite $suite; blocking_threads, blocking, $harness, $crate::ThreadRunner);
        $crate::contract_tests!(@async_runtimes $suite, $harness;
            [cfg(feature = "tokio")] [cfg(feature = "async-std")] [cfg(feature = "smol")]);
    };
    (@suite $suite:ident; every_runtime, $harness:expr $(,)?) => {
        $crate::contract_tests!(@suite $suite; blocking_threads, blocking, $harness, $crate::ThreadRunner);
        $crate::contract_tests!(@suite $suite; every_async_runtime, $harness);
    };
    (@suite $suite:ident; every_async_runtime, $harness:expr $(,)?) => {
        $crate::contract_tests!(@async_runtimes $suite, $harness; [cfg(all())] [cfg(all())] [cfg(all())]);
    };
    (@async_runtimes $suite:ident, $harness:expr; [$($tokio:tt)*] [$($async_std:tt)*] [$($smol:tt)*]) => {
        #[$($tokio)*]
        $crate::contract_tests!(
            @suite $suite;
            async_tokio_current_thread,
            async,
            $harness,
            $crate::TokioRunner::current_thread()
        );
        #[$($tokio)*]
        $crate::contract_tests!(
            @suite $suite;
            async_tokio_multi_thread,
            async,
            $harness,
            $crate::TokioRunner::multi_thread()
        );
        #[$($async_std)*]
        $crate::contract_tests!(@suite $suite; async_async_std, async, $harness, $crate::AsyncStdRunner);
        #[$($smol)*]
        $crate::contract_tests!(@suite $suite; async_smol, async, $harness, $crate::SmolRunner);
    };
    (@suite $suite:ident; $module:ident, blocking, $harness:expr, $runner:expr) => {
        $crate::contract_tests!(@expand $suite, $module, ($harness).map($crate::Blocking), $runner);
    };
    (@suite $suite:ident; $module:ident, async, $harness:expr, $runner:expr) => {
        $crate::contract_tests!(@expand $suite, $module, $harness, $runner);
    };
    (@expand $suite:ident, $module:ident, $harness:expr, $runner:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::contract_tests!(@checks $suite, $harness, $runner);
        }
    };
    (@checks lock, $harness:expr, $runner:expr) => {
        $crate::contract_tests!(@tests $harness, $runner;
            acquire_free_lock,
            second_owner_sees_the_holder,
            same_owner_reacquire_keeps_the_token,
            acquire_after_expiry_gets_a_larger_token,
            extend_by_owner_moves_expiry,
            extend_by_non_owner_or_after_expiry_is_not_held,
            extend_batch_renews_each_lease_as_extend_would,
            try_acquire_batch_answers_each_request_as_try_acquire_would,
            release_batch_answers_each_release_as_release_would,
            release_by_owner_frees,
            release_by_non_owner_changes_nothing,
            min_lease_keeps_the_lock_without_blocking,
            min_lease_release_is_final,
            min_lease_already_passed_frees_at_once,
            tokens_strictly_increase,
            state_reports_holder_and_hides_expired,
            racing_acquire_has_one_winner,
            long_and_unicode_names_work,
            use_db_time_takes_the_backend_clock,
            list_pages_through_held_locks_under_a_prefix,
            force_release_frees_whoever_holds,
            list_of_a_names_derived_locks_holds_only_the_live_ones,
            force_release_if_frees_only_the_holder_seen,
            group_slots_are_all_usable_and_never_more,
            group_release_frees_exactly_one_slot,
            group_slots_expire_and_tokens_grow_per_slot,
            racing_group_attempts_have_n_winners,
            unrepresentable_leases_are_refused_on_acquire,
            unrepresentable_leases_are_refused_on_extend,
            list_refuses_cursors_it_did_not_make,
            records_are_written_by_compare_and_set,
            racing_record_writes_have_one_winner,
            records_live_apart_from_locks,
        );
    };
    (@checks shared, $harness:expr, $runner:expr) => {
        $crate::contract_tests!(@tests $harness, $runner;
            shared_readers_share_and_a_writer_waits_with_new_readers_held_out,
            shared_tokens_order_writers_after_readers_and_readers_after_writers,
            shared_crashed_readers_and_writers_run_out,
            shared_a_dead_writers_intent_lapses,
            shared_extend_and_release_act_for_the_owner_in_its_role,
            shared_min_lease_keeps_the_hold_without_blocking,
            shared_state_shows_the_holders_and_hides_expired_ones,
            shared_racing_writers_have_one_winner_and_readers_all_get_in,
            shared_readers_beyond_the_limit_are_held,
            shared_locks_live_apart_from_exclusive_locks,
            shared_unrepresentable_leases_are_refused,
            shared_answers_follow_the_record_rules,
        );
    };
    (@tests $harness:expr, $runner:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                if let Some(harness) = $harness {
                    $crate::checks::$check(&harness, &$runner);
                }
            }
        )*
    };
    ($($form:tt)*) => {
        $crate::contract_tests!(@suite lock; $($form)*);
    };
}

/// Expands to modules with one `#[test]` per contract check of read/write locks
/// ([`SharedLockBackend`](leader_core::SharedLockBackend)): the same forms and runtime
/// matrix as [`contract_tests!`](crate::contract_tests), for a harness whose backend has
/// read/write locks.
///
/// ```
/// use leader_testkit::MemoryHarness;
///
/// # #[cfg(all(feature = "tokio", feature = "async-std", feature = "smol"))]
/// leader_testkit::shared_contract_tests!(every_runtime, Some(MemoryHarness::new()));
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! shared_contract_tests {
    ($($form:tt)*) => {
        $crate::contract_tests!(@suite shared; $($form)*);
    };
}

/// Expands each named test body `fn body<R: Runner>(runner: &R)` into a module with one
/// `#[test]` per runtime: tokio current-thread, tokio multi-thread, async-std and smol.
/// Needs the testkit's `tokio`, `async-std` and `smol` features.
#[cfg(all(feature = "tokio", feature = "async-std", feature = "smol"))]
#[macro_export]
macro_rules! on_every_runtime {
    ($($body:ident),* $(,)?) => {
        $(
            mod $body {
                #[test]
                fn tokio_current_thread() {
                    super::$body(&$crate::TokioRunner::current_thread());
                }
                #[test]
                fn tokio_multi_thread() {
                    super::$body(&$crate::TokioRunner::multi_thread());
                }
                #[test]
                fn async_std() {
                    super::$body(&$crate::AsyncStdRunner);
                }
                #[test]
                fn smol() {
                    super::$body(&$crate::SmolRunner);
                }
            }
        )*
    };
}
