//! [`OnDrop`]: what must still happen when a future is dropped half-way.

/// Runs its closure when dropped, unless [`disarm`](Self::disarm)ed first.
///
/// The async paths arm one before an await whose future may be dropped — cancelled by its
/// caller, or dropped by a runtime that shuts down — for what must happen anyway:
/// releasing a lease, or the owner token of an acquire request that is on its way.
pub(crate) struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    pub(crate) fn new(on_drop: F) -> Self {
        OnDrop(Some(on_drop))
    }

    /// The work is done another way: nothing to run on drop.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(on_drop) = self.0.take() {
            on_drop();
        }
    }
}
