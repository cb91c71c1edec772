//! [`LockBackend`] for every [`Store`] whose runner runs its calls: each call planned, sent
//! on the calling thread, traced, and its answer made the SPI's.

use crate::error::Error;
use crate::kit::answers::{Trace, first_key, force_released, named, per_lock, released};
use crate::kit::call::Call;
use crate::kit::calls;
use crate::kit::runs::Runs;
use crate::kit::store::Store;
use crate::name::LockName;
use crate::spi::backend::LockBackend;
use crate::spi::listing::{ForceReleaseOutcome, ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome, ReleaseOutcome, SlotOutcome};
use crate::spi::record::{RecordWrite, RecordWriteOutcome, StoredRecord};
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal, SlotRequest};
use crate::spi::state::LeaderState;

/// Sends `call`, about the lock `key`, and traces it: its answer, the failure not yet named.
pub(super) fn run<S: Runs<C>, C: Call>(
    store: &S,
    key: &str,
    call: C,
) -> Result<C::Output, crate::kit::Failure> {
    let trace = Trace::start();
    let answer = store.run_blocking(call);
    trace.end::<C>(store.name(), key, &answer);
    answer
}

/// Sends a single call about the lock `key`: its answer, the failure named by the lock.
pub(super) fn single<S: Runs<C>, C: Call>(
    store: &S,
    key: &str,
    call: C,
) -> Result<C::Output, Error> {
    named(store.name(), key, run(store, key, call))
}

impl<S> LockBackend for S
where
    S: Store,
    for<'a> S: Runs<S::Acquire<'a>>
        + Runs<S::AcquireBatch<'a>>
        + Runs<S::Slot<'a>>
        + Runs<S::Extend<'a>>
        + Runs<S::ExtendBatch<'a>>
        + Runs<S::Release<'a>>
        + Runs<S::ReleaseBatch<'a>>
        + Runs<calls::State>
        + Runs<calls::List>
        + Runs<calls::ForceRelease>
        + Runs<calls::ReadRecord>
        + Runs<calls::WriteRecord>,
{
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        single(self, request.key.as_str(), self.plan_acquire(request))
    }

    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        match self.plan_acquire_batch(requests) {
            Some(call) => {
                let answers = run(self, first_key(requests.iter().map(|r| r.key)), call);
                per_lock(self.name(), requests.iter().map(|r| r.key), answers)
            }
            None => requests.iter().map(|r| self.try_acquire(*r)).collect(),
        }
    }

    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        if let Some(call) = self.plan_slot(request) {
            return single(self, request.group_name().as_str(), call);
        }
        let mut walk = request.walk();
        while let Some(request) = walk.next_request() {
            match self.try_acquire(request) {
                Ok(answer) => {
                    if let Some(done) = walk.answer(answer) {
                        return Ok(done);
                    }
                }
                Err(err) => walk.failed(err)?,
            }
        }
        walk.finish()
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        single(self, renewal.lease.key.as_str(), self.plan_extend(renewal))
    }

    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        match self.plan_extend_batch(renewals) {
            Some(call) => {
                let keys = renewals.iter().map(|r| &r.lease.key);
                let answers = run(self, first_key(keys.clone()), call);
                per_lock(self.name(), keys, answers)
            }
            None => renewals.iter().map(|r| self.extend(*r)).collect(),
        }
    }

    fn extend_batch_is_native(&self) -> bool {
        Store::extend_batch_is_native(self)
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let answer = single(self, release.lease.key.as_str(), self.plan_release(release))?;
        Ok(released(self, &release, answer))
    }

    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        match self.plan_release_batch(releases) {
            Some(call) => {
                let keys = releases.iter().map(|r| &r.lease.key);
                let answers = run(self, first_key(keys.clone()), call);
                let answers = per_lock(self.name(), keys, answers);
                releases
                    .iter()
                    .zip(answers)
                    .map(|(release, answer)| Ok(released(self, release, answer?)))
                    .collect()
            }
            None => releases.iter().map(|r| self.release(*r)).collect(),
        }
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        single(self, key.as_str(), calls::State::from(key))
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        single(self, &request.prefix, calls::List::from(request))
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        let outcome = single(self, key.as_str(), calls::ForceRelease::new(key, None))?;
        force_released(self, key, &outcome);
        Ok(outcome)
    }

    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        let outcome = single(
            self,
            key.as_str(),
            calls::ForceRelease::new(key, Some(fencing_token)),
        )?;
        force_released(self, key, &outcome);
        Ok(outcome)
    }

    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        single(self, key.as_str(), calls::ReadRecord::from(key))
    }

    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        single(self, write.key().as_str(), calls::WriteRecord::from(write))
    }
}
