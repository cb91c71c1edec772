//! [`Runs`]: a backend's runner, which sends a call and waits for its answer.

use std::future::Future;

use crate::kit::call::{Call, Failure};
use crate::spi::backend::Backend;

/// How a backend sends the call `C` and waits for its answer: on the calling thread, or
/// as a future any executor can await. The two differ only in how they wait; what is sent
/// is the call's ([`Call`]).
///
/// Implement it once per call type, or once for every call type of yours
/// (`impl<C: MyCall> Runs<C> for MyBackend`). The kit never calls a runner for an
/// [`Unsupported`](crate::kit::Unsupported) call, which cannot exist.
pub trait Runs<C: Call>: Backend {
    /// Sends `call` and blocks the calling thread until its answer, or its failure.
    ///
    /// # Errors
    ///
    /// The call's [`Failure`].
    fn run_blocking(&self, call: C) -> Result<C::Output, Failure>;

    /// Sends `call`; the future resolves to its answer, or its failure. Dropping the future
    /// stops waiting; whether the call still reaches the store is the backend's to document.
    fn run_async(&self, call: C) -> impl Future<Output = Result<C::Output, Failure>> + Send;
}
