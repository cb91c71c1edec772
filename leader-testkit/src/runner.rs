//! How the checks drive futures: on plain threads or on an async runtime.

use std::future::Future;
use std::sync::{Arc, Barrier};

/// Drives a check's futures.
pub trait Runner {
    /// Runs `future` to completion on this runner.
    fn block_on<F: Future>(&self, future: F) -> F::Output;

    /// Runs `futures` at the same time (threads or spawned tasks) and returns their outputs
    /// in order. A panic in one of them propagates.
    fn race<T, F>(&self, futures: Vec<F>) -> Vec<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static;
}

/// One OS thread per raced future, released together by a barrier; for blocking backends.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadRunner;

impl Runner for ThreadRunner {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        futures::executor::block_on(future)
    }

    fn race<T, F>(&self, futures: Vec<F>) -> Vec<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let barrier = Arc::new(Barrier::new(futures.len()));
        let threads: Vec<_> = futures
            .into_iter()
            .map(|future| {
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    futures::executor::block_on(future)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    }
}

/// A tokio runtime, current-thread or multi-thread; raced futures are spawned tasks.
#[cfg(feature = "tokio")]
#[derive(Debug)]
pub struct TokioRunner(tokio::runtime::Runtime);

#[cfg(feature = "tokio")]
impl TokioRunner {
    /// A current-thread runtime.
    pub fn current_thread() -> Self {
        TokioRunner(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime"),
        )
    }

    /// A multi-thread runtime with two workers.
    pub fn multi_thread() -> Self {
        TokioRunner(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("tokio runtime"),
        )
    }
}

#[cfg(feature = "tokio")]
impl Runner for TokioRunner {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }

    fn race<T, F>(&self, futures: Vec<F>) -> Vec<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.0.block_on(async {
            let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
            let mut out = Vec::with_capacity(handles.len());
            for handle in handles {
                match handle.await {
                    Ok(value) => out.push(value),
                    Err(err) => std::panic::resume_unwind(err.into_panic()),
                }
            }
            out
        })
    }
}

/// The async-std runtime; raced futures are spawned tasks.
#[cfg(feature = "async-std")]
#[derive(Debug, Clone, Copy, Default)]
pub struct AsyncStdRunner;

#[cfg(feature = "async-std")]
impl Runner for AsyncStdRunner {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        async_std::task::block_on(future)
    }

    fn race<T, F>(&self, futures: Vec<F>) -> Vec<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        async_std::task::block_on(futures::future::join_all(
            futures.into_iter().map(async_std::task::spawn),
        ))
    }
}

/// smol; raced futures are spawned on smol's global executor.
#[cfg(feature = "smol")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SmolRunner;

#[cfg(feature = "smol")]
impl Runner for SmolRunner {
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }

    fn race<T, F>(&self, futures: Vec<F>) -> Vec<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        smol::block_on(futures::future::join_all(
            futures.into_iter().map(smol::spawn),
        ))
    }
}
