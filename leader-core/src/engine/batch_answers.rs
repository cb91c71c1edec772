//! Pairing a batch call's answers with the locks it was asked about, and grouping a batch's
//! items by the backend value that must answer them; shared by the blocking and the async
//! electors.

use std::sync::Arc;

use crate::error::{BackendError, BackendErrorKind, Error};
use crate::name::LockName;

/// The error of a lock a batch call (acquire, extend or release) on `backend` gave no
/// answer for: the backend answered fewer locks than it was asked about.
pub fn unanswered(backend: &'static str, key: &LockName) -> Error {
    BackendError::new(
        backend,
        key.as_str(),
        BackendErrorKind::Permanent,
        "the backend's batch call gave fewer answers than locks",
    )
    .into()
}

/// One answer per key of a batch call on `backend`, in the keys' order: `answers` as the
/// backend gave them, then [`unanswered`] for each key past their end.
///
/// # Examples
///
/// ```
/// use leader_core::__private::answers_in_order;
/// use leader_core::LockName;
///
/// let keys = [LockName::new("a")?, LockName::new("b")?];
/// let answers: Vec<Result<u8, leader_core::Error>> = vec![Ok(1)];
/// let paired: Vec<_> = answers_in_order("memory", &keys, answers).collect();
/// assert!(matches!(paired.as_slice(), [Ok(1), Err(_)]));
/// # Ok::<(), leader_core::NameError>(())
/// ```
pub fn answers_in_order<'k, T>(
    backend: &'static str,
    keys: impl IntoIterator<Item = &'k LockName>,
    answers: Vec<Result<T, Error>>,
) -> impl Iterator<Item = Result<T, Error>> {
    let mut answers = answers.into_iter();
    keys.into_iter().map(move |key| {
        answers
            .next()
            .unwrap_or_else(|| Err(unanswered(backend, key)))
    })
}

/// `items` grouped by the backend value each belongs to (`Arc` identity, not equality), the
/// groups in the order of their first item, each group's items in their order: one batch
/// call per group.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use leader_core::__private::by_backend;
///
/// let (a, b) = (Arc::new(()), Arc::new(()));
/// let items = vec![(1, a.clone()), (2, b.clone()), (3, a.clone())];
/// let groups = by_backend(items, |item| &item.1);
/// let numbers: Vec<Vec<i32>> = groups
///     .iter()
///     .map(|(_, group)| group.iter().map(|item| item.0).collect())
///     .collect();
/// assert_eq!(numbers, [vec![1, 3], vec![2]]);
/// assert!(Arc::ptr_eq(&groups[0].0, &a));
/// ```
pub fn by_backend<T, B: ?Sized>(
    mut items: Vec<T>,
    backend: impl Fn(&T) -> &Arc<B>,
) -> Vec<(Arc<B>, Vec<T>)> {
    let mut groups = Vec::new();
    while let Some(first) = items.first() {
        let value = Arc::clone(backend(first));
        let (group, rest): (Vec<_>, Vec<_>) = items
            .into_iter()
            .partition(|item| Arc::ptr_eq(backend(item), &value));
        items = rest;
        groups.push((value, group));
    }
    groups
}
