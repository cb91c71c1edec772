//! [`PerBackend`]: what the blocking electors keep once per backend value (a renewal
//! driver, the threads that release orphans), found by the address of the backend's `Arc`.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;

/// Values kept per backend value, each alive only while something holds it: electors that
/// share a backend (`with_shared_backend`, clones) share its value, whatever their options.
pub(crate) struct PerBackend<T: ?Sized>(Mutex<Vec<(usize, Weak<T>)>>);

impl<T: ?Sized> PerBackend<T> {
    pub(crate) const fn new() -> Self {
        PerBackend(Mutex::new(Vec::new()))
    }

    /// The live value of `backend`'s value that `pick` takes, or else the one `make`
    /// gives (with what to keep of it), kept from now on.
    pub(crate) fn find_or_make<B, U>(
        &self,
        backend: &Arc<B>,
        pick: impl Fn(Arc<T>) -> Option<U>,
        make: impl FnOnce() -> (U, Weak<T>),
    ) -> U {
        let address = Arc::as_ptr(backend) as usize;
        let mut all = self.0.lock();
        all.retain(|(_, kept)| kept.strong_count() > 0);
        let known = all
            .iter()
            .filter(|(at, _)| *at == address)
            .find_map(|(_, kept)| pick(kept.upgrade()?));
        known.unwrap_or_else(|| {
            let (made, kept) = make();
            all.push((address, kept));
            made
        })
    }

    /// Every value still alive.
    pub(crate) fn live(&self) -> Vec<Arc<T>> {
        self.0
            .lock()
            .iter()
            .filter_map(|(_, kept)| kept.upgrade())
            .collect()
    }
}
