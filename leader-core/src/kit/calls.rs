//! The calls every store makes, each owning what it sends, with their names and trace
//! labels written here once; a backend writes only how each runs
//! ([`Runs`](crate::kit::Runs)).
//!
//! The operator's calls and the records' ([`State`], [`List`], [`ForceRelease`],
//! [`ReadRecord`], [`WriteRecord`]) are always these. The three of the lease's hot path
//! ([`Acquire`], [`Extend`], [`Release`]) are what a backend whose runner moves a call to
//! another thread or runtime plans (with `From`, see [`Store`](crate::kit::Store)); one
//! that sends in place may plan calls that borrow instead.

use std::time::Duration;

use crate::kit::call::Call;
use crate::kit::store::Released;
use crate::name::LockName;
use crate::spi::lease::{Lease, OwnerToken};
use crate::spi::listing::{ForceReleaseOutcome, ListPage, ListRequest};
use crate::spi::outcome::{AcquireOutcome, ExtendOutcome};
use crate::spi::record::{RecordWrite, RecordWriteOutcome, StoredRecord};
use crate::spi::request::{AcquireRequest, ReleaseRequest, Renewal};
use crate::spi::state::LeaderState;

/// Each of a batch's requests as its owned call, in order: what a store plans a batch from
/// when it sends the batch's calls together (one transaction, or at once).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::kit::calls;
/// use leader_core::{AcquireRequest, LockName, OwnerToken};
///
/// let (a, b) = (LockName::new("a")?, LockName::new("b")?);
/// let lease = Duration::from_secs(30);
/// let requests = [
///     AcquireRequest::new(&a, OwnerToken::random(), "node-a", lease),
///     AcquireRequest::new(&b, OwnerToken::random(), "node-a", lease),
/// ];
/// let batch: Vec<calls::Acquire> = calls::each(&requests);
/// assert_eq!(batch[1].key.as_str(), "b");
/// # Ok::<(), leader_core::NameError>(())
/// ```
pub fn each<R: Copy + Into<C>, C>(requests: &[R]) -> Vec<C> {
    requests.iter().map(|request| (*request).into()).collect()
}

/// `try_acquire`: an [`AcquireRequest`] that owns its data.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_core::kit::calls;
/// use leader_core::{AcquireRequest, LockName, OwnerToken};
///
/// let key = LockName::new("nightly")?;
/// let request = AcquireRequest::new(&key, OwnerToken::random(), "node-a", Duration::from_secs(30));
/// let call = calls::Acquire::from(request);
/// assert_eq!(call.key.as_str(), "nightly");
/// assert_eq!(call.leader_id, "node-a");
/// # Ok::<(), leader_core::NameError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Acquire {
    /// The full lock key.
    pub key: LockName,
    /// The acquisition's owner token.
    pub owner: OwnerToken,
    /// The node id recorded as leader.
    pub leader_id: String,
    /// How long the lease lasts.
    pub lease_time: Duration,
}

impl From<AcquireRequest<'_>> for Acquire {
    fn from(request: AcquireRequest<'_>) -> Self {
        Acquire {
            key: request.key.clone(),
            owner: request.owner,
            leader_id: request.leader_id.to_owned(),
            lease_time: request.lease_time,
        }
    }
}

impl Call for Acquire {
    type Output = AcquireOutcome;
    const NAME: &'static str = "acquire";
    fn outcome(output: &AcquireOutcome) -> &'static str {
        output.as_str()
    }
}

/// `extend`: a [`Renewal`] that owns its lease.
#[derive(Debug, Clone)]
pub struct Extend {
    /// The lease to renew.
    pub lease: Lease,
    /// How long from now it is to last.
    pub lease_time: Duration,
}

impl From<Renewal<'_>> for Extend {
    fn from(renewal: Renewal<'_>) -> Self {
        Extend {
            lease: renewal.lease.clone(),
            lease_time: renewal.lease_time,
        }
    }
}

impl Call for Extend {
    type Output = ExtendOutcome;
    const NAME: &'static str = "extend";
    fn outcome(output: &ExtendOutcome) -> &'static str {
        output.as_str()
    }
}

