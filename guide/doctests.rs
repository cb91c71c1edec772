//! The user guide's code samples, run as doctests.
//!
//! The guide is an mdBook under `src/`; each chapter is included here as the docs of an
//! item that exists only when rustdoc collects doctests, so `cargo test -p leader-guide`
//! (and the workspace's `cargo test`) compiles and runs every ```` ```rust ```` block of
//! every chapter against the real crates. Blocks that need a server the reader runs are
//! `no_run` (compiled only) or start one of `leader_rig::fixtures` in hidden lines.
//! A new chapter is one line here and one in `src/SUMMARY.md`.

/// Runs the samples of one chapter (its path under `src/`).
macro_rules! chapter {
    ($item:ident, $path:literal) => {
        #[cfg(doctest)]
        #[doc = include_str!(concat!("src/", $path))]
        pub struct $item;
    };
}

chapter!(Introduction, "introduction.md");
chapter!(Concepts, "concepts.md");
chapter!(ChoosingAPrimitive, "choosing-a-primitive.md");
chapter!(Backends, "backends.md");
chapter!(CronJobs, "recipes/cron-jobs.md");
chapter!(NightlyBatch, "recipes/nightly-batch.md");
chapter!(TenantPoller, "recipes/tenant-poller.md");
chapter!(StreamConsumer, "recipes/stream-consumer.md");
chapter!(Kubernetes, "recipes/kubernetes.md");
chapter!(Shutdown, "recipes/shutdown.md");
chapter!(Fencing, "recipes/fencing.md");
chapter!(Operating, "operating.md");
chapter!(Migrating, "migrating.md");
chapter!(Faq, "faq.md");
chapter!(Performance, "performance.md");
chapter!(RecipesIndex, "recipes/index.md");
