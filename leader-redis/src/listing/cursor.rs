//! The opaque cursor of a listing: where the scan resumes.
//!
//! On one server it is the `SCAN` cursor (`"1234"`); on a cluster, the index of the master
//! in the listing's order and that master's `SCAN` cursor (`"1:1234"`).

use leader_core::ListCursor;

use crate::error::Failure;

/// A scan position: which master (always 0 on one server) and its `SCAN` cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Position {
    /// The master's index, in the order of [`masters`](super::masters).
    pub(crate) node: usize,
    /// The `SCAN` cursor on that master.
    pub(crate) cursor: u64,
}

/// The cursor of the page that starts at `at`.
pub(crate) fn encode(at: Position, cluster: bool) -> ListCursor {
    if cluster {
        ListCursor::new(format!("{}:{}", at.node, at.cursor))
    } else {
        ListCursor::new(at.cursor.to_string())
    }
}

/// Where a listing resumes: the start without a cursor, or the position `cursor` encodes.
///
/// # Errors
///
/// [`Failure::BadCursor`] for a cursor this kind of backend (one server or a cluster) did
/// not make.
pub(crate) fn decode(cursor: Option<&ListCursor>, cluster: bool) -> Result<Position, Failure> {
    let Some(cursor) = cursor else {
        return Ok(Position::default());
    };
    let text = cursor.as_str();
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
    position.ok_or_else(|| Failure::BadCursor {
        cursor: text.chars().take(64).collect(),
    })
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

    #[test]
    fn cursors_round_trip() {
        let at = Position {
            node: 2,
            cursor: 1234,
        };
        assert_eq!(encode(at, true).as_str(), "2:1234");
        assert_eq!(decode(Some(&encode(at, true)), true).unwrap(), at);
        let single = Position {
            node: 0,
            cursor: 77,
        };
        assert_eq!(encode(single, false).as_str(), "77");
        assert_eq!(decode(Some(&encode(single, false)), false).unwrap(), single);
        assert_eq!(decode(None, true).unwrap(), Position::default());
    }

    #[test]
    fn foreign_cursors_are_a_typed_error() {
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
            let err = decode(Some(&ListCursor::new(text)), cluster).unwrap_err();
            assert!(matches!(err, Failure::BadCursor { .. }), "{text:?}: {err}");
        }
    }
}
