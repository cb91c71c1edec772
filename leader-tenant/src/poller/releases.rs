//! [`Releases`]: the locks of a cycle's finished jobs, released together rather than one
//! round trip each.

use parking_lot::Mutex;

/// The locks of finished jobs waiting to be released, shared by a cycle's jobs and its
/// driver. The poller releases them together: before it tries the next batch of tenants,
/// whenever a batch's worth are waiting, and when the cycle ends.
///
/// The wait changes nothing that matters by default: a run's lock is kept for its minimum
/// lease (until the cycle's end) and the release only shortens a longer lease to it. With a
/// shorter minimum lease a finished tenant's lock stays taken a little longer, at most
/// until one of those moments.
#[derive(Debug)]
pub(crate) struct Releases<R> {
    waiting: Mutex<Vec<R>>,
    batch: usize,
}

impl<R> Releases<R> {
    /// Released together whenever `batch` are waiting.
    pub(crate) fn new(batch: usize) -> Self {
        Releases {
            waiting: Mutex::new(Vec::new()),
            batch: batch.max(1),
        }
    }

    /// Adds a finished job's lock: the locks to release now when a batch's worth wait.
    pub(crate) fn add(&self, finished: R) -> Option<Vec<R>> {
        let mut waiting = self.waiting.lock();
        waiting.push(finished);
        (waiting.len() >= self.batch).then(|| std::mem::take(&mut *waiting))
    }

    /// Every lock waiting now.
    pub(crate) fn take(&self) -> Vec<R> {
        std::mem::take(&mut *self.waiting.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_worth_is_handed_back_and_the_rest_on_take() {
        let releases = Releases::new(2);
        assert_eq!(releases.add(1), None);
        assert_eq!(releases.add(2), Some(vec![1, 2]));
        assert_eq!(releases.add(3), None);
        assert_eq!(releases.take(), vec![3]);
        assert!(releases.take().is_empty());
    }
}
