//! List cursors bound to the listing they continue: the kind of backend that made them and
//! the prefix they were made for, so that a cursor passed to another backend, or with
//! another prefix, or garbled on the way, is refused instead of silently starting a page
//! somewhere else.

use crate::spi::listing::{ListCursor, ListRequest};

/// Why a backend refused a list cursor: it did not make it for this listing.
///
/// Backends report it as a permanent [`Error::Backend`](crate::Error::Backend) naming the
/// prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the list cursor {shown:?} was not made by this {backend} backend for the prefix {prefix:?}"
)]
pub struct CursorError {
    backend: &'static str,
    prefix: String,
    shown: String,
}

impl CursorError {
    /// The backend that refused it.
    pub fn backend(&self) -> &'static str {
        self.backend
    }
}

/// At most this many characters of a refused cursor are shown in the error.
const SHOWN: usize = 64;

/// 64-bit FNV-1a: a fingerprint of the prefix that stays the same across builds and
/// platforms (cursors may be kept by one process and passed back by another). It guards
/// against mistakes, not forgery: cursors are not secret.
fn fingerprint(prefix: &str) -> u64 {
    prefix.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl ListCursor {
    /// The cursor of the page of `request`'s listing that resumes at `position`, for
    /// backend authors: `position` is the backend's own (a name, a scan cursor), tagged
    /// with `backend` (its [`name`](crate::Backend::name)) and a fingerprint of the
    /// request's prefix, as `<backend>:<16 hex digits>:<position>`.
    ///
    /// # Examples
    ///
    /// ```
    /// use leader_core::{ListCursor, ListRequest};
    ///
    /// let request = ListRequest::new("tenant:acme:");
    /// let cursor = ListCursor::tagged("sqlite", &request, "tenant:acme:sync");
    /// let next = request.clone().after(cursor.clone());
    /// assert_eq!(ListCursor::resume("sqlite", &next)?, Some("tenant:acme:sync"));
    ///
    /// // Another backend's, another prefix's or a garbled cursor is refused.
    /// assert!(ListCursor::resume("postgres", &next).is_err());
    /// assert!(ListCursor::resume("sqlite", &ListRequest::new("tenant:globex:").after(cursor)).is_err());
    /// assert!(ListCursor::resume("sqlite", &request.after(ListCursor::new("garbled"))).is_err());
    /// # Ok::<(), leader_core::CursorError>(())
    /// ```
    pub fn tagged(backend: &str, request: &ListRequest, position: &str) -> ListCursor {
        let fingerprint = fingerprint(&request.prefix);
        ListCursor::new(format!("{backend}:{fingerprint:016x}:{position}"))
    }

    /// Where `request`'s listing resumes: `None` on the first page (no cursor), else the
    /// position a [`tagged`](Self::tagged) cursor of `backend` for the request's prefix
    /// holds.
    ///
    /// # Errors
    ///
    /// [`CursorError`] when the request's cursor was made by another kind of backend, for
    /// another prefix, or is not one at all.
    pub fn resume<'a>(
        backend: &'static str,
        request: &'a ListRequest,
    ) -> Result<Option<&'a str>, CursorError> {
        let Some(cursor) = &request.cursor else {
            return Ok(None);
        };
        let text = cursor.as_str();
        let expected = format!("{:016x}", fingerprint(&request.prefix));
        text.strip_prefix(backend)
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|rest| rest.strip_prefix(expected.as_str()))
            .and_then(|rest| rest.strip_prefix(':'))
            .map(Some)
            .ok_or_else(|| CursorError {
                backend,
                prefix: request.prefix.chars().take(SHOWN).collect(),
                shown: text.chars().take(SHOWN).collect(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resume<'a>(backend: &'static str, request: &'a ListRequest) -> Option<&'a str> {
        ListCursor::resume(backend, request).ok().flatten()
    }

    #[test]
    fn a_tagged_cursor_resumes_its_own_listing_only() {
        let request = ListRequest::new("job:");
        assert_eq!(ListCursor::resume("redis", &request), Ok(None));
        for position in ["job:7", "", "0:1234", "job:a:b:c", "job:é\u{10FFFF}"] {
            let cursor = ListCursor::tagged("redis", &request, position);
            let next = request.clone().after(cursor.clone());
            assert_eq!(resume("redis", &next), Some(position));
            assert!(ListCursor::resume("sqlite", &next).is_err());
            assert!(ListCursor::resume("redi", &next).is_err());
            let other = ListRequest::new("job;").after(cursor.clone());
            assert!(ListCursor::resume("redis", &other).is_err());
            let all = ListRequest::new("").after(cursor);
            assert!(ListCursor::resume("redis", &all).is_err());
        }
    }

    #[test]
    fn garbled_cursors_are_refused_and_shown_cut_short() {
        let request = ListRequest::new("job:");
        let good = ListCursor::tagged("memory", &request, "job:1");
        let text = good.as_str();
        for garbled in [
            String::new(),
            "memory".to_owned(),
            "memory:".to_owned(),
            "memory:123:job:1".to_owned(),
            text.replacen("memory", "memorz", 1),
            text[..text.len() - 7].to_owned(),
            "x".repeat(10_000),
        ] {
            let request = request.clone().after(ListCursor::new(garbled.clone()));
            let err = ListCursor::resume("memory", &request).unwrap_err();
            assert_eq!(err.backend(), "memory");
            assert!(err.to_string().len() < 300, "{err}");
            if garbled.len() < SHOWN {
                assert!(err.to_string().contains(&format!("{garbled:?}")), "{err}");
            }
        }
    }

    #[test]
    fn the_fingerprint_is_fnv_1a() {
        // The published FNV-1a test vectors: the fingerprint must not change between builds.
        assert_eq!(fingerprint(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fingerprint("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fingerprint("foobar"), 0x8594_4171_f739_67e8);
    }
}
