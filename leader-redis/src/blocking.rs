//! [`LockBackend`] for [`RedisBackend`]: each call runs one script on a pooled connection.

use std::time::SystemTime;

use leader_core::{
    AcquireOutcome, AcquireRequest, Error, ExtendOutcome, ForceReleaseOutcome, LeaderState,
    ListPage, ListRequest, LockBackend, LockName, RecordWrite, RecordWriteOutcome, ReleaseOutcome,
    ReleaseRequest, Renewal, SlotOutcome, SlotRequest, StoredRecord,
};

use crate::backend::RedisBackend;
use crate::operator::ForceRelease;
use crate::ops::{Acquire, Extend, ReadRecord, Release, State, WriteRecord, record_error};

/// Blocking calls wait at most the configured connect timeout plus the response timeout.
impl LockBackend for RedisBackend {
    fn try_acquire(&self, request: AcquireRequest<'_>) -> Result<AcquireOutcome, Error> {
        self.try_acquire_slot(SlotRequest::single(request))
            .map(SlotOutcome::into_acquire)
    }

    /// One script over every slot of the request (their keys share the group's hash tag).
    fn try_acquire_slot(&self, request: SlotRequest<'_>) -> Result<SlotOutcome, Error> {
        self.check_lease(request.request.key, request.request.lease_time)?;
        let requests = [request];
        let op = Acquire::new(
            &requests,
            self.key_prefix(),
            self.events(),
            SystemTime::now(),
        );
        self.run_blocking_one(requests[0].request.key, op)
    }

    /// On a standalone server one script per chunk of up to 100 requests (each answered on
    /// its own), up to 10 scripts pipelined in one round trip: 1,000 requests in one round
    /// trip. On a cluster one `try_acquire` per request, whose keys of different hash tags
    /// cannot meet in one script.
    fn try_acquire_batch(
        &self,
        requests: &[AcquireRequest<'_>],
    ) -> Vec<Result<AcquireOutcome, Error>> {
        let requests: Vec<_> = requests.iter().map(|r| SlotRequest::single(*r)).collect();
        let checked = self.check_leases(&requests, |r| r.request.lease_time, |r| r.request.key);
        let answers = self.run_blocking_batch(
            &checked.valid,
            (Acquire::CHUNK, Acquire::PIPELINED),
            |chunk, now| Acquire::new(chunk, self.key_prefix(), self.events(), now),
            |request| request.request.key,
        );
        checked
            .answers(answers)
            .into_iter()
            .map(|a| a.map(SlotOutcome::into_acquire))
            .collect()
    }

    fn extend(&self, renewal: Renewal<'_>) -> Result<ExtendOutcome, Error> {
        let (lease, lease_time) = (renewal.lease, renewal.lease_time);
        self.check_lease(&lease.key, lease_time)?;
        let renewal = [renewal];
        let op = Extend::new(&renewal, self.key_prefix(), SystemTime::now());
        self.run_blocking_one(&lease.key, op)
    }

    /// On a standalone server, one script per chunk of up to 1,000 leases (each lease
    /// answered on its own), up to 10 scripts pipelined in one round trip: 10,000 leases
    /// renew in one round trip. On a cluster one `extend` per lease.
    fn extend_batch(&self, renewals: &[Renewal<'_>]) -> Vec<Result<ExtendOutcome, Error>> {
        let checked = self.check_leases(renewals, |r| r.lease_time, |r| &r.lease.key);
        let answers = self.run_blocking_batch(
            &checked.valid,
            (Extend::CHUNK, Extend::PIPELINED),
            |chunk, now| Extend::new(chunk, self.key_prefix(), now),
            |renewal| &renewal.lease.key,
        );
        checked.answers(answers)
    }

    fn release(&self, release: ReleaseRequest<'_>) -> Result<ReleaseOutcome, Error> {
        let lease = release.lease;
        let release = [release];
        let op = Release::new(&release, self.key_prefix());
        self.run_blocking_one(&lease.key, op)
            .map(ReleaseOutcome::from)
    }

    /// As `try_acquire_batch`: up to 100 leases per script, 10 scripts per round trip on a
    /// standalone server; one `release` per lease on a cluster.
    fn release_batch(&self, releases: &[ReleaseRequest<'_>]) -> Vec<Result<ReleaseOutcome, Error>> {
        let answers = self.run_blocking_batch(
            releases,
            (Release::CHUNK, Release::PIPELINED),
            |chunk, _now| Release::new(chunk, self.key_prefix()),
            |release| &release.lease.key,
        );
        answers
            .into_iter()
            .map(|a| a.map(ReleaseOutcome::from))
            .collect()
    }

    fn state(&self, key: &LockName) -> Result<LeaderState, Error> {
        self.run_blocking(State {
            key,
            watched: self.events().is_listened(key.as_str()),
            now: SystemTime::now(),
        })
    }

    /// Reads a name's index for a prefix inside its derived names, else pages by `SCAN`
    /// (never `KEYS`); see [`RedisBackend`]'s `# Listing`.
    fn list(&self, request: &ListRequest) -> Result<ListPage, Error> {
        self.list_blocking(request)
    }

    fn force_release(&self, key: &LockName) -> Result<ForceReleaseOutcome, Error> {
        self.run_blocking(ForceRelease {
            key,
            only: None,
            now: SystemTime::now(),
        })
    }

    /// The same script, freeing only a holder with `fencing_token`.
    fn force_release_if(
        &self,
        key: &LockName,
        fencing_token: u64,
    ) -> Result<ForceReleaseOutcome, Error> {
        self.run_blocking(ForceRelease {
            key,
            only: Some(fencing_token),
            now: SystemTime::now(),
        })
    }
    /// One script reads the record's hash, [`RedisBackend::record_key`].
    fn read_record(&self, key: &LockName) -> Result<Option<StoredRecord>, Error> {
        self.run_blocking_raw(ReadRecord { key })
            .map_err(|failure| record_error(key, &self.record_key(key), failure))
    }

    /// One script compares the version and writes the hash; with replica acknowledgement
    /// configured, the write waits for the replicas as an acquire does (`WAIT`), and one
    /// they did not acknowledge is a transient error (it may have landed).
    fn write_record(&self, write: RecordWrite<'_>) -> Result<RecordWriteOutcome, Error> {
        let key = write.key();
        self.run_blocking_raw(WriteRecord { write })
            .and_then(|outcome| outcome)
            .map_err(|failure| record_error(key, &self.record_key(key), failure))
    }

    /// On a standalone server (scripts pipelined in one round trip); not on a cluster,
    /// which renews one lease after the other.
    fn extend_batch_is_native(&self) -> bool {
        !self.is_cluster()
    }
}