/// `release`: a [`ReleaseRequest`] that owns its lease.
#[derive(Debug, Clone)]
pub struct Release {
    /// The lease to end.
    pub lease: Lease,
    /// How long after its acquisition the lock stays taken, whatever the release.
    pub min_lease_time: Duration,
}

impl From<ReleaseRequest<'_>> for Release {
    fn from(release: ReleaseRequest<'_>) -> Self {
        Release {
            lease: release.lease.clone(),
            min_lease_time: release.min_lease_time,
        }
    }
}

impl Call for Release {
    type Output = Released;
    const NAME: &'static str = "release";
    fn outcome(output: &Released) -> &'static str {
        output.as_str()
    }
}

/// `state`.
#[derive(Debug, Clone)]
pub struct State {
    /// The lock.
    pub key: LockName,
}

impl From<&LockName> for State {
    fn from(key: &LockName) -> Self {
        State { key: key.clone() }
    }
}

impl Call for State {
    type Output = LeaderState;
    const NAME: &'static str = "state";
    fn outcome(output: &LeaderState) -> &'static str {
        match output.leader() {
            Some(_) => "occupied",
            None => "empty",
        }
    }
}

/// `list`: one page.
#[derive(Debug, Clone)]
pub struct List {
    /// The prefix, the page size and where the page starts.
    pub request: ListRequest,
}

impl From<&ListRequest> for List {
    fn from(request: &ListRequest) -> Self {
        List {
            request: request.clone(),
        }
    }
}

impl Call for List {
    type Output = ListPage;
    const NAME: &'static str = "list";
    fn outcome(output: &ListPage) -> &'static str {
        match output.next {
            Some(_) => "page",
            None => "last_page",
        }
    }
}

/// `force_release` (`only` `None`) and `force_release_if` (`only`: the holder's fencing
/// token the release is for).
#[derive(Debug, Clone)]
pub struct ForceRelease {
    /// The lock.
    pub key: LockName,
    /// Free it only while its holder is the acquisition with this fencing token.
    pub only: Option<u64>,
}

impl ForceRelease {
    /// Frees `key` whoever holds it (`only` `None`), or only while its holder is the
    /// acquisition with that fencing token.
    pub fn new(key: &LockName, only: Option<u64>) -> Self {
        ForceRelease {
            key: key.clone(),
            only,
        }
    }
}

impl Call for ForceRelease {
    type Output = ForceReleaseOutcome;
    const NAME: &'static str = "force_release";
    fn outcome(output: &ForceReleaseOutcome) -> &'static str {
        output.as_str()
    }
}

/// `read_record`.
#[derive(Debug, Clone)]
pub struct ReadRecord {
    /// The record's name.
    pub key: LockName,
}

impl From<&LockName> for ReadRecord {
    fn from(key: &LockName) -> Self {
        ReadRecord { key: key.clone() }
    }
}

impl Call for ReadRecord {
    type Output = Option<StoredRecord>;
    const NAME: &'static str = "read_record";
    fn outcome(output: &Option<StoredRecord>) -> &'static str {
        match output {
            Some(_) => "found",
            None => "none",
        }
    }
}

/// `write_record`: a [`RecordWrite`] that owns its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRecord {
    /// The record's name.
    pub key: LockName,
    /// The version the write expects to find (`None`: no record).
    pub expected: Option<u64>,
    /// The new value.
    pub value: String,
}

impl WriteRecord {
    /// The version the record has once this write lands.
    pub fn next_version(&self) -> u64 {
        self.expected.map_or(1, |v| v.saturating_add(1))
    }
}

impl From<RecordWrite<'_>> for WriteRecord {
    fn from(write: RecordWrite<'_>) -> Self {
        WriteRecord {
            key: write.key().clone(),
            expected: write.expected(),
            value: write.value().to_owned(),
        }
    }
}

impl Call for WriteRecord {
    type Output = RecordWriteOutcome;
    const NAME: &'static str = "write_record";
    fn outcome(output: &RecordWriteOutcome) -> &'static str {
        output.as_str()
    }
}
