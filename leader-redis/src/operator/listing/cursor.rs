//! The opaque cursor of a listing: where the scan resumes.
//!
//! On one server its position is the `SCAN` cursor (`"1234"`); on a cluster, the index of
//! the master in the listing's order and that master's `SCAN` cursor (`"1:1234"`). The
//! position is tagged with the backend and the listing's prefix (`ListCursor::tagged`):
//! a `SCAN` cursor would resume any pattern's scan, so one of another prefix's listing
//! must be refused, not silently skip part of this one.

use leader_core::{ListCursor, ListRequest};

use crate::error::{BACKEND, OpError};

/// A scan position: which master (always 0 on one server) and its `SCAN` cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Position {
    /// The master's index, in the order of [`masters`](super::masters).
    pub(crate) node: usize,
    /// The `SCAN` cursor on that master.
    pub(crate) cursor: u64,
}

/// The cursor of the page of `request`'s listing that starts at `at`.
pub(crate) fn encode(at: Position, cluster: bool, request: &ListRequest) -> ListCursor {
    let position = if cluster {
        format!("{}:{}", at.node, at.cursor)
    } else {
        at.cursor.to_string()
    };
    ListCursor::tagged(BACKEND, request, &position)
}

/// Where `request`'s listing resumes: the start without a cursor, or the position its
/// cursor encodes.
///
/// # Errors
///
/// [`OpError::BadCursor`] for a cursor this kind of backend (one server or a cluster) did
/// not make for this prefix.
pub(crate) fn decode(request: &ListRequest, cluster: bool) -> Result<Position, OpError> {
    let bad = || OpError::BadCursor {
        cursor: request
            .cursor
            .as_ref()
            .map(|cursor| cursor.as_str().chars().take(64).collect())
            .unwrap_or_default(),
    };
    let Some(text) = ListCursor::resume(BACKEND, request).map_err(|_| bad())? else {
        return Ok(Position::default());
    };
    let position = if cluster {
        text.split_once(':').and_then(|(node, at)| {
            Some(Position {
                node: number(node)?,
                cursor: number(at)?,
            })
        })
    } else {
        number(text).map(|cursor| Position { node: 0, cursor })
    };
    position.ok_or_else(bad)
}

/// Decimal digits only (no sign, no spaces), within the type's range.
fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(cursor: ListCursor) -> ListRequest {
        ListRequest::new("job:").after(cursor)
    }

    #[test]
    fn cursors_round_trip() {
        let request = ListRequest::new("job:");
        let at = Position {
            node: 2,
            cursor: 1234,
        };
        let cursor = encode(at, true, &request);
        assert!(cursor.as_str().starts_with("redis:"), "{cursor:?}");
        assert!(cursor.as_str().ends_with(":2:1234"), "{cursor:?}");
        assert_eq!(decode(&after(cursor), true).unwrap(), at);
        let single = Position {
            node: 0,
            cursor: 77,
        };
        let cursor = encode(single, false, &request);
        assert!(cursor.as_str().ends_with(":77"), "{cursor:?}");
        assert_eq!(decode(&after(cursor), false).unwrap(), single);
        assert_eq!(decode(&request, true).unwrap(), Position::default());
    }

    #[test]
    fn a_cursor_of_another_prefix_is_a_typed_error() {
        let at = Position { node: 0, cursor: 7 };
        let other = encode(at, false, &ListRequest::new("jobs:"));
        let err = decode(&after(other), false).unwrap_err();
        assert!(matches!(err, OpError::BadCursor { .. }), "{err}");
        let untagged = after(ListCursor::new("7"));
        assert!(matches!(
            decode(&untagged, false),
            Err(OpError::BadCursor { .. })
        ));
    }

    #[test]
    fn foreign_cursors_are_a_typed_error() {
        let request = ListRequest::new("job:");
        for (text, cluster) in [
            ("", false),
            ("1:2", false),
            ("-3", false),
            ("+3", false),
            ("18446744073709551616", false),
            ("12", true),
            ("a:1", true),
            ("1:", true),
            ("1:2:3", true),
            ("tenant:acme", true),
        ] {
            let cursor = ListCursor::tagged(BACKEND, &request, text);
            let err = decode(&after(cursor), cluster).unwrap_err();
            assert!(matches!(err, OpError::BadCursor { .. }), "{text:?}: {err}");
        }
    }
}
