//! [`Items`]: what one script call is about, one item planned by value (a single lock's
//! call) or a chunk of a batch borrowed from its caller.

use std::ops::Deref;

/// The items of one op, never none: an op names its first item's lock.
#[derive(Debug)]
pub(crate) enum Items<'a, T> {
    /// A single lock's call, planned from its request.
    One(T),
    /// A chunk of a batch.
    Chunk {
        /// `all`'s first item.
        first: &'a T,
        all: &'a [T],
    },
}

impl<'a, T> Items<'a, T> {
    /// The chunk `all`; `None` when it is empty.
    pub(crate) fn chunk(all: &'a [T]) -> Option<Self> {
        Some(Items::Chunk {
            first: all.first()?,
            all,
        })
    }

    /// The first item.
    pub(crate) fn first(&self) -> &T {
        match self {
            Items::One(one) => one,
            Items::Chunk { first, .. } => first,
        }
    }
}

impl<T> Deref for Items<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Items::One(one) => std::slice::from_ref(one),
            Items::Chunk { all, .. } => all,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_and_a_chunk_read_alike_and_an_empty_chunk_is_none() {
        let one = Items::One(7u8);
        assert_eq!((&*one, *one.first()), (&[7u8][..], 7));
        let all = [1u8, 2, 3];
        let chunk = Items::chunk(&all).unwrap();
        assert_eq!((&*chunk, *chunk.first()), (&all[..], 1));
        assert!(Items::<u8>::chunk(&[]).is_none());
    }
}
